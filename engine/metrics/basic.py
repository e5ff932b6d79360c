"""Fixed accuracy per budget and rescue/harm flows between budgets (matched items only).

Each function takes a LazyFrame of result rows (one per key, e.g.
`store.latest_rows(store.scan_results(dir))`) and returns a LazyFrame.
"""

from __future__ import annotations

import polars as pl

__all__ = ["budget_order", "complete_items", "fixed_accuracy", "transitions"]

GROUP = ["model_id", "dataset"]


def budget_order(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Budgets per (model, dataset) in cost order: text-only first, then frames, then pixels."""
    return (
        rows.group_by([*GROUP, "budget_id"])
        .agg(pl.col("frames").first(), pl.col("pixels_total").max().fill_null(0).alias("_px"))
        .sort([*GROUP, "frames", "_px", "budget_id"])
        .with_columns(pl.int_range(pl.len()).over(GROUP).alias("budget_rank"))
        .drop("_px")
    )


def complete_items(rows: pl.LazyFrame) -> pl.LazyFrame:
    """ok MCQ rows of items that have an ok result at every budget of their group's grid."""
    ok = rows.filter((pl.col("status") == "ok") & pl.col("correct").is_not_null())
    n_budgets = rows.group_by(GROUP).agg(pl.col("budget_id").n_unique().alias("_nb"))
    per_item = ok.group_by([*GROUP, "item_id"]).agg(pl.col("budget_id").n_unique().alias("_ni"))
    keep = per_item.join(n_budgets, on=GROUP).filter(pl.col("_ni") == pl.col("_nb")).select([*GROUP, "item_id"])
    return ok.join(keep, on=[*GROUP, "item_id"])


def fixed_accuracy(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Accuracy per (model, dataset, budget) over the matched items, in cost order."""
    done = complete_items(rows)
    return (
        done.group_by([*GROUP, "budget_id"])
        .agg(pl.len().alias("n_items"), pl.col("correct").mean().alias("accuracy"))
        .join(budget_order(rows), on=[*GROUP, "budget_id"])
        .sort([*GROUP, "budget_rank"])
    )


def transitions(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Rescue, harm, net and churn for each consecutive budget pair (g -> h) of each group."""
    done = complete_items(rows).join(budget_order(rows), on=[*GROUP, "budget_id"])
    a = done.select([*GROUP, "item_id", "budget_rank", pl.col("budget_id").alias("from"), pl.col("correct").alias("c_g")])
    b = done.select([*GROUP, "item_id", (pl.col("budget_rank") - 1).alias("budget_rank"),
                     pl.col("budget_id").alias("to"), pl.col("correct").alias("c_h")])
    return (
        a.join(b, on=[*GROUP, "item_id", "budget_rank"])
        .group_by([*GROUP, "budget_rank", "from", "to"])
        .agg(
            (~pl.col("c_g") & pl.col("c_h")).sum().cast(pl.Int64).alias("rescue"),
            (pl.col("c_g") & ~pl.col("c_h")).sum().cast(pl.Int64).alias("harm"),
            pl.len().cast(pl.Int64).alias("n"),
        )
        .with_columns(
            ((pl.col("rescue") - pl.col("harm")) / pl.col("n")).alias("net"),
            ((pl.col("rescue") + pl.col("harm")) / pl.col("n")).alias("churn"),
        )
        .sort([*GROUP, "budget_rank"])
        .drop("budget_rank")
    )
