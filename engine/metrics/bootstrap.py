"""Paired bootstrap over items, in Polars.

Resampling is over *items* within each group, and every budget of a drawn item comes
with it, so paired quantities (flows, oracle minus best fixed, ...) keep their
pairing. Replicate r draws n items with replacement: draw j of replicate r is item
number ``splitmix64(r * n + j + splitmix64(seed)) mod n`` (64-bit wrapping arithmetic)
of the group's items in item-id order, so the draws depend on the seed only, not on
the Polars version. A resampled
frame replaces ``item_id`` by the draw number and carries the replicate in ``_rep``,
so any metric function run with ``by=[*by, "_rep"]`` yields one value per replicate.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import polars as pl

from engine.metrics.grid import GROUP

__all__ = ["REP", "count_matrices", "draws", "percentile_interval", "resample", "splitmix64"]

REP = "_rep"


def _indexed(m: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
    """Distinct items of `m` with ``_idx`` = their position in item-id order within the group."""
    return m.select([*by, "item_id"]).unique().with_columns(
        (pl.col("item_id").rank("dense").over(by) - 1).cast(pl.Int64).alias("_idx"))


_MASK = (1 << 64) - 1


def splitmix64(x: int) -> int:
    """SplitMix64 of a 64-bit integer (the reference for `_splitmix64`)."""
    z = (x + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


_C = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB))


def _splitmix64_np(z: np.ndarray) -> np.ndarray:
    """SplitMix64 on a uint64 array (numpy's uint64 arithmetic wraps, as in the reference)."""
    z = z + _C[0]
    z = (z ^ (z >> np.uint64(30))) * _C[1]
    z = (z ^ (z >> np.uint64(27))) * _C[2]
    return z ^ (z >> np.uint64(31))


def count_matrices(type_of: np.ndarray, n_types: int, n_boot: int, seed: int = 0,
                   chunk: int = 64) -> Iterator[tuple[int, np.ndarray]]:
    """The draws of `draws` for one group, as count matrices, `chunk` replicates at a time.

    Args:
        type_of: (n,) the type of each of the group's n items, in item-id order.
        n_types: Number of types.
        n_boot: Number of replicates.
        seed: Hash seed (the same draws as `draws` with this seed).
        chunk: Replicates per matrix: memory is O(chunk x n), whatever `n_boot` is.

    Yields:
        (first replicate, counts) with counts (replicates, n_types) float64: how many times
        each type is drawn in each replicate of the chunk.
    """
    n = int(type_of.size)
    if n == 0:
        return
    j = np.arange(n, dtype=np.uint64)
    base = np.uint64(splitmix64(seed))
    for r0 in range(0, n_boot, chunk):
        reps = np.arange(r0, min(n_boot, r0 + chunk), dtype=np.uint64)
        counter = reps[:, None] * np.uint64(n) + j[None, :] + base
        idx = (_splitmix64_np(counter) % np.uint64(n)).astype(np.int64)
        cells = np.arange(reps.size, dtype=np.int64)[:, None] * n_types + type_of[idx]
        counts = np.bincount(cells.ravel(), minlength=reps.size * n_types).reshape(reps.size, n_types)
        yield r0, counts.astype(np.float64)


def _splitmix64(x: pl.Expr) -> pl.Expr:
    """SplitMix64 on a UInt64 expression (wrapping arithmetic, as in the reference)."""
    def mul(e: pl.Expr, k: int) -> pl.Expr:
        return e * pl.lit(k, dtype=pl.UInt64)

    z = x + pl.lit(0x9E3779B97F4A7C15, dtype=pl.UInt64)
    z = mul(z ^ (z // (1 << 30)), 0xBF58476D1CE4E5B9)
    z = mul(z ^ (z // (1 << 27)), 0x94D049BB133111EB)
    return z ^ (z // (1 << 31))


def _picks(sizes: pl.LazyFrame, keys: list[str], n_boot: int, seed: int) -> pl.LazyFrame:
    """(keys, _rep, _draw, _idx): n draws per replicate for each group of size ``_n``."""
    n = pl.col("_n").cast(pl.UInt64)
    counter = pl.col(REP).cast(pl.UInt64) * n + pl.col("_draw").cast(pl.UInt64) + pl.lit(splitmix64(seed),
                                                                                          dtype=pl.UInt64)
    return (
        sizes.with_columns(pl.int_ranges(0, n_boot).alias(REP)).explode(REP)
        .with_columns(pl.int_ranges(0, pl.col("_n")).alias("_draw")).explode("_draw")
        .with_columns((_splitmix64(counter) % n).cast(pl.Int64).alias("_idx"))
        .select([*keys, REP, "_draw", "_idx"])
    )


def draws(m: pl.LazyFrame, n_boot: int, seed: int = 0, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """The bootstrap draws of the items of `m`, per group.

    Args:
        m: Any frame with the `by` columns and item_id (e.g. the matched long frame).
        n_boot: Number of replicates.
        seed: Hash seed.
        by: Group keys; items are resampled within each group.

    Returns:
        *by, _rep, _draw, item_id: one row per draw.
    """
    by = list(by)
    items = _indexed(m, by)
    picks = _picks(items.group_by(by).agg(pl.len().cast(pl.Int64).alias("_n")), by, n_boot, seed)
    return (
        picks.join(items, on=[*by, "_idx"], how="inner", nulls_equal=True)
        .select([*by, REP, "_draw", "item_id"])
        .sort([*by, REP, "_draw"])
    )


def resample(frame: pl.LazyFrame, picks: pl.LazyFrame, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """`frame`'s rows repeated once per draw of their item, ``item_id`` replaced by the draw.

    Args:
        frame: Rows keyed by (*by, item_id) (several rows per item are fine).
        picks: `draws` output for the same groups.
        by: Group keys used for the draws.
    """
    return (
        frame.join(picks, on=[*list(by), "item_id"], how="inner", nulls_equal=True)
        .with_columns(pl.col("_draw").cast(pl.String).alias("item_id"))
        .drop("_draw")
    )


def percentile_interval(replicates: pl.LazyFrame, keys: Sequence[str], value: str = "value",
                        level: float = 0.95) -> pl.LazyFrame:
    """Percentile interval of `value` over the replicates, per `keys` (nulls ignored).

    Returns:
        *keys, lo, hi, n_boot (replicates with a value).
    """
    tail = (1.0 - level) / 2.0
    v = pl.col(value)
    return replicates.group_by(list(keys)).agg(
        v.quantile(tail, interpolation="linear").alias("lo"),
        v.quantile(1.0 - tail, interpolation="linear").alias("hi"),
        v.count().cast(pl.Int64).alias("n_boot"),
    )
