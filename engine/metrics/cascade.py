"""Confidence cascade simulated from a sweep.

Stages b1 < b2 < ... (budget ids, run in cost order): an item stops at the first stage
whose confidence >= tau (a null confidence never stops it) and at the last stage
otherwise; its answer is that stage's. Cost per item: frames processed = the sum of
the visited stages' frames sent; unique frames decoded = the size of the union of the
visited stages' ``frame_indices`` (frames shared between stages counted once; null
when a visited visual stage recorded no indices).

Build `m` with ``matched(rows, budgets=stages)`` so every item has every stage.

Matching a fixed budget: `match_fixed` picks the cheapest tau whose accuracy reaches the
fixed budget's on the same items (the *in-sample* choice: tau is tuned on the items it is
scored on, so its accuracy is optimistic). `crossfit_match` chooses tau *out of sample*:
the group's items are split into k folds (`crossfit_folds`, seeded); for each fold, tau is
the cheapest one whose accuracy on the other k-1 folds reaches the fixed budget's accuracy
on those folds, and it is applied to the held-out fold. Each item is scored once, at its
own fold's tau, so the accuracy and the savings are honest estimates.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from engine.metrics.bootstrap import _splitmix64, splitmix64
from engine.metrics.grid import GROUP
from engine.metrics.options import DEFAULT_FOLDS, DEFAULT_TAUS

__all__ = [
    "DEFAULT_FOLDS", "DEFAULT_TAUS", "cascade_curve", "cascade_items", "cascade_prefixes", "crossfit_folds",
    "crossfit_match", "fixed_cost", "fixed_items", "match_fixed", "pareto_front",
]


def cascade_prefixes(m: pl.LazyFrame, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """What stopping at each stage means for each item: its answer there and the cost so far.

    Unique frames up to stage s = the number of distinct indices of the stages up to s (one row per item
    and stage, as `engine.metrics.grid.matched` gives): each item's indices, concatenated in stage order, are
    marked at their first occurrence once, and the marks counted up to each stage's end, so no index is
    exploded once per tau nor hashed against every other item's.

    Returns:
        *by, item_id, rank, stop_budget, correct, frames (processed up to here), unique_frames
        (decoded up to here; null when a visited visual stage lacks indices), stages (visited).
    """
    keys = [*list(by), "item_id"]
    known = ((pl.col("n_frames") == 0) | (pl.col("frame_indices").list.len() > 0).fill_null(False)).cast(pl.Int8)
    # an integer item key: the exploded frame indices are many, the items few
    m = m.with_columns(pl.struct(keys).rank("dense").cast(pl.Int64).alias("_k"))
    indices = pl.col("_f").list.explode(keep_nulls=False, empty_as_null=False)
    first = pl.element().is_first_distinct().cast(pl.Int64).cum_sum()  # distinct indices so far, per position
    seen = (
        m.select("_k", "rank", pl.col("frame_indices").list.drop_nulls().alias("_f")).sort("_k", "rank")
        .group_by("_k").agg("rank", indices.alias("_all"), pl.col("_f").list.len().fill_null(0).cum_sum().alias("_end"))
        .select("_k", "rank", pl.concat_list(pl.lit(0, dtype=pl.Int64), pl.col("_all").list.eval(first))
                .list.gather(pl.col("_end")).alias("_seen"))  # [0, marks...] at each stage's end
        .explode("rank", "_seen")
    )

    return (
        m.select([*keys, "_k", "rank", "budget_id", "c", "n_frames", known.alias("_known")])
        .join(seen, on=["_k", "rank"], how="left")
        .with_columns(  # windows over the item's integer key: the same partitions as over `keys`
            pl.col("budget_id").alias("stop_budget"), pl.col("c").alias("correct"),
            pl.col("n_frames").cum_sum().over("_k", order_by="rank").cast(pl.Int64).alias("frames"),
            pl.when(pl.col("_known").cum_min().over("_k", order_by="rank") == 1)
            .then(pl.col("_seen")).cast(pl.Int64).alias("unique_frames"),
            pl.col("rank").rank("ordinal").over("_k").cast(pl.Int64).alias("stages"),
        )
        .select([*keys, "rank", "stop_budget", "correct", "frames", "unique_frames", "stages"])
    )


def cascade_items(m: pl.LazyFrame, taus: Sequence[float] = DEFAULT_TAUS, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Each item's cascade outcome for each tau.

    Returns:
        *by, item_id, tau, stop_budget, correct, frames, unique_frames, stages.
    """
    keys = [*list(by), "item_id"]
    grid = sorted({float(t) for t in taus})
    # Each stage's taus, as a range of positions in the sorted taus, instead of a row per (stage, tau):
    # the stage stops the taus it is confident for (tau <= confidence: positions [0, reach)) that no
    # earlier stage stopped (positions from the earlier stages' largest reach on); the last stage takes
    # every tau left. A null confidence reaches no tau.
    reach = pl.sum_horizontal([(pl.col("confidence") >= t).fill_null(False).cast(pl.Int64) for t in grid]) \
        if grid else pl.lit(0, dtype=pl.Int64)
    earlier = pl.col("_reach").cum_max().shift(1).over(keys, order_by="rank").fill_null(0)
    last = pl.col("rank") == pl.col("rank").max().over(keys)
    bounds = (
        m.select([*keys, "rank", "confidence"])
        .with_columns(reach.alias("_reach"))
        .with_columns(earlier.alias("_lo"))
        .with_columns(pl.when(last).then(pl.lit(len(grid), dtype=pl.Int64))
                      .otherwise(pl.max_horizontal("_lo", "_reach")).alias("_hi"))
        .filter(pl.col("_hi") > pl.col("_lo"))
        .select([*keys, "rank", pl.int_ranges("_lo", "_hi").alias("_j")])
    )
    return (
        bounds.join(cascade_prefixes(m, by), on=[*keys, "rank"], how="inner", nulls_equal=True)
        .explode("_j")
        .with_columns(pl.lit(pl.Series("tau", grid, dtype=pl.Float64)).gather(pl.col("_j")).alias("tau"))
        .select([*keys, "tau", "stop_budget", "correct", "frames", "unique_frames", "stages"])
        .sort([*keys, "tau"])
    )


def cascade_curve(m: pl.LazyFrame, taus: Sequence[float] = DEFAULT_TAUS, by: Sequence[str] = GROUP, *,
                  outcomes: pl.LazyFrame | None = None) -> pl.LazyFrame:
    """Accuracy and cost of the cascade for each tau.

    Args:
        m: Matched long frame restricted to the stages (correctness track).
        taus: Thresholds.
        by: Group keys.
        outcomes: `cascade_items(m, taus, by)` when already computed (it is the costly part).

    Returns:
        *by, tau, n_items, accuracy, mean_frames, mean_unique_frames (null when some visited
        stage lacks frame indices), mean_stages; by tau.
    """
    by = list(by)
    unique = pl.col("unique_frames")
    return (
        (cascade_items(m, taus, by) if outcomes is None else outcomes).group_by([*by, "tau"])
        .agg(pl.len().cast(pl.Int64).alias("n_items"), pl.col("correct").cast(pl.Float64).mean().alias("accuracy"),
             pl.col("frames").cast(pl.Float64).mean().alias("mean_frames"),
             pl.when(unique.null_count() == 0).then(unique.cast(pl.Float64).mean()).alias("mean_unique_frames"),
             pl.col("stages").cast(pl.Float64).mean().alias("mean_stages"))
        .sort([*by, "tau"])
    )


def pareto_front(curve: pl.LazyFrame, by: Sequence[str] = GROUP, *, cost: str = "mean_frames",
                 value: str = "accuracy") -> pl.LazyFrame:
    """The points of `curve` that no other point dominates: a point is kept when every other point of lower or
    equal cost has a strictly lower value (so a dearer point of the same value is dropped).

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
    unique = pl.col("fixed_unique")
    return (
        fixed_items(m, budget_id, by)
        .group_by(by)
        .agg(pl.col("fixed_budget").first(),
             pl.col("fixed_correct").cast(pl.Float64).mean().alias("fixed_accuracy"),
             pl.col("fixed_n_frames").cast(pl.Float64).mean().alias("fixed_frames"),
             pl.when(unique.null_count() == 0).then(unique.cast(pl.Float64).mean()).alias("fixed_unique_frames"))
        .sort(by)
    )


def fixed_items(m: pl.LazyFrame, budget_id: str | None = None, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Each matched item's outcome and cost at one fixed budget.

    Args:
        m: Matched long frame.
        budget_id: The fixed budget; None: each group's dearest visual budget.
        by: Group keys.

    Returns:
        *by, item_id, fixed_budget, fixed_correct, fixed_n_frames, fixed_unique (null when the row
        lacks frame indices).
    """
    by = list(by)
    known = (pl.col("n_frames") == 0) | (pl.col("frame_indices").list.len() > 0).fill_null(False)
    return (
        m.filter(pl.col("budget_id") == budget_id if budget_id is not None else
                 (pl.col("rank") == pl.col("rank").max().over(by)) & ~pl.col("is_text"))
        .select(*by, "item_id", pl.col("budget_id").alias("fixed_budget"), pl.col("c").alias("fixed_correct"),
                pl.col("n_frames").alias("fixed_n_frames"),
                pl.when(known).then(pl.col("frame_indices").list.n_unique().fill_null(0)).cast(pl.Int64)
                .alias("fixed_unique"))
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


def crossfit_folds(items: pl.LazyFrame, k: int = DEFAULT_FOLDS, seed: int = 0,
                   by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Assign each group's items to k folds of (nearly) equal size, seeded.

    Items are ordered by ``splitmix64(idx + splitmix64(seed))``, where idx is the item's
    position in item-id order within its group, and dealt round-robin: fold = position in
    that order mod k. The folds depend on the seed only, not on the Polars version.

    Args:
        items: Frame with the group keys and item_id (duplicates are dropped).
        k: Number of folds (>= 2).
        seed: Fold seed.
        by: Group keys.

    Returns:
        *by, item_id, fold (0 .. k-1).
    """
    if k < 2:
        raise ValueError(f"cross-fitting needs at least 2 folds, got {k}")
    by = list(by)
    idx = (pl.col("item_id").rank("dense").over(by) - 1).cast(pl.UInt64)
    key = _splitmix64(idx + pl.lit(splitmix64(seed), dtype=pl.UInt64))
    return (
        items.select([*by, "item_id"]).unique()
        .with_columns(key.alias("_key"))
        .with_columns(((pl.col("_key").rank("ordinal").over(by) - 1) % k).cast(pl.Int64).alias("fold"))
        .select([*by, "item_id", "fold"])
        .sort([*by, "item_id"])
    )


def _choose_tau(train: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
    """Per (group, fold): the cheapest tau reaching the fixed accuracy on the training folds.

    When no tau reaches it there, the most accurate tau is taken (the cheapest of those), and
    ``matched`` is false.
    """
    keys = [*by, "fold"]
    reaches = pl.col("train_accuracy") >= pl.col("train_fixed_accuracy") - 1e-12
    # matched taus first (cheapest, then smallest); with none matched, the most accurate (then cheapest)
    acc_key = pl.when(pl.col("matched")).then(pl.lit(0.0)).otherwise(-pl.col("train_accuracy"))
    return (
        train.with_columns(reaches.fill_null(False).alias("matched"))
        .with_columns(acc_key.alias("_acc"))
        .sort([*keys, "matched", "_acc", "train_mean_frames", "tau"],
              descending=[*([False] * len(keys)), True, False, False, False], nulls_last=True)
        .unique(subset=keys, keep="first", maintain_order=True)
        .drop("_acc")
    )


def crossfit_match(stages_m: pl.LazyFrame, m: pl.LazyFrame, fixed_budget: str | None = None,
                   taus: Sequence[float] = DEFAULT_TAUS, *, k: int = DEFAULT_FOLDS, seed: int = 0,
                   folds: pl.LazyFrame | None = None, outcomes: pl.LazyFrame | None = None,
                   by: Sequence[str] = GROUP) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """The cascade matched to a fixed budget with tau chosen out of sample (k-fold cross-fitting).

    For each fold f: tau_f = the cheapest tau (lowest mean frames processed, then smallest tau)
    whose cascade accuracy on the items of the other folds reaches the fixed budget's accuracy
    on those items; tau_f is applied to the items of fold f. When no tau reaches it on the
    training folds, the most accurate one is used (``matched`` false for that fold).

    Args:
        stages_m: Matched long frame restricted to the cascade's stages.
        m: Matched long frame holding the fixed budget (same items as `stages_m`).
        fixed_budget: The fixed budget; None: each group's dearest visual budget of `m`.
        taus: Candidate thresholds.
        k: Folds.
        seed: Fold seed (see `crossfit_folds`).
        folds: Explicit fold assignment (*by, item_id, fold) instead of `crossfit_folds`.
        outcomes: `cascade_items(stages_m, taus, by)` when already computed.
        by: Group keys.

    Returns:
        (summary, per_fold). summary: *by, k, fixed_budget, n_items, fixed_accuracy, fixed_frames,
        fixed_unique_frames, accuracy, mean_frames, mean_unique_frames, frames_saved,
        unique_frames_saved, accuracy_delta (cascade minus fixed), n_folds_matched.
        per_fold: *by, fold, n_train, n_heldout, tau, matched, train_accuracy, train_fixed_accuracy,
        train_mean_frames, heldout_accuracy.
    """
    by = list(by)
    keys = [*by, "item_id"]
    fixed = fixed_items(m, fixed_budget, by)
    # materialized once: every table below reads it (lazily, cascade_items would be recomputed per read)
    outcomes = (cascade_items(stages_m, taus, by) if outcomes is None else outcomes).collect().lazy()
    if folds is None:
        folds = crossfit_folds(outcomes, k, seed, by)
    items = outcomes.join(fixed, on=keys, how="inner", nulls_equal=True).join(
        folds.select([*keys, "fold"]), on=keys, how="inner", nulls_equal=True).collect().lazy()
    # every item of every fold but f trains the tau of fold f: the training sums are the group's totals
    # minus fold f's own, one pass over the items instead of k (the sums are of 0/1 and frame counts:
    # exact, so the means equal the direct means over the training items)
    sums = [(c, pl.col(c).cast(pl.Float64)) for c in ("correct", "fixed_correct", "frames")]
    per_fold_tau = items.group_by([*by, "fold", "tau"]).agg(
        pl.len().cast(pl.Int64).alias("_n"),
        *[e.sum().alias(f"_s_{c}") for c, e in sums], *[e.count().alias(f"_k_{c}") for c, e in sums])
    parts = ["_n", *[f"_s_{c}" for c, _ in sums], *[f"_k_{c}" for c, _ in sums]]
    totals = per_fold_tau.group_by([*by, "tau"]).agg([pl.col(x).sum().alias(f"{x}_all") for x in parts])

    def train_mean(c: str) -> pl.Expr:
        k_train = pl.col(f"_k_{c}_all") - pl.col(f"_k_{c}")
        return pl.when(k_train > 0).then((pl.col(f"_s_{c}_all") - pl.col(f"_s_{c}")) / k_train)

    train = (
        per_fold_tau.join(totals, on=[*by, "tau"], how="inner", nulls_equal=True)
        .with_columns((pl.col("_n_all") - pl.col("_n")).alias("n_train"))
        .filter(pl.col("n_train") > 0)
        .select([*by, "fold", "tau", "n_train", train_mean("correct").alias("train_accuracy"),
                 train_mean("fixed_correct").alias("train_fixed_accuracy"),
                 train_mean("frames").alias("train_mean_frames")])
    )
    chosen = _choose_tau(train, by)
    heldout = items.join(chosen.select([*by, "fold", "tau", "matched"]), on=[*by, "fold", "tau"], how="inner",
                         nulls_equal=True)
    per_fold = (
        chosen.join(heldout.group_by([*by, "fold"]).agg(
            pl.len().cast(pl.Int64).alias("n_heldout"),
            pl.col("correct").cast(pl.Float64).mean().alias("heldout_accuracy")), on=[*by, "fold"], how="left",
            nulls_equal=True)
        .select([*by, "fold", "n_train", pl.col("n_heldout").fill_null(0), "tau", "matched", "train_accuracy",
                 "train_fixed_accuracy", "train_mean_frames", "heldout_accuracy"])
        .sort([*by, "fold"])
    )
    unique, fixed_unique = pl.col("unique_frames"), pl.col("fixed_unique")
    summary = (
        heldout.group_by(by)
        .agg(pl.col("fixed_budget").first(), pl.len().cast(pl.Int64).alias("n_items"),
             pl.col("fixed_correct").cast(pl.Float64).mean().alias("fixed_accuracy"),
             pl.col("fixed_n_frames").cast(pl.Float64).mean().alias("fixed_frames"),
             pl.when(fixed_unique.null_count() == 0).then(fixed_unique.cast(pl.Float64).mean())
             .alias("fixed_unique_frames"),
             pl.col("correct").cast(pl.Float64).mean().alias("accuracy"),
             pl.col("frames").cast(pl.Float64).mean().alias("mean_frames"),
             pl.when(unique.null_count() == 0).then(unique.cast(pl.Float64).mean()).alias("mean_unique_frames"))
        .join(per_fold.group_by(by).agg(pl.col("matched").sum().cast(pl.Int64).alias("n_folds_matched")),
              on=by, how="left", nulls_equal=True)
        .with_columns(
            pl.lit(k, dtype=pl.Int64).alias("k"),
            pl.when(pl.col("fixed_frames") > 0).then(1 - pl.col("mean_frames") / pl.col("fixed_frames"))
            .alias("frames_saved"),
            pl.when(pl.col("fixed_unique_frames") > 0)
            .then(1 - pl.col("mean_unique_frames") / pl.col("fixed_unique_frames")).alias("unique_frames_saved"),
            (pl.col("accuracy") - pl.col("fixed_accuracy")).alias("accuracy_delta"),
        )
        .select([*by, "k", "fixed_budget", "n_items", "fixed_accuracy", "fixed_frames", "fixed_unique_frames",
                 "accuracy", "mean_frames", "mean_unique_frames", "frames_saved", "unique_frames_saved",
                 "accuracy_delta", "n_folds_matched"])
        .sort(by)
    )
    return summary, per_fold
