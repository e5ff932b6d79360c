"""The one number format for people: how every typed cell of a metric's table or note is written.

A metric gives its numbers typed (`engine.metrics.sections`: `Rate`, `Interval`, `Delta`, `Count`, `Score`,
`Number`, `Text`); the report and the CLI write them with `cell_text`. Rates are fractions in every document and
points to one place on a page or a terminal (0.613 is ``61.3``); a missing or undefined number is ``n/a``.
"""

from __future__ import annotations

import math

from engine.metrics.benchmark_scores import score_unit
from engine.metrics.sections import Count, Delta, Interval, Name, Number, Rate, Score, Text

__all__ = ["cell_text", "metric_score", "points", "score_text"]

_DIGITS = 1  # points are printed to one place everywhere


def points(fraction: float | None, signed: bool = False) -> str:
    """A fraction as points to one place for people (0.613 -> ``61.3``; signed: ``+2.0``); ``n/a`` for None
    or a value that is not a number."""
    if fraction is None or not math.isfinite(fraction):
        return "n/a"
    return f"{100 * fraction:{'+' if signed else ''}.{_DIGITS}f}"


def score_text(score: Score) -> str:
    """A benchmark's score as published: points in its own unit to one place, a count as a count, a fraction as
    percentage points."""
    v = score.value
    if v is None:
        return "n/a"
    if score.unit == "count":
        return f"{v:+.0f}" if score.signed else f"{v:.0f}"
    if score.unit == "points":
        return f"{v:+.1f}" if score.signed else f"{v:.1f}"
    return points(v, score.signed)


def metric_score(metric: str, value: float | None, signed: bool = False) -> str:
    """A benchmark metric's value in its benchmark's unit (its registration's `units`; a fraction where none)."""
    return score_text(Score(value, score_unit(metric), signed))


def _rate(r: Rate) -> str:
    if r.interval is None:
        return points(r.value)
    return "n/a" if r.value is None else f"{points(r.value)} {_interval(Interval(*r.interval))}"


def _interval(i: Interval) -> str:
    return f"[{points(i.low)}, {points(i.high)}]"


def _count(c: Count) -> str:
    if c.value is None:
        return "n/a"
    return f"{c.value:,.0f}" if c.thousands else str(c.value)


def _number(n: Number) -> str:
    if n.value is None:
        return "n/a"
    return f"{n.value:.{n.significant}g}" if n.significant is not None else f"{n.value:.{n.places}f}"


def cell_text(cell: object) -> str:
    """A table cell or a note for people: a typed cell in the one format, anything else as `str` writes it."""
    if isinstance(cell, Rate):
        return _rate(cell)
    if isinstance(cell, Interval):
        return _interval(cell)
    if isinstance(cell, Delta):
        return points(cell.value, signed=True)
    if isinstance(cell, Count):
        return _count(cell)
    if isinstance(cell, Score):
        return score_text(cell)
    if isinstance(cell, Number):
        return _number(cell)
    if isinstance(cell, Name):
        return "n/a" if cell.value is None else cell.value
    if isinstance(cell, Text):
        return "".join(cell_text(p) for p in cell.parts)
    return str(cell)
