"""Trajectory tables: each item's outcome at every budget of its group's grid.

`trajectory_table` keeps every item (complete or not) with list columns aligned to
the grid; `trajectory_wide` spreads chosen budgets into columns; `trajectory_patterns`
counts the distinct right/wrong patterns of the matched items (the report's trajectories figure).

Registered as the metric ``trajectory_patterns`` (report ``fig-trajectories-N``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from engine.metrics.grid import CATEGORY_COLUMNS, GROUP, Track, chain_rows, grid_budgets, track_rows
from engine.metrics.registry import Metric, register_metric
from engine.metrics.sections import Block, Figure

__all__ = ["trajectory_patterns", "trajectory_table", "trajectory_wide"]

_VALUES = ["correct", "score", "confidence"]


def _cells(rows: pl.LazyFrame, track: Track, budgets: Sequence[str] | None) -> pl.LazyFrame:
    """Every (item, grid budget) of each group, with the ok row's values where there is one."""
    mine = track_rows(chain_rows(rows), track)
    items = mine.group_by([*GROUP, "item_id"]).agg(
        [pl.col(c).drop_nulls().first() for c in CATEGORY_COLUMNS])
    values = mine.filter(pl.col("status") == "ok").select([*GROUP, "item_id", "budget_id", *_VALUES])
    value = pl.col("score") if track == "score" else pl.col("correct")
    return (
        items.join(grid_budgets(rows, budgets), on=GROUP, how="inner")
        .join(values, on=[*GROUP, "item_id", "budget_id"], how="left")
        .with_columns(value.is_not_null().alias("_has"))
    )


def trajectory_table(rows: pl.LazyFrame, *, track: Track = "correct",
                     budgets: Sequence[str] | None = None) -> pl.LazyFrame:
    """One row per (model, dataset, protocol, item): its outcomes along the chain, as aligned lists.

    Args:
        rows: One row per key.
        track: ``"correct"`` or ``"score"``.
        budgets: Grid budgets (default: each group's chain).

    Returns:
        model_id, dataset, protocol_id, item_id, task_type, category, duration, budgets (grid in cost order),
        correct, score, confidence (lists aligned with budgets; null where no ok result),
        n_missing, complete.
    """
    order = pl.col("rank")
    return (
        _cells(rows, track, budgets)
        .group_by([*GROUP, "item_id", *CATEGORY_COLUMNS])
        .agg(pl.col("budget_id").sort_by(order).alias("budgets"),
             *[pl.col(c).sort_by(order) for c in _VALUES],
             (~pl.col("_has")).sum().cast(pl.Int64).alias("n_missing"))
        .with_columns((pl.col("n_missing") == 0).alias("complete"))
        .sort([*GROUP, "item_id"])
    )


def trajectory_wide(rows: pl.LazyFrame, budgets: Sequence[str], *, track: Track = "correct") -> pl.LazyFrame:
    """One row per (model, dataset, protocol, item) with ``correct@b``, ``score@b``, ``confidence@b`` columns.

    Args:
        rows: One row per key.
        budgets: The budget ids to spread (e.g. a group's grid from `grid_summary`), in order.
        track: ``"correct"`` or ``"score"``.
    """
    cols = [
        pl.col(v).filter(pl.col("budget_id") == b).first().alias(f"{v}@{b}")
        for b in budgets for v in _VALUES
    ]
    return (
        _cells(rows, track, budgets)
        .group_by([*GROUP, "item_id", *CATEGORY_COLUMNS])
        .agg(*cols, pl.col("_has").all().alias("complete"))
        .sort([*GROUP, "item_id"])
    )


def trajectory_patterns(m: pl.LazyFrame, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """How many matched items follow each right/wrong pattern along the grid.

    Args:
        m: Matched long frame (correctness track).
        by: Group keys.

    Returns:
        *by, pattern (one "1"/"0" per grid budget, cheapest first), n; most frequent first.
    """
    by = list(by)
    bit = pl.when(pl.col("c")).then(pl.lit("1")).otherwise(pl.lit("0"))
    return (
        m.group_by([*by, "item_id"])
        .agg(bit.sort_by("rank").str.join("").alias("pattern"))
        .group_by([*by, "pattern"])
        .agg(pl.len().cast(pl.Int64).alias("n"))
        .sort([*by, "n", "pattern"], descending=[*([False] * len(by)), True, False])
    )


def _report(g: dict[str, Any], idx: int) -> list[Block]:
    return [Figure(f"fig-trajectories-{idx}", "Trajectories")] if g["n_items"] else []


register_metric(Metric(
    name="trajectory_patterns",
    figures=("trajectories",),
    tables=lambda inputs: {"patterns": trajectory_patterns(inputs.m)},
    document=lambda rows, opts: rows("patterns"),
    report=_report,
    description='distinct right/wrong patterns along the grid ("1"/"0" per budget), most frequent first',
))
