"""One self-contained HTML report of a results dataset, its figures inline SVG.

Nothing is fetched and nothing runs: no scripts, no external fonts or styles, so the file reads
the same offline. The figures are those `framesweep figures` writes as files
(`engine.report.figures`, drawn with matplotlib), each captioned with its file name. First the run
(``doc["run"]``, `engine.report.run_info`: spec, models and their hashes, versions, dates). Then per
(model, dataset, protocol) chain, the primary chain of each model and dataset first: the headline
table, then the section of every registered group metric (`engine.metrics.registry.Metric.report`,
blocks of `engine.metrics.sections` rendered by `engine.report.html.blocks`), in registration
order: the accuracy curve with its confidence band and the oracle (``fig-accuracy-N``), rescue and
harm per transition (``fig-transitions-N``) and the flow of item states (``fig-flow-N``),
per-category tables (``table-<column>-N``), the cascade's accuracy-cost front
(``fig-cascade-N``, only where the rows carry confidences and the chain has two visual stages),
the letter prior, the low-level statistics (``table-low-level-N``), each benchmark's official scores
(``table-official-N``) and the trajectories (``fig-trajectories-N``). After the chains of a
model and dataset: the sections of the registered dataset metrics for it, robustness across its
chains (``table-robustness-N``, ``fig-robustness-N``) and its iso-compute sets (``table-iso-N-K``,
``fig-iso-N-K``). After every model, per dataset with two models or more: the models on their matched grid
(``table-cross-model-N-K``) and, with a compare pair, the rescue and harm from one to the other
(``table-checkpoint-flows-N``). A figure is drawn here as `framesweep figures` writes it; a section without data
is left out.
Built from the metrics document of `engine.metrics.document` (schema
``framesweep.metrics/2``; a document of another schema is refused). Optional sections, shown
when the document carries them: ``doc["predictor"]`` (groups of
`engine.metrics.predictor.predictor_document`: ``table-predictor-N``,
``fig-predictor-N``, ``table-predictor-confusion-N``) and ``doc["checkpoints"]``
(`engine.metrics.checkpoints.checkpoint_document`, laid out by `engine.report.checkpoint_section` with
the figures of `engine.report.figures`: on official scores ``table-temporal-trap``, ``fig-trap``, ``table-train-frames``,
``fig-train-frames``, ``table-headlines``, ``table-benchmark-scores``, ``table-category-deltas``;
per question ``table-temporal-trap-per-question``, ``table-train-frames-per-question``,
``table-checkpoint-datasets``, ``table-checkpoints``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from engine.metrics.document import SCHEMA
from engine.metrics.registry import registered_metrics
from engine.report.cells import points
from engine.report.checkpoint_section import checkpoint_section
from engine.report.figures import (
    PaperFigure,
    across_figures,
    chain_figures,
    checkpoint_figures,
    inline_svg,
    predictor_figures,
)
from engine.report.html import CSS, blocks, e, table
from engine.report.labels import pixels, protocol_label
from engine.report.run_info import run_section
from engine.runtime.atomic import atomic_write
from engine.runtime.secrets import redact

__all__ = ["render_report", "write_report"]

log = logging.getLogger(__name__)

def _headline(g: dict[str, Any]) -> str:
    """The chain's headline table: its items, then every registered metric's headline rows (`Metric.headline`)."""
    rows: list[list[object]] = [["matched items", g["n_items"]], ["excluded (missing a budget)", g["n_excluded"]]]
    rows += [[label, cell] for m in registered_metrics("group") if m.headline for label, cell in m.headline(g).rows]
    return table("", ["metric (points, 95% CI)", "value"], rows)


def _protocol_note(g: dict[str, Any]) -> str:
    p = g.get("protocol") or {}
    size = (f"max {pixels(p['max_pixels'])} px" if p.get("max_pixels") else
            f"exactly {pixels(p['exact_pixels'])} px" if p.get("exact_pixels") else
            f"short side {p['short_side']}" if p.get("short_side") else "decoded size")
    what = (f"{size}, {p.get('policy', 'uniform')} sampling (seed {p.get('seed', 0)}), "
            f"{p.get('pipeline', 'raw')} pipeline")
    return f'<p class="note">chain: {e(" < ".join(g["grid"]))}; protocol: {e(what)}</p>'


def _figure(pf: PaperFigure) -> str:
    return f'<figure>{inline_svg(pf)}<figcaption class="note">{e(pf.caption)}; file {e(pf.name)}</figcaption></figure>'


def _group_section(g: dict[str, Any], idx: int, level: float) -> str:
    """A chain's headline table, then every registered group metric's section in registration order."""
    pid = g.get("protocol_id", "default")
    chain = f"{protocol_label(pid)} (chain {pid}{', primary' if g.get('primary') else ''})"
    figs = {pf.html_id: _figure(pf) for pf in chain_figures(g, idx, level)}
    parts = [f"<h2>{e(g['model_id'])} on {e(g['dataset'])}: {e(chain)}</h2>",
             _protocol_note(g), _headline(g)]
    parts += [blocks(m.report(g, idx), figs) for m in registered_metrics("group") if m.report is not None]
    return "".join(parts)


def _predictor_section(g: dict[str, Any], idx: int, figures: list[PaperFigure]) -> str:
    rows: list[list[object]] = [["predictor", points(g["accuracy"]), f"{g['mean_frames']:.1f}", "", ""]]
    rows += [[f"fixed {f['budget_id']}", points(f["accuracy"]), f"{f['mean_frames']:.1f}", points(f["accuracy_delta"]),
              points(f["frames_saved"])] for f in g["fixed"]]
    rows.append(["oracle (cheapest right budget)", points(g["oracle_accuracy"]), f"{g['oracle_mean_frames']:.1f}",
                 points(g["accuracy"] - g["oracle_accuracy"]), ""])
    cols = [*g["grid"], None]
    cells = {(c["predicted"], c["sufficient"]): c["n"] for c in g["confusion"]}
    matrix = [[p, *[cells.get((p, c), 0) for c in cols]] for p in g["grid"]]
    note = (f"{g['n_items']} items; agreement with the cheapest sufficient budget {points(g['agreement'])}% of "
            f"{g['n_solvable']} solvable items ({g['n_under']} under, {g['n_over']} over); {g['n_unsolvable']} right "
            f"at no budget; {g['n_unparsed']} unparsed and {g['n_off_grid']} off-grid answers used "
            f"{g['fallback_budget']}")
    return "".join([
        f"<h2>Hybrid-frame predictor {e(g['predictor_id'])}: {e(g['model_id'])} on {e(g['dataset'])}</h2>",
        f'<p class="note">{e(note)}</p>',
        table(f"table-predictor-{idx}", ["strategy", "accuracy", "mean frames", "predictor minus it (pts)",
                                          "frames saved (%)"], rows),
        *(_figure(pf) for pf in figures),
        "<h3>Predicted budget (rows) x cheapest sufficient budget (columns)</h3>",
        '<p class="note">chosen budget after the fallback; "none": items right at no budget</p>',
        table(f"table-predictor-confusion-{idx}", ["predicted", *[c or "none" for c in cols]], matrix),
    ])


def _cascade_online_section(sessions: list[dict[str, Any]]) -> str:
    """The online cascade runs (`framesweep cascade`): cost and accuracy beside the fixed budget and
    the offline simulation of the same threshold."""
    def num(v: object, digits: int = 1) -> str:
        return "" if v is None else f"{v:.{digits}f}"  # type: ignore[str-format]

    rows = []
    for r in sessions:
        off = r.get("offline") or {}
        stages = " → ".join(r["stages"])
        rows.append([f"cascade {stages} @ {r['tau']:g}", points(r.get("accuracy")), num(r.get("mean_frames_processed")),
                     num(r.get("mean_frames_decoded")), num(r.get("wall_s"))])
        rows.append([f"fixed {r['fixed_budget']}", points(r.get("fixed_accuracy")), num(r.get("fixed_mean_frames")),
                     num(r.get("fixed_mean_frames")), num(r.get("fixed_wall_s"))])
        rows.append([f"offline simulation ({points(r.get('decision_agreement'))} same stops)", points(off.get("accuracy")),
                     num(off.get("mean_frames")), num(off.get("mean_unique_frames")), ""])
    timing = []
    for k, r in enumerate(sessions):
        left = r.get("skipped_models") or {}
        if left:
            timing.append('<p class="note">' + e("left out (stages above the model's max_frames): " + "; ".join(
                f"{m}: {', '.join(ids)}" for m, ids in left.items())) + "</p>")
        per = [[x["round"], x["order"][0], num(x["fixed_wall_s"]), num(x["cascade_wall_s"]), num(x.get("ratio"), 3)]
               for x in r.get("rounds") or []]
        if per:
            ratio = {k: num(r.get(f"ratio_{k}"), 3) or "n/a" for k in ("median", "min", "max")}
            note = (f"cascade / fixed wall time: median {ratio['median']}, range {ratio['min']}-"
                    f"{ratio['max']} over {len(per)} rounds; each policy started from cold engine caches "
                    "(prefix and multimodal caches reset) and the policies alternated which ran first")
            timing.append(f'<p class="note">{e(note)}</p>' + table(
                f"cascade-rounds-{k}", ["round", "first", "fixed wall s", "cascade wall s", "cascade / fixed"], per))
    return "<section><h2>Confidence cascade, run online</h2>" + table(
        "cascade-online", ["policy", "accuracy", "mean frames", "unique frames decoded", "wall s (median)"], rows) \
        + "".join(timing) + "</section>"


def _across_chains(doc: dict[str, Any], key: tuple[str, str], idx: int) -> str:
    """Every registered dataset metric's section for one model and dataset (its entries of them)."""
    figs = {pf.html_id: _figure(pf) for pf in across_figures(doc, key, idx)}
    body = ""
    for metric in registered_metrics("dataset"):
        mine = [r for r in doc.get(metric.name) or [] if (r.get("model_id"), r.get("dataset")) == key]
        if mine and metric.report is not None:
            body += blocks(metric.report(mine, idx), figs)
    return f"<section><h2>{e(key[0])} on {e(key[1])}: across chains</h2>{body}</section>" if body else ""


def _across_models(doc: dict[str, Any], dataset: str, idx: int) -> str:
    """Every registered dataset metric's section for one dataset whose entries compare models (no ``model_id``)."""
    body = ""
    for metric in registered_metrics("dataset"):
        mine = [r for r in doc.get(metric.name) or [] if "model_id" not in r and r.get("dataset") == dataset]
        if mine and metric.report is not None:
            body += blocks(metric.report(mine, idx), {})
    return f"<section><h2>{e(dataset)}: across models</h2>{body}</section>" if body else ""


def _groups(doc: dict[str, Any]) -> str:
    """Every chain, after the chains of each model and dataset what compares them, then what compares models."""
    level = float((doc.get("options") or {}).get("level") or 0.95)
    out, keys = [], list(dict.fromkeys((g["model_id"], g["dataset"]) for g in doc["groups"]))
    for k, key in enumerate(keys):
        out += [_group_section(g, i, level) for i, g in enumerate(doc["groups"])
                if (g["model_id"], g["dataset"]) == key]
        out.append(_across_chains(doc, key, k))
    datasets = dict.fromkeys(ds for _, ds in keys)
    out += [_across_models(doc, ds, k) for k, ds in enumerate(datasets)]
    return "".join(out)


def render_report(doc: dict[str, Any], title: str = "framesweep report") -> str:
    """The HTML page for a metrics document (see `engine.metrics.document`), with its optional sections.

    Raises:
        ValueError: `doc` declares another schema than ``framesweep.metrics/2`` (a metrics/1 document has
            one chain per model and dataset and would be misread).
    """
    schema = doc.get("schema", SCHEMA)
    if schema != SCHEMA:
        raise ValueError(f"metrics document schema {schema!r}: this report reads {SCHEMA!r} (one group per "
                         "protocol chain); compute it again with `framesweep metrics DIR --json`")
    body = _groups(doc)
    if not doc["groups"]:
        body = '<p class="note">No results yet.</p>'
    predictor = {pf.html_id: pf for pf in predictor_figures(doc)}
    body += "".join(_predictor_section(g, i, [predictor[f"fig-predictor-{i}"]] if f"fig-predictor-{i}" in predictor
                                       else []) for i, g in enumerate(doc.get("predictor") or []))
    if doc.get("checkpoints"):
        c = doc["checkpoints"]
        body += checkpoint_section(c, {pf.html_id: _figure(pf) for pf in checkpoint_figures(c)})
    if doc.get("cascade_online"):
        body += _cascade_online_section(doc["cascade_online"])
    run = run_section(doc["run"]) if doc.get("run") else ""
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>'
            f"<style>{CSS}{_FIGURE_CSS}</style></head><body><h1>{e(title)}</h1>"
            f'<p class="note">source: {e(doc.get("source"))}; rates in points.</p>{run}{body}</body></html>')


_FIGURE_CSS = "figure{margin:8px 0}figcaption{margin-top:2px}pre{font-size:12px;background:#f8f8f8;padding:8px}"


def write_report(doc: dict[str, Any], path: str | Path, title: str = "framesweep report") -> Path:
    """Write `render_report` to `path` (UTF-8), every registered secret redacted, and return it."""
    out = Path(path)
    atomic_write(out, redact(render_report(doc, title)).encode("utf-8"))  # `e` escaped it: entities are matched
    log.info("wrote %s", out)
    return out
