"""What a metric shows a reader, neutral of the medium: headings, notes, tables and figure slots.

A registered metric's ``report`` and ``terminal`` hooks (`engine.metrics.registry.Metric`) return
these blocks; `engine.report` renders them as HTML and ``framesweep metrics`` as terminal tables,
so a metric never writes HTML or terminal markup itself. Numbers for people are points, written by
`engine.runtime.output.points` (one place, everywhere).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Block", "Figure", "Heading", "Note", "Table"]


@dataclass(frozen=True)
class Heading:
    """A section title."""

    text: str


@dataclass(frozen=True)
class Note:
    """A line of explanation (the report's small print; a plain line in the terminal)."""

    text: str


@dataclass(frozen=True)
class Table:
    """A table: `id` names it in the report (``table-...``), `title` heads it in the terminal."""

    id: str
    head: list[str]
    rows: list[list[object]]
    title: str = ""


@dataclass(frozen=True)
class Figure:
    """A slot for one of the paper figures `engine.report.figures` draws (by its html id), under `title`,
    followed by the blocks `then`; all shown only where that figure was drawn (the terminal shows none)."""

    id: str
    title: str = ""
    then: tuple[Heading | Note | Table, ...] = ()


Block = Heading | Note | Table | Figure

