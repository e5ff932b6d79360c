"""Per-video low-level statistics beside the result rows: ``OUT/video_stats/part-*.parquet``.

The sweep computes each video's statistics where its frames are decoded (`engine.frames.stats`) and
keeps one row per (dataset, video_id) and pass here, in the results directory's ``video_stats`` table
(`engine.results.tables.VIDEO_STATS`): its shards are named, written (page checksums, temp file, fsync,
rename, only while the directory's lock is still the writer's), footer-checked, compacted and quarantined
by `framesweep doctor` exactly as result shards are, so a reader (a sweep still running included) sees a
shard whole or not at all, and an unreadable one is named (`CorruptShardError`), never skipped. A rerun
adds shards for the videos it decodes again; readers keep, per video, the row read from the most frames
(ties: the latest): `latest_video_stats`. `with_video_stats` joins them to result rows as
``video_<statistic>`` columns.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from engine.frames.stats import VideoStats
from engine.results.schema import VIDEO_STATS_SCHEMA
from engine.results.tables import VIDEO_STATS, shard_name, write_shard

__all__ = ["STATS_DIR", "STAT_COLUMNS", "VIDEO_STATS_SCHEMA", "VideoStatsLog", "latest_video_stats",
           "stats_row", "with_video_stats"]

STATS_DIR = VIDEO_STATS.folder
STAT_COLUMNS: tuple[str, ...] = ("duration_s", "fps", "pixels", "motion_energy", "scene_cuts", "brightness",
                                 "contrast", "static_share")
"""The statistics the metrics bin and rank by (``pixels``: the displayed width x height, the resolution)."""



def stats_row(dataset: str, video_id: str, stats: VideoStats) -> dict[str, Any]:
    """One row of the table: a video of a dataset and its statistics."""
    return {"dataset": dataset, "video_id": video_id, **stats.as_dict(), "pixels": stats.width * stats.height}


class VideoStatsLog:
    """Buffers stats rows and commits them as one shard at a time (thread-safe: rows come from the event loop,
    commits run in a worker thread).

    Args:
        out_dir: The results directory.
    """

    def __init__(self, out_dir: str | Path) -> None:
        self.folder = VIDEO_STATS.dir(out_dir)
        self._rows: list[dict[str, Any]] = []
        self._mutex = threading.Lock()
        self._token = uuid.uuid4().hex[:8]
        self._seq = 0
        self.parts_written = 0

    def add(self, rows: Iterable[dict[str, Any]]) -> None:
        with self._mutex:
            self._rows.extend(rows)

    @property
    def buffered(self) -> int:
        return len(self._rows)

    def commit(self, check_lock: Callable[[], None] | None = None) -> int:
        """Write the buffered rows as one shard (`engine.results.tables.write_shard`), `check_lock` (the store's:
        it raises when the directory's lock is no longer ours) run before and once more just before the rename;
        when it raises, the rows stay buffered and nothing is visible. Returns the rows written."""
        with self._mutex:
            rows, self._rows = self._rows, []
            if not rows:
                return 0
            try:
                if check_lock is not None:
                    check_lock()
                stamp = datetime.now(UTC)
                frame = pl.DataFrame([{**r, "written_at": stamp} for r in rows], schema=VIDEO_STATS_SCHEMA)
                self._seq += 1
                write_shard(self.folder, shard_name(self._token, self._seq), frame, check=check_lock)
            except BaseException:
                self._rows = rows + self._rows
                raise
            self.parts_written += 1
            return len(rows)


def latest_video_stats(stats: pl.LazyFrame) -> pl.LazyFrame:
    """One row per (dataset, video_id) of the table's rows: the statistics read from the most frames (ties: the
    latest written)."""
    return (
        stats.sort(["dataset", "video_id", "frames_used", "written_at"], descending=[False, False, True, True])
        .unique(subset=["dataset", "video_id"], keep="first", maintain_order=True)
    )


def with_video_stats(rows: pl.LazyFrame, stats: pl.LazyFrame) -> pl.LazyFrame:
    """`rows` with each video's statistics as ``video_<name>`` columns (`STAT_COLUMNS`; null where a video
    has none: text-only datasets, a video never decoded, rows of older sweeps), in the order of `rows`."""
    cols = [pl.col(c).alias(f"video_{c}") for c in STAT_COLUMNS]
    # the rows' own order kept: the streaming engine's unordered left join is ~3x slower on 200k rows here
    return rows.join(stats.select("dataset", "video_id", *cols), on=["dataset", "video_id"], how="left",
                     maintain_order="left")
