"""What a rerun needs from a results directory, read in one pass: done keys, attempts, answer fingerprints."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from engine.results.schema import KEY_COLUMNS
from engine.results.store import _foreign, naming_corrupt_shards, scan_results

__all__ = ["Committed", "Key", "read_committed"]

Key = tuple[str, str, str, str]


@dataclass
class Committed:
    """The committed state of one sweep in its results directory."""

    done: set[Key] = field(default_factory=set)
    """Keys with an ok row: a rerun skips them."""
    attempts: dict[Key, int] = field(default_factory=dict)
    """Highest attempt recorded per key, errors included."""
    fingerprints: dict[Key, str | None] = field(default_factory=dict)
    """Per done key, the answer fingerprint of its latest ok row (None: written before fingerprints existed)."""
    foreign: list[Path] = field(default_factory=list)
    """Shards holding rows of another sweep (never counted as done)."""


def read_committed(out_dir: str | Path, sweep_id: str) -> Committed:
    """The committed keys of `sweep_id` in `out_dir`: every shard footer checked once, one collect.

    Raises:
        CorruptShardError: naming an unreadable shard.
    """
    rows = scan_results(out_dir).filter(pl.col("sweep_id") == sweep_id)
    ok = pl.col("status") == "ok"
    with naming_corrupt_shards(out_dir):
        df = (
            rows.group_by(KEY_COLUMNS)
            .agg(pl.col("attempt").max().alias("attempt"), ok.any().alias("ok"),
                 pl.col("answer_fingerprint").filter(ok).sort_by(pl.col("finished_at").filter(ok)).last()
                 .alias("fingerprint"))
            .collect()
        )
    out = Committed(foreign=_foreign(out_dir, sweep_id))  # footers checked above
    for *key, attempt, is_ok, fp in df.iter_rows():
        k: Key = tuple(key)  # type: ignore[assignment]
        out.attempts[k] = int(attempt or 0)
        if is_ok:
            out.done.add(k)
            out.fingerprints[k] = fp
    return out
