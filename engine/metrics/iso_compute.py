"""Iso-compute allocation analysis: budgets that spend the same frames x pixels differently.

An allocation's compute is ``frames * max_pixels`` (or ``frames * short_side**2``
when the budget fixes the short side; equal-aspect videos make that proportional to
pixels). Budgets of a group with equal compute form an iso-compute set when there are
at least two of them. Per set: each allocation's accuracy, per item which allocations
are best (right; when none is right all tie), the best single allocation (ties: fewer
frames) and the oracle over the set's allocations.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from engine.metrics.grid import GROUP

__all__ = ["allocation_cost", "iso_compute_allocations", "iso_compute_sets"]


def allocation_cost() -> pl.Expr:
    """frames x pixels per frame (null when the budget fixes no size, or is text-only)."""
    per_frame = pl.coalesce(pl.col("max_pixels"), pl.col("short_side").cast(pl.Int64) ** 2)
    return pl.when(pl.col("frames") > 0).then(pl.col("frames").cast(pl.Int64) * per_frame)


def _sets(m: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
    """Matched rows of budgets in an iso-compute set, with their `cost`."""
    with_cost = m.with_columns(allocation_cost().alias("cost")).filter(pl.col("cost").is_not_null())
    multi = (
        with_cost.group_by([*by, "cost"]).agg(pl.col("budget_id").n_unique().alias("_na"))
        .filter(pl.col("_na") >= 2).drop("_na")
    )
    return with_cost.join(multi, on=[*by, "cost"], how="semi", nulls_equal=True)


def iso_compute_allocations(m: pl.LazyFrame, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Per allocation of each iso-compute set: accuracy and how often it is (the only) best.

    Returns:
        *by, cost, budget_id, frames, n_items, accuracy, n_best (items it answers right),
        n_sole_best (items only it answers right); ordered by cost, then frames.
    """
    by = list(by)
    rows = _sets(m, by).with_columns(
        pl.col("c").cast(pl.Int64).sum().over([*by, "cost", "item_id"]).alias("_right"))
    return (
        rows.group_by([*by, "cost", "budget_id"])
        .agg(pl.col("frames").first(), pl.col("rank").first(), pl.len().cast(pl.Int64).alias("n_items"),
             pl.col("c").cast(pl.Float64).mean().alias("accuracy"),
             pl.col("c").sum().cast(pl.Int64).alias("n_best"),
             (pl.col("c") & (pl.col("_right") == 1)).sum().cast(pl.Int64).alias("n_sole_best"))
        .sort([*by, "cost", "frames", "rank"])
        .select([*by, "cost", "budget_id", "frames", "n_items", "accuracy", "n_best", "n_sole_best"])
    )


def iso_compute_sets(m: pl.LazyFrame, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Per iso-compute set: best single allocation against the oracle over its allocations.

    Returns:
        *by, cost, allocations (budget ids by frames), n_items, best_allocation, best_accuracy,
        oracle_accuracy, oracle_headroom, n_all_right, n_none_right.
    """
    by = list(by)
    per_item = _sets(m, by).group_by([*by, "cost", "item_id"]).agg(
        pl.col("c").any().alias("_any"), pl.col("c").all().alias("_all"))
    items = per_item.group_by([*by, "cost"]).agg(
        pl.len().cast(pl.Int64).alias("n_items"), pl.col("_any").cast(pl.Float64).mean().alias("oracle_accuracy"),
        pl.col("_all").sum().cast(pl.Int64).alias("n_all_right"),
        (~pl.col("_any")).sum().cast(pl.Int64).alias("n_none_right"))
    allocs = iso_compute_allocations(m, by)
    best = (
        allocs.sort([*by, "cost", "accuracy", "frames"], descending=[*([False] * len(by)), False, True, False])
        .unique(subset=[*by, "cost"], keep="first", maintain_order=True)
        .select([*by, "cost", pl.col("budget_id").alias("best_allocation"), pl.col("accuracy").alias("best_accuracy")])
    )
    names = allocs.group_by([*by, "cost"]).agg(pl.col("budget_id").sort_by("frames").alias("allocations"))
    keys = [*by, "cost"]
    return (
        names.join(items, on=keys, nulls_equal=True).join(best, on=keys, nulls_equal=True)
        .with_columns((pl.col("oracle_accuracy") - pl.col("best_accuracy")).alias("oracle_headroom"))
        .select([*keys, "allocations", "n_items", "best_allocation", "best_accuracy", "oracle_accuracy",
                 "oracle_headroom", "n_all_right", "n_none_right"])
        .sort(keys)
    )
