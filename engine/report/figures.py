"""Every figure of the report, as files a paper can use, and inline in the HTML page.

`paper_figures(doc)` yields the figures of a metrics document (`engine.metrics.document`, with the
optional ``predictor`` and ``checkpoints`` parts the report reads) in the report's order; each has a
stable name, made from what it shows, never from its position:

Which figures a chain or a (model, dataset) gets is what the registered metrics declare (`Metric.figures`, kinds
registered here in `FIGURES`), in their registration order:

- per chain: ``accuracy--MODEL--DATASET--PROTOCOL`` (accuracy per budget with its confidence band and
  the oracle), ``transitions--...`` (items rescued and harmed per step), ``flows--...`` (item states
  across the grid), ``trajectories--...`` (the most frequent right/wrong patterns), ``cascade--...``
  (the confidence cascade's thresholds and the fixed budgets, with the Pareto front over both; left out
  when the rows carry no confidence);
- per model and dataset: ``robustness--MODEL--DATASET`` (confused and harmed items shared by two
  chains), ``iso-compute--MODEL--DATASET--pxCOST`` (allocations at about the same pixels sent);
- ``predictor--PREDICTOR--MODEL--DATASET``; from the checkpoint study: ``temporal-trap`` (video gain vs
  image loss per checkpoint) and ``train-frames`` (gain and loss against train frames).

A part of a name that is not plain (``/``, spaces, ...) is made plain and followed by a short hash of
the original, so two models never share a file. `write_figures` writes one file per figure; a
figure with nothing to draw is not written. Nothing here computes a metric.
"""

from __future__ import annotations

import hashlib
import io
import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from engine import __version__
from engine.metrics.registry import registered_metrics
from engine.registry import Registry
from engine.report.chains import accuracy_figure, cascade_figure, flow_figure, trajectories_figure, transitions_figure
from engine.report.studies import iso_figure, predictor_figure, robustness_figure, train_frames_figure, trap_figure
from engine.report.style import DPI, paper_style
from engine.runtime.atomic import atomic_write

__all__ = ["FIGURES", "FIGURE_FORMATS", "PaperFigure", "across_figures", "chain_figures", "checkpoint_figures", "figure_name",
           "inline_svg", "paper_figures", "predictor_figures", "register_figure", "write_figures"]

log = logging.getLogger(__name__)

FIGURE_FORMATS = ("pdf", "png", "svg")
"""The file formats `write_figures` writes."""
SCREEN_SCALE = 1.8
"""Inline SVGs are drawn this many CSS pixels per point (a 3.4 in column figure is about 440 px wide)."""


@dataclass(frozen=True)
class PaperFigure:
    """One figure: its stable file name, its id in the HTML report, a one-line caption and the drawing."""

    name: str
    html_id: str
    caption: str
    figure: Figure


def _plain(part: object) -> str:
    text = str(part)
    plain = re.sub(r"[^A-Za-z0-9._+-]+", "_", text).strip("._") or "_"
    return plain if plain == text else f"{plain}-{hashlib.sha256(text.encode()).hexdigest()[:6]}"


def figure_name(kind: str, *parts: object) -> str:
    """The stable file stem of a figure: its kind, then what it shows (`_plain` parts), joined by ``--``."""
    return "--".join([kind, *(_plain(p) for p in parts)])


def _made(kind: str, parts: tuple[object, ...], html_id: str, caption: str,
          draw: Callable[[], Figure | None]) -> Iterator[PaperFigure]:
    with paper_style():
        fig = draw()
    if fig is not None:
        yield PaperFigure(figure_name(kind, *parts), html_id, caption, fig)


ChainDraw = Callable[[dict[str, Any], int, float], Iterator[PaperFigure]]
"""A chain's figure kind: (its group of the document, the group's index, the interval level) -> its figures."""
AcrossDraw = Callable[[dict[str, Any], tuple[str, str], int], Iterator[PaperFigure]]
"""A (model, dataset) figure kind: (the document, the key, its index) -> its figures."""

FIGURES: Registry[Callable[..., Iterator[PaperFigure]]] = Registry("figure kind")
"""The paper figures by kind; a metric names those drawn from its entry (`Metric.figures`): a group metric's are
`ChainDraw`s, a dataset metric's `AcrossDraw`s."""


def register_figure(kind: str, draw: Callable[..., Iterator[PaperFigure]]) -> None:
    """Register a figure kind that metrics can name in `Metric.figures` (a kind registered twice is an error)."""
    FIGURES.register(kind, draw)


def _chain_key(g: dict[str, Any]) -> tuple[str, str, str]:
    return g["model_id"], g["dataset"], g.get("protocol_id", "default")


def _chain_kind(kind: str, html: str, caption: str, draw: Callable[[dict[str, Any], float], Figure | None]) -> None:
    register_figure(kind, lambda g, idx, level: _made(kind, _chain_key(g), f"fig-{html}-{idx}", caption,
                                                      partial(draw, g, level)))


_chain_kind("accuracy", "accuracy", "Accuracy per budget with its confidence band; dashed: the per-item oracle",
            accuracy_figure)
_chain_kind("transitions", "transitions", "Items rescued and harmed at each step", lambda g, _: transitions_figure(g))
_chain_kind("flows", "flow", "Item states across the grid", lambda g, _: flow_figure(g))
_chain_kind("trajectories", "trajectories", "Right/wrong patterns along the chain", lambda g, _: trajectories_figure(g))
_chain_kind("cascade", "cascade", "Confidence cascade: accuracy against frames per threshold and the fixed budgets, "
            "with the Pareto front over both", lambda g, _: cascade_figure(g))


def chain_figures(g: dict[str, Any], idx: int, level: float = 0.95) -> Iterator[PaperFigure]:
    """The figures of one chain (group `idx` of the document) that the group metrics declare, in their
    registration order, those with something to draw."""
    for metric in registered_metrics("group"):
        for kind in metric.figures:
            yield from FIGURES.get(kind)(g, idx, level)


def _mine(rows: list[dict[str, Any]], key: tuple[str, str]) -> list[dict[str, Any]]:
    return [r for r in rows if (r["model_id"], r["dataset"]) == key]


def _robustness(doc: dict[str, Any], key: tuple[str, str], k: int) -> Iterator[PaperFigure]:
    yield from _made("robustness", key, f"fig-robustness-{k}", "Confused and harmed items shared by two chains",
                     lambda: robustness_figure(_mine(doc.get("robustness") or [], key), *key))


def _iso(doc: dict[str, Any], key: tuple[str, str], k: int) -> Iterator[PaperFigure]:
    for j, s in enumerate(_mine(doc.get("iso_compute") or [], key)):
        yield from _made("iso-compute", (*key, f"px{s['cost']:.0f}"), f"fig-iso-{k}-{j}",
                         "Allocations at about the same pixels sent", partial(iso_figure, s))


register_figure("robustness", _robustness)
register_figure("iso-compute", _iso)


def across_figures(doc: dict[str, Any], key: tuple[str, str], k: int) -> Iterator[PaperFigure]:
    """The figures of one (model, dataset) (the k-th of the document) that the dataset metrics declare."""
    for metric in registered_metrics("dataset"):
        for kind in metric.figures:
            yield from FIGURES.get(kind)(doc, key, k)


def predictor_figures(doc: dict[str, Any]) -> Iterator[PaperFigure]:
    """The hybrid-frame predictor's figure per evaluated group (``doc["predictor"]``)."""
    for i, g in enumerate(doc.get("predictor") or []):
        yield from _made("predictor", (g["predictor_id"], g["model_id"], g["dataset"]), f"fig-predictor-{i}",
                         "Predictor against fixed budgets and the oracle", partial(predictor_figure, g))


def checkpoint_figures(c: dict[str, Any]) -> Iterator[PaperFigure]:
    """The checkpoint study's figures (a `engine.metrics.checkpoints` document)."""
    yield from _made("temporal-trap", (), "fig-trap", "Video gain per evaluated frame count (solid) vs image gain "
                     "(dashed) per checkpoint, official scores against the base",
                     lambda: trap_figure(c))
    yield from _made("train-frames", (), "fig-train-frames", "Video gain (circles) and image loss (squares) "
                     "against the frames each checkpoint was trained on",
                     lambda: train_frames_figure(c))


def paper_figures(doc: dict[str, Any]) -> Iterator[PaperFigure]:
    """Every figure of the document, in the report's order (each drawn only when reached)."""
    level = float((doc.get("options") or {}).get("level") or 0.95)
    groups = doc.get("groups") or []
    for idx, g in enumerate(groups):
        yield from chain_figures(g, idx, level)
    for k, key in enumerate(dict.fromkeys((g["model_id"], g["dataset"]) for g in groups)):
        yield from across_figures(doc, key, k)
    yield from predictor_figures(doc)
    if doc.get("checkpoints"):
        yield from checkpoint_figures(doc["checkpoints"])


def _save(fig: Figure, fmt: str, dpi: int = DPI) -> bytes:
    meta: dict[str, dict[str, Any]] = {
        "pdf": {"Creator": f"framesweep {__version__}", "Producer": None, "CreationDate": None},
        "png": {"Software": f"framesweep {__version__}"},
        "svg": {"Creator": None, "Date": None, "Format": None, "Type": None},
    }
    buf = io.BytesIO()
    with paper_style():
        fig.savefig(buf, format=fmt, dpi=dpi, metadata=meta[fmt])
    return buf.getvalue()


def write_figures(doc: dict[str, Any], to: Path | str, fmt: str = "pdf", dpi: int = DPI) -> list[Path]:
    """Write every figure of `doc` to the folder `to` as ``<name>.<fmt>`` (atomically, one by one).

    Raises:
        ValueError: `fmt` is not one of `FIGURE_FORMATS`.
    """
    if fmt not in FIGURE_FORMATS:
        raise ValueError(f"figure format {fmt!r}: use one of {', '.join(FIGURE_FORMATS)}")
    out = Path(to)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for pf in paper_figures(doc):
        path = out / f"{pf.name}.{fmt}"
        atomic_write(path, _save(pf.figure, fmt, dpi))
        written.append(path)
    log.info("wrote %d figures to %s", len(written), out)
    return written


_ID = re.compile(r'\bid="([^"]+)"')


def inline_svg(pf: PaperFigure) -> str:
    """The figure as an ``<svg id=html_id>`` element for an HTML page: no XML prologue, every internal id
    prefixed with the figure's (ids stay unique across figures), references only inside the element."""
    text = _save(pf.figure, "svg").decode("utf-8")
    text = text[text.index("<svg"):]
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.DOTALL)
    text = text.replace(' xmlns:xlink="http://www.w3.org/1999/xlink"', "").replace("xlink:href=", "href=")
    ids = set(_ID.findall(text))
    pre = pf.html_id

    def ref(m: re.Match[str]) -> str:
        name = m.group(2)
        return f"{m.group(1)}{pre}-{name}" if name in ids else m.group(0)

    text = _ID.sub(lambda m: f'id="{pre}-{m.group(1)}"', text)
    text = re.sub(r'(href="#|url\(#)([^")]+)', ref, text)
    text = text.replace("<style type=\"text/css\">*{", f'<style type="text/css">#{pre} *{{')

    def size(m: re.Match[str]) -> str:
        return f'{m.group(1)}="{float(m.group(2)) * SCREEN_SCALE:.0f}"'

    head, rest = text.split(">", 1)
    head = re.sub(r'(width|height)="([\d.]+)pt"', size, head)
    head = head.replace("<svg", f'<svg id="{pre}" role="img" aria-label="{_attr(pf.caption)}"', 1)
    return f"{head}>{rest}"


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
