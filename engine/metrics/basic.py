"""Fixed accuracy per budget and rescue/harm flows between budgets (matched items only).

The compact entry points used by the demo table. Each function takes a LazyFrame of
result rows (one per key, e.g. `engine.results.ResultsDir.open(dir).rows()`) and
returns a LazyFrame; the definitions live in `engine.metrics.grid` (matched grid),
`engine.metrics.oracle` and `engine.metrics.flows`.
"""

from __future__ import annotations

import polars as pl

from engine.metrics.flows import transitions as _transitions
from engine.metrics.grid import GROUP, matched
from engine.metrics.oracle import fixed_accuracy as _fixed_accuracy

__all__ = ["fixed_accuracy", "transitions"]


def fixed_accuracy(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Accuracy per (model, dataset, protocol chain, budget) over the matched items, in cost order.

    Returns:
        model_id, dataset, protocol_id, budget_id, n_items, accuracy, frames, budget_rank (place in the chain).
    """
    return _fixed_accuracy(matched(rows)).select(
        [*GROUP, "budget_id", pl.col("n_items").cast(pl.UInt32), "accuracy", pl.col("frames").cast(pl.Int32),
         pl.col("rank").alias("budget_rank")])


def transitions(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Rescue, harm, net and churn for each consecutive budget pair (g -> h) of each chain.

    Returns:
        model_id, dataset, protocol_id, from, to, rescue, harm, n, net, churn.
    """
    return _transitions(matched(rows))
