"""The tables of a results directory and the one way their shards are named and written.

A results directory holds three tables, each a folder of Parquet shards (``part-*.parquet``):

    results/      `RESULT_SCHEMA`: one row per job attempt (`engine.results.store.ResultStore` writes it)
    video_stats/  `VIDEO_STATS_SCHEMA`: one row per decoded video and pass (`engine.results.video_stats`)
    predictions/  `PREDICTION_SCHEMA`: one row per predictor answer (`engine.adaptive.predictions`)

Every shard of every table is written by `write_shard` (Parquet with a CRC-32 in every page header,
`engine.results.pages`; a hidden temp file, fsynced, renamed into place), named by `shard_name`
(``part-<UTC stamp to the microsecond>-<pid>-<writer token>-<sequence>.parquet``), listed by
`engine.results.shards`, footer-checked and scanned by `engine.results.store`, compacted by
`engine.results.compact` and quarantined by `engine.results.store.doctor`. Shards written before this
naming scheme (video-stats parts stamped to the second, prediction shards without a sequence number) match
``part-*.parquet`` too, so they are read, compacted and quarantined the same way.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

import polars as pl

from engine.results.pages import encode_shard
from engine.results.schema import PREDICTION_SCHEMA, RESULT_SCHEMA, VIDEO_STATS_SCHEMA
from engine.runtime.atomic import atomic_write

__all__ = ["PREDICTIONS", "RESULTS", "TABLES", "VIDEO_STATS", "Table", "compacted_name", "shard_name", "table_of",
           "write_shard"]


@dataclass(frozen=True)
class Table:
    """One table of a results directory: its folder and its schema."""

    folder: str
    """The folder under OUT holding its shards."""
    schema: Mapping[str, pl.DataType]
    what: str
    """How an error names one of its shards ("result shard", ...)."""
    per_sweep: bool
    """Whether its rows carry a ``sweep_id`` (compaction then leaves another sweep's shards as they are)."""
    lost: str
    """What a quarantined shard's rows become, after "its"/"their" ("keys are recomputed by the next run")."""

    def dir(self, out_dir: str | Path) -> Path:
        """This table's folder in the results directory `out_dir`."""
        return Path(out_dir) / self.folder


RESULTS = Table("results", RESULT_SCHEMA, "result shard", True, "keys are recomputed by the next run")
VIDEO_STATS = Table("video_stats", VIDEO_STATS_SCHEMA, "video-stats shard", False,
                    "videos' statistics are computed again when a run decodes them")
PREDICTIONS = Table("predictions", PREDICTION_SCHEMA, "prediction shard", False,
                    "answers are missing until the predictor is run again")
TABLES: tuple[Table, ...] = (RESULTS, VIDEO_STATS, PREDICTIONS)


def table_of(folder: str) -> Table:
    """The table kept in `folder` (``results``, ``video_stats`` or ``predictions``)."""
    for table in TABLES:
        if table.folder == folder:
            return table
    raise ValueError(f"no table is kept in {folder!r}; known: {', '.join(t.folder for t in TABLES)}")


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")


def shard_name(token: str, seq: int) -> str:
    """The name of a writer's `seq`-th shard: ``part-<stamp>-<pid>-<token>-<seq>.parquet`` (sorts by time)."""
    return f"part-{_stamp()}-{os.getpid()}-{token}-{seq:05d}.parquet"


def compacted_name(n: int) -> str:
    """The name of a compaction's `n`-th output (`engine.results.shards.COMPACTED_TAG` marks it)."""
    return f"part-{_stamp()}-compacted-{uuid.uuid4().hex[:8]}-{n:03d}.parquet"


def write_shard(folder: Path, name: str, frame: pl.DataFrame, *, metadata: dict[str, str] | None = None,
                check: Callable[[], None] | None = None) -> Path:
    """Write `frame` as the shard `folder/name` atomically, with page checksums.

    The shard is encoded in memory first (a full disk then fails in the write with a plain ENOSPC, not inside
    the Parquet writer), and `check` (the store's lock check) runs at the last moment before the rename makes
    it visible: when it raises, nothing becomes visible.

    Args:
        metadata: Footer key-value metadata (a compacted shard's list of the shards it holds).
    """
    encoded = encode_shard(frame, metadata)

    def write(fh: BinaryIO) -> None:
        fh.write(encoded)
        if check is not None:
            check()

    return atomic_write(folder / name, write)
