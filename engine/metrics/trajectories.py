"""Trajectory tables: each item's outcome at every budget of its group's grid.

`trajectory_table` keeps every item (complete or not) with list columns aligned to
the grid; `trajectory_wide` spreads chosen budgets into columns; `trajectory_patterns`
counts the distinct right/wrong patterns of the matched items (the report's heatmap).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from engine.metrics.grid import CATEGORY_COLUMNS, GROUP, Track, chain_rows, grid_budgets, track_rows
from engine.metrics.html import GREEN, GREY, RED, rect, svg, text
from engine.metrics.registry import Metric, register_metric

__all__ = ["heatmap_figure", "trajectory_patterns", "trajectory_table", "trajectory_wide"]

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


def heatmap_figure(g: dict[str, Any], idx: int, max_rows: int = 40) -> str:
    """Distinct right/wrong trajectories (rows) over the grid (columns), with item counts."""
    grid, pats = g["grid"], g["trajectory_patterns"][:max_rows]
    w, left, top, rh = 640, 10, 34, 14
    cw = (w - left - 150) / max(len(grid), 1)
    total = max([1] + [p["n"] for p in pats])
    body = [text(left + (i + 0.5) * cw, top - 8, b) for i, b in enumerate(grid)]
    for r, p in enumerate(pats):
        yy = top + r * rh
        for i, bit in enumerate(p["pattern"]):
            color, state = (GREEN, "right") if bit == "1" else (RED, "wrong")
            body.append(rect(left + i * cw, yy, cw - 1, rh - 1, color, f"{grid[i]}: {state} ({p['n']} items)",
                              'class="cell"'))
        bx = left + len(grid) * cw + 8
        body += [rect(bx, yy + 2, 100 * p["n"] / total, rh - 4, GREY), text(bx + 104, yy + rh - 3, p["n"], "start")]
    hidden = len(g["trajectory_patterns"]) - len(pats)
    if hidden > 0:
        body.append(text(left, top + len(pats) * rh + 12, f"... {hidden} rarer patterns not shown", "start"))
    return svg(f"fig-heatmap-{idx}", w, top + len(pats) * rh + 20, body, "trajectory heatmap")


def _report_section(g: dict[str, Any], idx: int) -> str:
    return "<h3>Trajectories</h3>" + heatmap_figure(g, idx) if g["n_items"] else ""


register_metric(Metric(
    name="trajectory_patterns",
    tables=lambda inputs: {"patterns": trajectory_patterns(inputs.m)},
    document=lambda rows, opts: rows("patterns"),
    report=_report_section,
    description='distinct right/wrong patterns along the grid ("1"/"0" per budget), most frequent first',
))
