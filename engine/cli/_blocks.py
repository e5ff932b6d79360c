"""What a registered metric shows in the terminal: its blocks (`engine.metrics.sections`), each number written
by `engine.report.cells` (the one format for people), and its live tables per chain (`Metric.live`: `run`'s
ending, `status`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl
from rich.table import Table

from engine.cli._console import console, heading
from engine.metrics.grid import GROUP
from engine.metrics.registry import METRICS
from engine.metrics.sections import Heading, Note
from engine.metrics.sections import Table as Tab
from engine.report.cells import cell_text

__all__ = ["print_blocks", "print_live"]


def print_blocks(blocks: Sequence[Any]) -> None:
    """A registered metric's terminal blocks; figures have no terminal form."""
    for b in blocks:
        if isinstance(b, Heading):
            heading(b.text)
        elif isinstance(b, Note):
            console.print(cell_text(b.text))
        elif isinstance(b, Tab):
            t = Table(title=b.title or None)
            for c in b.head:
                t.add_column(c, justify="right")
            for r in b.rows:
                t.add_row(*(cell_text(v) for v in r))
            console.print(t)


def _chains(tables: dict[str, pl.DataFrame]) -> list[tuple[str, str, str]]:
    """Every chain of the tables: per model and dataset, ``default`` first, then the others by name."""
    keys = {tuple(k) for df in tables.values() for k in df.select(GROUP).unique().iter_rows()}
    return sorted(keys, key=lambda k: (k[0], k[1], k[2] != "default", k[2]))  # type: ignore[return-value]


def print_live(tables: dict[str, pl.DataFrame], *, spaced: bool = False) -> None:
    """Per chain, under its heading, each metric's live table (`engine.metrics.registry.live_tables`) as the
    metric shows it (`Live.blocks`); `spaced`: a blank line before each chain."""
    for model_id, dataset, protocol in _chains(tables):
        if spaced:
            console.print()
        heading(f"{model_id} on {dataset}, chain {protocol}")
        for name, df in tables.items():
            part = df.filter((pl.col("model_id") == model_id) & (pl.col("dataset") == dataset)
                             & (pl.col("protocol_id") == protocol)).drop(GROUP)
            live = METRICS.get(name).live  # a live table's metric declares one (`live_tables`)
            if part.height and live is not None:
                print_blocks(live.blocks(part.to_dicts()))
