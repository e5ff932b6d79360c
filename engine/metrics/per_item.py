"""Per-item rows of a rate: the unit of the bootstrap and of the category splits.

A rate of `engine.metrics.rates` is ``sum_i num_i / sum_i den_i`` over the matched items of
a group. A metric declares its rates' per-item ``(num, den)`` (`Metric.features`) with `feature`,
and the rates derived from those (`Metric.derived`) with `rate_of`.
"""

from __future__ import annotations

import polars as pl

__all__ = ["ALL_ORDER", "ANY_ORDER", "arrow", "feature", "pair_order", "rate_of", "single_rates"]

ANY_ORDER, ALL_ORDER = 1 << 40, (1 << 40) + 1
"""Key order of "any"/"all": after every budget."""


def feature(frame: pl.LazyFrame, by: list[str], metric: str, num: pl.Expr, den: pl.Expr | float = 1.0,
            key: pl.Expr | str = "", korder: pl.Expr | int = 0) -> pl.LazyFrame:
    """*by, item_id, metric, key, korder, num, den: one row per row of `frame`."""
    def lit(v: object) -> pl.Expr:
        return v if isinstance(v, pl.Expr) else pl.lit(v)

    return frame.select(
        *by, "item_id", pl.lit(metric).alias("metric"), lit(key).cast(pl.String).alias("key"),
        lit(korder).cast(pl.Int64).alias("korder"), num.cast(pl.Float64).alias("num"),
        lit(den).cast(pl.Float64).alias("den"),
    )


def arrow() -> pl.Expr:
    """A transition's key, ``from->to``."""
    return pl.concat_str([pl.col("from"), pl.lit("->"), pl.col("to")])


def pair_order() -> pl.Expr:
    """A transition's key order: by its from budget, then its to budget."""
    return pl.col("rank_from") * 4096 + pl.col("rank_to")


def rate_of(metric: str) -> pl.Expr:
    """The value of rate `metric`, inside an aggregation over tidy (metric, key, value) rows.

    The filter stays inside the aggregation: a filter on the rates' frame would be pushed below it
    and duplicate the whole (bootstrap) pipeline once per derived rate.
    """
    return pl.col("value").filter(pl.col("metric") == metric)


def single_rates(scalars: pl.LazyFrame, by: list[str], names: list[str]) -> pl.LazyFrame:
    """Derived rates without a key: the columns `names` of `scalars` (one row per group) as tidy rows
    (*by, metric, value, key "", korder 0), those that are null left out."""
    return (
        scalars.unpivot(index=by, on=names, variable_name="metric", value_name="value")
        .filter(pl.col("value").is_not_null())
        .with_columns(pl.lit("").alias("key"), pl.lit(0, dtype=pl.Int64).alias("korder"))
    )
