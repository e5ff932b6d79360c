"""Fixed accuracy per budget, the best fixed budget, and the per-item oracle over the grid.

All functions take the matched long frame of `engine.metrics.grid.matched` (or a
bootstrap resample of it) and group by `by` (default: model and dataset; add a
category column for per-category splits). `value` picks the per-item outcome:
``"c"`` (correctness) or ``"s"`` (graded score, for open tasks).

- fixed accuracy A(g) = mean_i c_i(g); best fixed = max_g A(g) (ties: cheapest budget)
- oracle = mean_i max_g c_i(g); oracle headroom = oracle - best fixed
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from engine.metrics.grid import GROUP

__all__ = ["best_fixed", "fixed_accuracy", "oracle"]


def fixed_accuracy(m: pl.LazyFrame, by: Sequence[str] = GROUP, *, value: str = "c") -> pl.LazyFrame:
    """Mean outcome per budget over the matched items.

    Args:
        m: Matched long frame.
        by: Group keys.
        value: ``"c"`` or ``"s"``.

    Returns:
        *by, budget_id, rank, frames, n_items, accuracy; sorted by group and rank.
    """
    by = list(by)
    return (
        m.group_by([*by, "budget_id"])
        .agg(pl.col("rank").first(), pl.col("frames").first(), pl.len().cast(pl.Int64).alias("n_items"),
             pl.col(value).cast(pl.Float64).mean().alias("accuracy"))
        .sort([*by, "rank"])
    )


def best_fixed(m: pl.LazyFrame, by: Sequence[str] = GROUP, *, value: str = "c") -> pl.LazyFrame:
    """The budget with the highest fixed accuracy; ties go to the cheapest budget.

    Returns:
        *by, best_budget, best_accuracy.
    """
    by = list(by)
    return (
        fixed_accuracy(m, by, value=value)
        .sort([*by, "accuracy", "rank"], descending=[*([False] * len(by)), True, False])
        .unique(subset=by, keep="first", maintain_order=True)
        .select([*by, pl.col("budget_id").alias("best_budget"), pl.col("accuracy").alias("best_accuracy")])
    )


def oracle(m: pl.LazyFrame, by: Sequence[str] = GROUP, *, value: str = "c") -> pl.LazyFrame:
    """Per-item oracle over the grid against the best fixed budget.

    Returns:
        *by, n_items, oracle_accuracy, best_budget, best_accuracy, oracle_headroom.
    """
    by = list(by)
    per_item = m.group_by([*by, "item_id"]).agg(pl.col(value).cast(pl.Float64).max().alias("_best"))
    return (
        per_item.group_by(by)
        .agg(pl.len().cast(pl.Int64).alias("n_items"), pl.col("_best").mean().alias("oracle_accuracy"))
        .join(best_fixed(m, by, value=value), on=by, how="inner", nulls_equal=True)
        .with_columns((pl.col("oracle_accuracy") - pl.col("best_accuracy")).alias("oracle_headroom"))
        .sort(by)
    )
