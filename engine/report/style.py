"""The paper style of the figures: two-column sizes, fonts, colours, and labels that never overlap.

Sizes follow a two-column paper: `COLUMN` (one column, 3.4 in) for most figures, `PAGE` (both
columns, 7.0 in) where a figure needs the width. Fonts are 7 pt, lines thin, backgrounds white;
colours are the HTML report's (`engine.report.html`), so a figure reads the same in both.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import matplotlib as mpl
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from engine.report.html import BLUE, GREEN, GREY, ORANGE, PALETTE, RED

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

__all__ = ["BLUE", "COLUMN", "DPI", "GREEN", "GREY", "ORANGE", "PAGE", "PALETTE", "RED", "budget_labels", "declutter",
           "new_figure", "paper_style", "points"]

COLUMN = 3.4
"""One column of a two-column paper, in inches."""
PAGE = 7.0
"""Both columns, in inches."""
DPI = 300
"""Dots per inch of PNG files; the layout and the label checks are made at it, so they hold in the file."""

_RC: dict[RcKeyType, Any] = {
    "font.size": 7, "axes.titlesize": 7.5, "axes.labelsize": 7, "xtick.labelsize": 6.5, "ytick.labelsize": 6.5,
    "legend.fontsize": 6.5, "legend.frameon": False, "axes.linewidth": 0.6, "lines.linewidth": 1.2,
    "lines.markersize": 4, "xtick.major.width": 0.6, "ytick.major.width": 0.6, "axes.spines.top": False,
    "axes.spines.right": False, "figure.facecolor": "white", "savefig.facecolor": "white",
    "pdf.fonttype": 42, "ps.fonttype": 42,  # TrueType in PDFs: editable text, accepted by publishers
    "svg.fonttype": "none", "svg.hashsalt": "framesweep",  # text as text; the same ids on every run
    "path.simplify": True,
    # every label is plain text: a model id, dataset or budget holding `$...$` (an imported lmms-eval log) is
    # drawn as written, never parsed as mathtext (which fails on `$\bad{$` and rewrites `$x^2$`)
    "text.parse_math": False,
    # the layout is the figure's own (constrained, then kept by `declutter`), whatever a matplotlibrc says
    "figure.autolayout": False, "figure.constrained_layout.use": False, "savefig.bbox": "standard",
}


@contextmanager
def paper_style() -> Iterator[None]:
    """The style while a figure is drawn and saved (matplotlib's global settings untouched outside)."""
    with mpl.rc_context(_RC):
        yield


def new_figure(width: float = COLUMN, height: float = 2.3, *, rows: int = 1, cols: int = 1,
               **grid: Any) -> tuple[Figure, Any]:
    """A figure of `width` x `height` inches with a constrained layout (labels kept inside) and its axes."""
    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(rows, cols, squeeze=True, **grid)


def points(v: float | None) -> float:
    """A fraction as points (percent), NaN for a missing value (matplotlib leaves a gap)."""
    return math.nan if v is None else 100.0 * v


def budget_labels(grid: list[str], frames: dict[str, int]) -> list[str]:
    """Tick labels of a chain's budgets: ``text`` for text-only, else the frame count (a chain has one
    budget per count); the budget id where a count repeats."""
    counts = [frames.get(b) for b in grid]
    unique = len(set(counts)) == len(counts)
    return ["text" if frames.get(b) == 0 else (str(frames[b]) if unique and b in frames else b) for b in grid]


def _touching(texts: Iterable[Text], renderer: Any) -> list[tuple[str, str]]:
    """Pairs of texts whose boxes, as laid out last, overlap (by their strings)."""
    boxes = [(t.get_text(), t.get_window_extent(renderer).shrunk(0.96, 0.9)) for t in texts]
    return [(a, b) for i, (a, ba) in enumerate(boxes) for b, bb in boxes[i + 1:] if ba.overlaps(bb)]


def _crowded(fig: Figure, axes: list[Axes]) -> list[Axes]:
    """Those of `axes` whose shown x tick labels touch, after one layout of the figure (hidden labels are left
    out: matplotlib gives every hidden text the same unit box)."""
    if not axes:
        return []
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    return [ax for ax in axes
            if _touching([t for t in ax.get_xticklabels() if t.get_text() and t.get_visible()], renderer)]


def declutter(fig: Figure) -> None:
    """Keep labels apart, then fix the layout: x tick labels that touch are turned 35 degrees, then every other
    one is hidden (every fourth, eighth) while they still touch.

    A layout is a full draw: one checks every axis; a crowded axis takes one more per step (and turning its
    labels may crowd another axis, checked again). The last check laid the figure out as it now is, so that
    layout is kept (the figure's layout engine is removed): saving draws the figure once, in exactly the
    layout whose labels were checked, where a constrained layout would be computed twice more per file."""
    for t in fig.findobj(Text):  # drawn outside `paper_style` too: still plain text, never mathtext
        t.set_parse_math(False)
    done: list[Axes] = []
    while crowded := _crowded(fig, [ax for ax in fig.axes if ax not in done]):
        for ax in crowded:
            done.append(ax)
            ax.tick_params(axis="x", labelrotation=35)
            for t in ax.get_xticklabels():
                t.set_horizontalalignment("right")
            step = 2
            while _crowded(fig, [ax]) and step <= 8:
                for k, t in enumerate(ax.get_xticklabels()):
                    t.set_visible(k % step == 0)
                step *= 2
    if not fig.axes:
        fig.draw_without_rendering()  # (no axis was checked: lay it out once all the same)
    fig.set_layout_engine(None)
