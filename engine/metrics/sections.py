"""What a metric shows a reader, neutral of the medium: headings, notes, tables and figure slots.

A registered metric's ``report`` and ``terminal`` hooks (`engine.metrics.registry.Metric`) return
these blocks; `engine.report` renders them as HTML and ``framesweep metrics`` as terminal tables,
so a metric never writes HTML or terminal markup itself. Nor does it format a number: a table's cells and a
note's numbers are typed (`Rate` with its interval, `Interval`, `Delta`, `Count`, `Score` in its benchmark's unit,
`Number`; `Text` strings them together), and the presentation layer writes each one for people
(`engine.report.cells`: rates as points to one place, everywhere).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.datasets.benchmark import Unit

__all__ = ["Block", "Cell", "Count", "Delta", "Figure", "Heading", "Headline", "Interval", "Name", "Note", "Number",
           "Rate", "Score", "Table", "Text", "joined", "rate_with_interval", "text"]


@dataclass(frozen=True)
class Rate:
    """A fraction, shown as points (``n/a`` for None), with its confidence interval after it where given."""

    value: float | None
    interval: tuple[float | None, float | None] | None = None


@dataclass(frozen=True)
class Interval:
    """A confidence interval of a rate alone, ``[low, high]`` in points."""

    low: float | None
    high: float | None


@dataclass(frozen=True)
class Delta:
    """A difference of two rates, shown as signed points."""

    value: float | None


@dataclass(frozen=True)
class Count:
    """A count (`thousands`: grouped by thousands, rounded to a whole number)."""

    value: int | float | None
    thousands: bool = False


@dataclass(frozen=True)
class Score:
    """A benchmark's score in its own unit (`engine.datasets.benchmark.Unit`), signed for a difference."""

    value: float | None
    unit: Unit = "fraction"
    signed: bool = False


@dataclass(frozen=True)
class Number:
    """A plain number (an AUC, a Jaccard index, a statistic): to `places` decimals or `significant` digits."""

    value: float | None
    places: int | None = 2
    significant: int | None = None


@dataclass(frozen=True)
class Name:
    """A name that may be missing (a budget id of a chain with no result yet)."""

    value: str | None


@dataclass(frozen=True)
class Text:
    """Words and typed cells written one after the other (`text`)."""

    parts: tuple[object, ...]


Cell = Rate | Interval | Delta | Count | Score | Number | Name | Text


def rate_with_interval(g: Mapping[str, Any], key: str, value: float | None) -> Rate:
    """`value`, the rate `key` of group entry `g`, with its bootstrap interval when the document has one."""
    ci = (g.get("confidence_intervals") or {}).get(key)
    return Rate(value, (ci[0], ci[1])) if isinstance(ci, list) and ci[0] is not None else Rate(value)


def text(*parts: object) -> Text:
    """Words and cells in one cell or note: ``text("oracle ", Rate(0.7), " pts")``."""
    return Text(parts)


def joined(sep: str, cells: Iterable[object]) -> Text:
    """`cells` with `sep` between them (``joined(" / ", (Rate(a), Rate(b)))``)."""
    parts: list[object] = []
    for c in cells:
        parts += [sep, c] if parts else [c]
    return Text(tuple(parts))


@dataclass(frozen=True)
class Heading:
    """A section title."""

    text: str


@dataclass(frozen=True)
class Note:
    """A line of explanation (the report's small print; a plain line in the terminal)."""

    text: str | Text


@dataclass(frozen=True)
class Table:
    """A table: `id` names it in the report (``table-...``), `title` heads it in the terminal."""

    id: str
    head: list[str]
    rows: list[list[object]]
    """Each cell a `Cell`, or a word or an int written as it is."""
    title: str = ""


@dataclass(frozen=True)
class Figure:
    """A slot for one of the paper figures `engine.report.figures` draws (by its html id), under `title`,
    followed by the blocks `then`; all shown only where that figure was drawn (the terminal shows none)."""

    id: str
    title: str = ""
    then: tuple[Heading | Note | Table, ...] = ()


Block = Heading | Note | Table | Figure


@dataclass(frozen=True)
class Headline:
    """A metric's share of a chain's headline: its phrase on the one line ``framesweep metrics`` prints per chain
    (the metrics' phrases joined by ``; ``) and its rows of the report's headline table (label, cell)."""

    line: Text
    rows: tuple[tuple[str, object], ...] = ()

