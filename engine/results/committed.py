"""What a rerun needs from a results directory, read in one pass: done keys, attempts, answer fingerprints."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from engine.results.directory import ResultsDir
from engine.results.schema import KEY_COLUMNS

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


def read_committed(results: ResultsDir) -> Committed:
    """The committed keys of the directory's own sweep (`results.sweep_id`): each shard footer checked once
    (by `results`), one collect.

    Raises:
        CorruptShardError: naming an unreadable shard.
    """
    ok = pl.col("status") == "ok"
    with results.reading():
        df = (
            results.attempts().group_by(KEY_COLUMNS)
            .agg(pl.col("attempt").max().alias("attempt"), ok.any().alias("ok"),
                 pl.col("answer_fingerprint").filter(ok).sort_by(pl.col("finished_at").filter(ok)).last()
                 .alias("fingerprint"))
            .collect()
        )
    out = Committed(foreign=results.foreign)
    for *key, attempt, is_ok, fp in df.iter_rows():
        k: Key = tuple(key)  # type: ignore[assignment]
        out.attempts[k] = int(attempt or 0)
        if is_ok:
            out.done.add(k)
            out.fingerprints[k] = fp
    return out
