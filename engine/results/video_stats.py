"""Per-video low-level statistics beside the result rows: ``OUT/video_stats/part-*.parquet``.

The sweep computes each video's statistics where its frames are decoded (`engine.frames.stats`) and
keeps one row per (dataset, video_id) here, committed like result shards: a part is written to a hidden
temp file, fsynced and renamed into place (`engine.runtime.atomic`), only while the directory's lock is
still the writer's, so a reader (a sweep still running included) sees a part whole or not at all. A rerun
adds parts for the videos it decodes again; readers keep, per video, the row read from the most frames
(ties: the latest). `with_video_stats` joins them to result rows as ``video_<statistic>`` columns.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from engine.frames.stats import VideoStats
from engine.results.store import not_a_regular_file
from engine.runtime.atomic import atomic_write

__all__ = ["STATS_DIR", "STAT_COLUMNS", "VIDEO_STATS_SCHEMA", "VideoStatsLog", "scan_video_stats", "stats_row",
           "with_video_stats"]

log = logging.getLogger(__name__)

STATS_DIR = "video_stats"
STAT_COLUMNS: tuple[str, ...] = ("duration_s", "fps", "pixels", "motion_energy", "scene_cuts", "brightness",
                                 "contrast", "static_share")
"""The statistics the metrics bin and rank by (``pixels``: the displayed width x height, the resolution)."""

VIDEO_STATS_SCHEMA: dict[str, pl.DataType] = {
    "dataset": pl.String(), "video_id": pl.String(), "duration_s": pl.Float64(), "fps": pl.Float64(),
    "width": pl.Int32(), "height": pl.Int32(), "pixels": pl.Int64(), "n_frames": pl.Int32(),
    "frames_used": pl.Int32(), "motion_energy": pl.Float64(), "scene_cuts": pl.Int32(), "brightness": pl.Float64(),
    "contrast": pl.Float64(), "static_share": pl.Float64(), "written_at": pl.Datetime("us", "UTC"),
}


def stats_row(dataset: str, video_id: str, stats: VideoStats) -> dict[str, Any]:
    """One row of the table: a video of a dataset and its statistics."""
    return {"dataset": dataset, "video_id": video_id, **stats.as_dict(), "pixels": stats.width * stats.height}


class VideoStatsLog:
    """Buffers stats rows and commits them as one part at a time (thread-safe: rows come from the event loop,
    commits run in a worker thread).

    Args:
        out_dir: The results directory.
    """

    def __init__(self, out_dir: str | Path) -> None:
        self.folder = Path(out_dir) / STATS_DIR
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
        """Write the buffered rows as one part (atomically), after `check_lock` (the store's: it raises when the
        directory's lock is no longer ours, and the rows stay unwritten). Returns the rows written."""
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
                name = f"part-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{self._token}-{self._seq:05d}.parquet"
                atomic_write(self.folder / name, frame.write_parquet)
            except BaseException:
                self._rows = rows + self._rows
                raise
            self.parts_written += 1
            return len(rows)


def _parts(out_dir: Path) -> list[Path]:
    out = []
    for p in sorted((out_dir / STATS_DIR).glob("part-*.parquet")):
        if why := not_a_regular_file(p):
            log.warning("%s: left out of the video statistics (%s)", p, why)
            continue
        try:
            pl.read_parquet_schema(p)
        except (OSError, pl.exceptions.PolarsError) as err:
            log.warning("%s: left out of the video statistics (unreadable: %s)", p, err)
            continue
        out.append(p)
    return out


def scan_video_stats(out_dir: str | Path) -> pl.LazyFrame:
    """One row per (dataset, video_id): the statistics read from the most frames (ties: the latest written)."""
    parts = _parts(Path(out_dir))
    if not parts:
        return pl.LazyFrame(schema=VIDEO_STATS_SCHEMA)
    return (
        pl.scan_parquet(parts, schema=VIDEO_STATS_SCHEMA, missing_columns="insert", extra_columns="ignore")
        .sort(["dataset", "video_id", "frames_used", "written_at"], descending=[False, False, True, True])
        .unique(subset=["dataset", "video_id"], keep="first", maintain_order=True)
    )


def with_video_stats(rows: pl.LazyFrame, stats: pl.LazyFrame) -> pl.LazyFrame:
    """`rows` with each video's statistics as ``video_<name>`` columns (`STAT_COLUMNS`; null where a video
    has none: text-only datasets, a video never decoded, rows of older sweeps), in the order of `rows`."""
    cols = [pl.col(c).alias(f"video_{c}") for c in STAT_COLUMNS]
    # the rows' own order kept: the streaming engine's unordered left join is ~3x slower on 200k rows here
    return rows.join(stats.select("dataset", "video_id", *cols), on=["dataset", "video_id"], how="left",
                     maintain_order="left")
