"""Annotation problems: what is wrong, in which file, at which row, for which item.

Policy (every adapter): the whole annotation is read and *every* problem is collected
before anything is yielded, so a user sees the full list at once.

- ``strict = true`` (the default): any problem raises one `DatasetError` listing them all.
- ``strict = false``: bad rows are skipped, one warning is logged, and the problems stay
  on the adapter (`adapter.problems`) for `framesweep inspect` to report.
- Fatal problems always raise, whatever `strict` says: a media path that escapes its
  root (a tampered or hostile annotation), a missing or unreadable annotation file, a
  missing column or a column of the wrong type (no row can be read).

A *missing media file* is not an annotation problem: the item is still yielded with
its resolved path, and the scheduler turns the failed decode into error rows.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["DatasetError", "Problem", "Problems", "RowError"]

log = logging.getLogger(__name__)

_SHOWN = 50


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an annotation file."""

    source: str
    """The annotation file (or media root) the problem is in."""
    row: int | None
    """0-based position of the row / entry in the file; None for a file-level problem."""
    reason: str
    item_id: str | None = None
    fatal: bool = False
    """Raised even with ``strict = false`` (path escapes, unreadable files, wrong column types)."""

    def __str__(self) -> str:
        where = self.source
        if self.row is not None:
            where += f": row {self.row}"
        if self.item_id is not None:
            where += f" (item {self.item_id})"
        return f"{where}: {self.reason}"


class DatasetError(ValueError):
    """Annotations that cannot be used; the message lists every problem with file, row and reason."""

    def __init__(self, problems: Iterable[Problem], dataset: str | None = None) -> None:
        self.problems = list(problems)
        self.dataset = dataset
        head = f"{dataset}: " if dataset else ""
        lines = [f"{head}{len(self.problems)} problem(s) in the benchmark files"]
        lines += [f"  {p}" for p in self.problems[:_SHOWN]]
        if len(self.problems) > _SHOWN:
            lines.append(f"  ... and {len(self.problems) - _SHOWN} more")
        super().__init__("\n".join(lines))


class RowError(Exception):
    """Raised while parsing one row: the row is bad for `reason` (the caller adds file and row)."""

    def __init__(self, reason: str, *, fatal: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fatal = fatal


@dataclass
class Problems:
    """Collects the problems of one adapter's files, then raises or reports them all at once."""

    dataset: str
    items: list[Problem] = field(default_factory=list)

    def add(self, source: str | Path, row: int | None, reason: str, *, item_id: str | None = None,
            fatal: bool = False) -> None:
        self.items.append(Problem(str(source), row, reason, item_id, fatal))

    def extend(self, problems: Iterable[Problem], item_id: str | None = None) -> None:
        for p in problems:
            self.items.append(p if p.item_id or item_id is None else
                              Problem(p.source, p.row, p.reason, item_id, p.fatal))

    @property
    def fatal(self) -> bool:
        return any(p.fatal for p in self.items)

    def finish(self, strict: bool) -> list[Problem]:
        """Raise one `DatasetError` (strict, or anything fatal); else warn once and return the problems."""
        if self.items and (strict or self.fatal):
            raise DatasetError(self.items, self.dataset)
        if self.items:
            log.warning("%s: skipped %d bad row(s); first: %s", self.dataset, len(self.items), self.items[0])
        return list(self.items)
