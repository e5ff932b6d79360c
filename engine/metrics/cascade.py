"""Confidence cascade simulated from a sweep.

Stages b1 < b2 < ... (budget ids, run in cost order): an item stops at the first stage
whose confidence >= tau (a null confidence never stops it) and at the last stage
otherwise; its answer is that stage's. Cost per item: frames processed = the sum of
the visited stages' frames sent; unique frames decoded = the size of the union of the
visited stages' ``frame_indices`` (frames shared between stages counted once; null
when a visited visual stage recorded no indices).

Build `m` with ``matched(rows, budgets=stages)`` so every item has every stage.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from engine.metrics.grid import GROUP

__all__ = [
    "DEFAULT_TAUS", "cascade_curve", "cascade_items", "cascade_prefixes", "fixed_cost", "match_fixed", "pareto_front",
]

DEFAULT_TAUS: tuple[float, ...] = tuple(round(0.05 * i, 2) for i in range(21))


def _taus(taus: Sequence[float]) -> pl.LazyFrame:
    return pl.LazyFrame({"tau": [float(t) for t in taus]}, schema={"tau": pl.Float64})


def cascade_prefixes(m: pl.LazyFrame, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """What stopping at each stage means for each item: its answer there and the cost so far.

    Unique frames up to stage s = #{frame index whose first stage is <= s}, so each stage's
    indices are exploded once, not once per tau.

    Returns:
        *by, item_id, rank, stop_budget, correct, frames (processed up to here), unique_frames
        (decoded up to here; null when a visited visual stage lacks indices), stages (visited).
    """
    keys = [*list(by), "item_id"]
    known = ((pl.col("n_frames") == 0) | (pl.col("frame_indices").list.len() > 0).fill_null(False)).cast(pl.Int8)
    # an integer item key: the exploded frame indices are many, the items few
    m = m.with_columns(pl.struct(keys).rank("dense").cast(pl.Int64).alias("_k"))
    first_seen = (
        m.select("_k", "rank", "frame_indices").explode("frame_indices").drop_nulls("frame_indices")
        .group_by(["_k", "frame_indices"]).agg(pl.col("rank").min())
        .group_by(["_k", "rank"]).agg(pl.len().cast(pl.Int64).alias("_new"))
    )

    def running(e: pl.Expr) -> pl.Expr:
        return e.cum_sum().over(keys, order_by="rank")

    return (
        m.select([*keys, "_k", "rank", "budget_id", "c", "n_frames", known.alias("_known")])
        .join(first_seen, on=["_k", "rank"], how="left")
        .with_columns(
            pl.col("budget_id").alias("stop_budget"), pl.col("c").alias("correct"),
            running(pl.col("n_frames")).cast(pl.Int64).alias("frames"),
            pl.when(pl.col("_known").cum_min().over(keys, order_by="rank") == 1)
            .then(running(pl.col("_new").fill_null(0))).cast(pl.Int64).alias("unique_frames"),
            pl.col("rank").rank("ordinal").over(keys).cast(pl.Int64).alias("stages"),
        )
        .select([*keys, "rank", "stop_budget", "correct", "frames", "unique_frames", "stages"])
    )


def cascade_items(m: pl.LazyFrame, taus: Sequence[float] = DEFAULT_TAUS, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Each item's cascade outcome for each tau.

    Returns:
        *by, item_id, tau, stop_budget, correct, frames, unique_frames, stages.
    """
    keys = [*list(by), "item_id"]
    confident = pl.when(pl.col("confidence") >= pl.col("tau")).then(pl.col("rank"))
    stops = (
        m.select([*keys, "rank", "confidence"]).join(_taus(taus), how="cross")
        .group_by([*keys, "tau"]).agg(pl.coalesce(confident.min(), pl.col("rank").max()).alias("rank"))
    )
    return (
        stops.join(cascade_prefixes(m, by), on=[*keys, "rank"], how="inner", nulls_equal=True)
        .select([*keys, "tau", "stop_budget", "correct", "frames", "unique_frames", "stages"])
        .sort([*keys, "tau"])
    )


def cascade_curve(m: pl.LazyFrame, taus: Sequence[float] = DEFAULT_TAUS, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Accuracy and cost of the cascade for each tau.

    Args:
        m: Matched long frame restricted to the stages (correctness track).
        taus: Thresholds.
        by: Group keys.

    Returns:
        *by, tau, n_items, accuracy, mean_frames, mean_unique_frames (null when some visited
        stage lacks frame indices), mean_stages; by tau.
    """
    by = list(by)
    unique = pl.col("unique_frames")
    return (
        cascade_items(m, taus, by).group_by([*by, "tau"])
        .agg(pl.len().cast(pl.Int64).alias("n_items"), pl.col("correct").cast(pl.Float64).mean().alias("accuracy"),
             pl.col("frames").cast(pl.Float64).mean().alias("mean_frames"),
             pl.when(unique.null_count() == 0).then(unique.cast(pl.Float64).mean()).alias("mean_unique_frames"),
             pl.col("stages").cast(pl.Float64).mean().alias("mean_stages"))
        .sort([*by, "tau"])
    )


def pareto_front(curve: pl.LazyFrame, by: Sequence[str] = GROUP, *, cost: str = "mean_frames",
                 value: str = "accuracy") -> pl.LazyFrame:
    """The points of `curve` no other point beats (lower or equal cost and strictly higher value).

    Of points with equal cost and value the one with the smallest tau is kept.

    Returns:
        The front's rows of `curve`, by increasing cost.
    """
    by = list(by)
    order = [pl.col(cost), -pl.col(value), pl.col("tau")]
    prev = pl.col(value).cum_max().shift(1).over(by, order_by=order)
    return (
        curve.filter(pl.col(cost).is_not_null())
        .filter(prev.is_null() | (pl.col(value) > prev))
        .sort([*by, cost, "tau"])
    )


def fixed_cost(m: pl.LazyFrame, budget_id: str | None = None, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Accuracy and cost of one fixed budget over the matched items (the cascade's baseline).

    Args:
        m: Matched long frame.
        budget_id: The fixed budget; None: each group's dearest visual budget.
        by: Group keys.

    Returns:
        *by, fixed_budget, fixed_accuracy, fixed_frames, fixed_unique_frames (null when some row
        lacks frame indices).
    """
    by = list(by)
    unique = pl.col("frame_indices").list.n_unique()
    known = (pl.col("n_frames") == 0) | (pl.col("frame_indices").list.len() > 0).fill_null(False)
    return (
        m.filter(pl.col("budget_id") == budget_id if budget_id is not None else
                 (pl.col("rank") == pl.col("rank").max().over(by)) & ~pl.col("is_text"))
        .group_by(by)
        .agg(pl.col("budget_id").first().alias("fixed_budget"),
             pl.col("c").cast(pl.Float64).mean().alias("fixed_accuracy"),
             pl.col("n_frames").cast(pl.Float64).mean().alias("fixed_frames"),
             pl.when(known.all()).then(unique.fill_null(0).cast(pl.Float64).mean()).alias("fixed_unique_frames"))
        .sort(by)
    )


def match_fixed(curve: pl.LazyFrame, fixed: pl.LazyFrame, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """The cheapest tau whose accuracy reaches a fixed budget's, and what it saves.

    Args:
        curve: `cascade_curve` output.
        fixed: *by, fixed_budget, fixed_accuracy, fixed_frames, fixed_unique_frames (same items).
        by: Group keys.

    Returns:
        *by, fixed_budget, fixed_accuracy, fixed_frames, tau, accuracy, mean_frames, mean_unique_frames,
        frames_saved (1 - mean_frames / fixed_frames), unique_frames_saved; no row when no tau matches.
    """
    by = list(by)
    return (
        curve.join(fixed, on=by, how="inner", nulls_equal=True)
        .filter(pl.col("accuracy") >= pl.col("fixed_accuracy") - 1e-12)
        .sort([*by, "mean_frames", "tau"])
        .unique(subset=by, keep="first", maintain_order=True)
        .with_columns(  # null against a text-only (0-frame) baseline
            pl.when(pl.col("fixed_frames") > 0).then(1 - pl.col("mean_frames") / pl.col("fixed_frames"))
            .alias("frames_saved"),
            pl.when(pl.col("fixed_unique_frames") > 0)
            .then(1 - pl.col("mean_unique_frames") / pl.col("fixed_unique_frames")).alias("unique_frames_saved"),
        )
        .select([*by, "fixed_budget", "fixed_accuracy", "fixed_frames", "tau", "accuracy", "mean_frames",
                 "mean_unique_frames", "frames_saved", "unique_frames_saved"])
    )
