"""Every rate of a group as one tidy table (metric, key, value), with paired bootstrap intervals.

Base rates are ``sum_i num_i / sum_i den_i`` over items (`engine.metrics.features`);
derived ones follow from them: ``best_fixed`` = max fixed accuracy, ``oracle_headroom``
= oracle - best fixed, ``net`` = rescue - harm, ``churn`` = rescue + harm (consecutive
transitions), ``generation_best_score`` = max mean score, ``generation_oracle_gap`` =
oracle score - best score. All values are fractions; a rate whose denominator is 0 is null.

The tidy form serves per-category splits (``by=[*GROUP, "task_type"]``) and the paired
bootstrap with the very same definitions. The bootstrap resamples items within each
group (each track separately). Items with identical (num, den) vectors are pooled into
types first, so a replicate costs one weighted sum per type, not per item.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import polars as pl

from engine.metrics.bootstrap import REP, count_matrices, percentile_interval
from engine.metrics.features import correct_features, metric_order, score_features
from engine.metrics.grid import GROUP, group_chunks, in_groups
from engine.metrics.options import DEFAULT_EPS
from engine.metrics.registry import registered_metrics

__all__ = ["aggregate_features", "rate_intervals", "rate_table"]

_KEYS = ["metric", "key", "korder"]
BOOTSTRAP_CHUNK_ROWS = 250_000
"""Rows of the matched frames whose groups' intervals are computed at a time (`rate_intervals`)."""


def _ratio(frame: pl.LazyFrame) -> pl.LazyFrame:
    return frame.with_columns(pl.when(pl.col("den") > 0).then(pl.col("num") / pl.col("den")).alias("value"))


def _derived(base: pl.LazyFrame, by: list[str]) -> list[pl.LazyFrame]:
    """The rates each registered metric derives from the base rates (`engine.metrics.registry.Metric.derived`)."""
    frames = [f for metric in registered_metrics() if metric.derived is not None for f in metric.derived(base, by)]
    return [f.select([*by, *_KEYS, "value"]) for f in frames]


def aggregate_features(features: pl.LazyFrame, by: Sequence[str] = GROUP, *, weight: str | None = None) -> pl.LazyFrame:
    """Rates from per-item (num, den) features, plus the derived rates.

    Args:
        features: *by, item-or-type rows with metric, key, korder, num, den.
        by: Group keys.
        weight: Column holding each row's multiplicity (bootstrap counts); None: 1.

    Returns:
        *by, metric, key, korder, value; in metric order, then key order.
    """
    by = list(by)
    w = pl.col(weight) if weight else pl.lit(1.0)
    base = _ratio(features.group_by([*by, *_KEYS]).agg((w * pl.col("num")).sum().alias("num"),
                                                       (w * pl.col("den")).sum().alias("den")))
    base = base.select([*by, *_KEYS, "value"])
    names = metric_order()
    order = pl.DataFrame({"metric": list(names), "_m": list(range(len(names)))},
                         schema={"metric": pl.String, "_m": pl.Int64}).lazy()
    return (
        pl.concat([base, *_derived(base, by)], how="vertical_relaxed")
        .join(order, on="metric", how="left")
        .sort([*by, "_m", "korder", "key"], nulls_last=True)
        .drop("_m")
    )


def _features(m: pl.LazyFrame | None, alt: pl.LazyFrame | None, m_score: pl.LazyFrame | None,
              by: list[str], eps: float) -> list[pl.LazyFrame]:
    out = []
    if m is not None:
        out.append(correct_features(m, alt, by))
    if m_score is not None:
        out.append(score_features(m_score, by, eps=eps))
    return out


def rate_table(m: pl.LazyFrame | None, *, alt: pl.LazyFrame | None = None, m_score: pl.LazyFrame | None = None,
               by: Sequence[str] = GROUP, eps: float = DEFAULT_EPS) -> pl.LazyFrame:
    """All rates of each group in tidy form.

    Args:
        m: Matched long frame, correctness track (None to skip).
        alt: `engine.metrics.regression.alternate_rows`, for sampling recovery (None to skip).
        m_score: Matched long frame, score track (None to skip the generation rates).
        by: Group keys.
        eps: Score-regression tolerance.

    Returns:
        *by, metric, key ("" for single values), value.
    """
    by = list(by)
    parts = [aggregate_features(f, by) for f in _features(m, alt, m_score, by, eps)]
    if not parts:
        return pl.LazyFrame(schema={**dict.fromkeys(by, pl.String), "metric": pl.String, "key": pl.String,
                                    "value": pl.Float64})
    return pl.concat(parts, how="vertical_relaxed").drop("korder")


def _cells(features: pl.LazyFrame, by: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Collect the per-item features once, with small integer ids for groups (_g) and features (_f)."""
    ids = features.with_columns(pl.struct(by).rank("dense").cast(pl.Int64).alias("_g"),
                                pl.struct(_KEYS).rank("dense").cast(pl.Int64).alias("_f")).collect()
    names = ids.select("_g", "_f", *by, *_KEYS).unique(subset=["_g", "_f"])
    cells = ids.select("_g", "item_id", "_f", "num", "den").with_columns(
        (pl.col("item_id").rank("dense").over("_g") - 1).cast(pl.Int64).alias("_idx"))
    return cells, names


def _group_sums(cells: pl.DataFrame, n_boot: int, seed: int, chunk: int) -> Iterator[pl.DataFrame]:
    """One group's (num, den) sums per replicate and feature, `chunk` replicates at a time.

    Items with equal features are pooled into types; a replicate's sums are its type counts
    times the types' (num, den): one small matrix product per chunk. A feature no drawn item
    has is absent from that replicate (as if the rows had been resampled).
    """
    n = int(cells["_idx"].to_numpy().max()) + 1
    feats, f_local = np.unique(cells["_f"].to_numpy(), return_inverse=True)
    idx = cells["_idx"].to_numpy()
    num, den, has = (np.zeros((n, feats.size)) for _ in range(3))
    num[idx, f_local], den[idx, f_local], has[idx, f_local] = cells["num"].to_numpy(), cells["den"].to_numpy(), 1.0
    per_type, type_of = np.unique(np.hstack([num, den, has]), axis=0, return_inverse=True)
    t_num, t_den, t_has = np.split(per_type, 3, axis=1)
    for r0, counts in count_matrices(type_of.ravel(), per_type.shape[0], n_boot, seed, chunk):
        present = (counts @ t_has).ravel() > 0
        reps = np.repeat(np.arange(r0, r0 + counts.shape[0], dtype=np.int64), feats.size)
        yield pl.DataFrame({REP: reps[present], "_f": np.tile(feats, counts.shape[0])[present],
                            "num": (counts @ t_num).ravel()[present], "den": (counts @ t_den).ravel()[present]})


def _group_replicates(cells: pl.DataFrame, names: pl.DataFrame, by: list[str], n_boot: int, seed: int,
                      chunk: int) -> pl.DataFrame:
    """Every replicate's rates for one group: *by, _rep, metric, key, korder, value."""
    g = cells["_g"][0]
    sums = pl.concat(list(_group_sums(cells, n_boot, seed, chunk)))
    labelled = sums.lazy().join(names.lazy().filter(pl.col("_g") == g).drop("_g"), on="_f").drop("_f")
    return aggregate_features(labelled, [*by, REP]).collect()


def _no_replicates(features: pl.LazyFrame) -> pl.LazyFrame:
    return features.clear().with_columns(pl.lit(0, pl.Int64).alias(REP)).drop("item_id")


def _replicates(features: pl.LazyFrame, by: list[str], n_boot: int, seed: int, chunk: int = 64) -> pl.LazyFrame:
    """The rates of every bootstrap replicate (the draws of `engine.metrics.bootstrap`)."""
    cells, names = _cells(features, by)
    parts = [_group_replicates(c, names, by, n_boot, seed, chunk) for c in cells.partition_by("_g")]
    return pl.concat(parts).lazy() if parts else aggregate_features(_no_replicates(features), [*by, REP])


def _intervals(features: pl.LazyFrame, by: list[str], n_boot: int, seed: int, level: float,
               chunk: int = 64) -> pl.DataFrame:
    """Percentile intervals, group by group: memory follows one group's replicates, not all of them."""
    cells, names = _cells(features, by)
    keys = [*by, *_KEYS]
    parts = [percentile_interval(_group_replicates(c, names, by, n_boot, seed, chunk).lazy(), keys, "value",
                                 level).collect() for c in cells.partition_by("_g")]
    if parts:
        return pl.concat(parts)
    return percentile_interval(aggregate_features(_no_replicates(features), [*by, REP]), keys, "value", level).collect()


def rate_intervals(m: pl.LazyFrame | None, *, alt: pl.LazyFrame | None = None, m_score: pl.LazyFrame | None = None,
                   n_boot: int = 1000, seed: int = 0, level: float = 0.95, by: Sequence[str] = GROUP,
                   eps: float = DEFAULT_EPS) -> pl.LazyFrame:
    """Paired bootstrap percentile intervals for every rate of `rate_table`.

    The plan reads its inputs many times: pass materialized frames (``m.collect().lazy()``,
    as `engine.metrics.summary.summary_tables` does), not a scan that recomputes the
    matched grid on every read.

    Returns:
        *by, metric, key, value (estimate on all items), lo, hi, n_boot (replicates with a value).
    """
    by = list(by)
    keys = [*by, *_KEYS]
    # a chunk of groups at a time (the per-item features of every group at once are the audit's largest
    # table); the draws are group-local, so the chunks give the one-pass intervals. Chunks follow the
    # output's order only when `by` starts with the group keys: otherwise one chunk.
    chunked = by[:len(GROUP)] == GROUP
    chunks = group_chunks([m, alt, m_score], BOOTSTRAP_CHUNK_ROWS) if chunked else [None]
    per_set: list[list[pl.DataFrame]] = []
    for chunk in chunks:
        m_, alt_, score_ = (f if f is None or chunk is None else in_groups(f, chunk) for f in (m, alt, m_score))
        for i, feats in enumerate(_features(m_, alt_, score_, by, eps)):
            feats = feats.collect().lazy()
            ci = _intervals(feats, by, n_boot, seed, level).lazy()
            est = aggregate_features(feats, by).join(ci, on=keys, how="left", nulls_equal=True,
                                                     maintain_order="left").collect()
            if len(per_set) <= i:
                per_set.append([])
            per_set[i].append(est)
    if not per_set:
        return rate_table(None, by=by).with_columns(
            pl.lit(None, pl.Float64).alias("lo"), pl.lit(None, pl.Float64).alias("hi"),
            pl.lit(None, pl.Int64).alias("n_boot"))
    return pl.concat([pl.concat(frames, how="vertical_relaxed") for frames in per_set],
                     how="vertical_relaxed").drop("korder").lazy()
