"""Paired bootstrap over items: the draws, counted per item type, and percentile intervals.

Resampling is over *items* within each group, and every budget of a drawn item comes
with it, so paired quantities (flows, oracle minus best fixed, ...) keep their
pairing. Replicate r draws n items with replacement: draw j of replicate r is item
number ``splitmix64(r * n + j + splitmix64(seed)) mod n`` (64-bit wrapping arithmetic)
of the group's items in item-id order, so the draws depend on the seed only, not on
the Polars version. The metrics never build resampled rows: `count_matrices` counts how
often each type of item is drawn in each replicate (the tests check it against resampling
the rows themselves). `_splitmix64` is the same hash as a Polars expression.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import polars as pl

__all__ = ["REP", "count_matrices", "percentile_interval", "splitmix64"]

REP = "_rep"

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
    """One group's draws (defined above), as count matrices, `chunk` replicates at a time.

    Args:
        type_of: (n,) the type of each of the group's n items, in item-id order.
        n_types: Number of types.
        n_boot: Number of replicates.
        seed: Hash seed.
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
