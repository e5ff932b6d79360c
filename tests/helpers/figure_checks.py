"""Checks on a drawn paper figure that only the tests make: the texts it shows, those that overlap, those cut off at
its edges (the package lays figures out with `engine.report.style.declutter`, whose overlap rule `_touching` these
share)."""

from __future__ import annotations

from collections.abc import Iterable

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Text

from engine.report.style import _touching


def _in_view(ax: Axes) -> set[int]:
    """ids of the tick labels of `ax` that are drawn (their tick inside the view)."""
    out = set()
    for axis in (ax.xaxis, ax.yaxis):
        lo, hi = sorted(axis.get_view_interval())
        pad = (hi - lo) * 1e-6
        out |= {id(t.label1) for t in axis.get_major_ticks() if lo - pad <= t.get_loc() <= hi + pad}
    return out


def visible_texts(fig: Figure) -> list[Text]:
    """Every text `fig` draws (tick labels in view, axis labels, titles, legends, annotations), non-empty."""
    fig.draw_without_rendering()
    drawn = set().union(*(_in_view(ax) for ax in fig.axes))
    ticks = {id(t) for ax in fig.axes for t in (*ax.get_xticklabels(), *ax.get_yticklabels())}
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()
            and (id(t) not in ticks or id(t) in drawn)]


def overlaps(texts: Iterable[Text], fig: Figure) -> list[tuple[str, str]]:
    """Pairs of texts whose drawn boxes overlap (after the layout), by their strings."""
    fig.draw_without_rendering()  # the layout, without painting a pixel
    return _touching(texts, fig.canvas.get_renderer())  # type: ignore[attr-defined]


def outside(fig: Figure) -> list[str]:
    """The visible texts that reach past the figure's edges (cut off in the file)."""
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    page = fig.bbox.padded(1.0)
    return [t.get_text() for t in visible_texts(fig)
            if not page.contains(*t.get_window_extent(renderer).min) or not page.contains(*t.get_window_extent(renderer).max)]
