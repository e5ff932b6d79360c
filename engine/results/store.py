"""The results store: a Parquet dataset of atomically committed shards.

Layout of a results directory::

    manifest.json           sweep id, spec, created/updated times
    results/part-*.parquet  committed shards (never modified after the rename)
    .lock                   held by the one driver writing here

A shard is written to a hidden temp file in ``results/``, fsynced, then renamed
into place, and the directory is fsynced: a reader (or a rerun after SIGKILL)
sees a shard completely or not at all. A key is done once a shard holding an
``ok`` row for it exists; error rows are kept as data and retried by a rerun.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from engine.results.schema import KEY_COLUMNS, RESULT_SCHEMA, ResultRow, rows_to_frame
from engine.runtime.atomic import atomic_write

__all__ = ["ForeignSweepError", "ResultStore", "StoreLockedError", "foreign_shards", "latest_rows", "scan_results"]

log = logging.getLogger(__name__)

_SHARD_GLOB = "part-*.parquet"


class StoreLockedError(RuntimeError):
    """Another driver holds this results directory."""


class ForeignSweepError(RuntimeError):
    """The results directory belongs to another sweep."""


def foreign_shards(out_dir: str | Path, sweep_id: str) -> list[Path]:
    """Committed shards holding any row whose sweep id is not `sweep_id`."""
    bad = []
    for p in _shard_paths(Path(out_dir)):
        ids = pl.scan_parquet(p).select(pl.col("sweep_id").unique()).collect()["sweep_id"].to_list()
        if any(i != sweep_id for i in ids):
            bad.append(p)
    return bad


def _shard_paths(out_dir: Path) -> list[Path]:
    return sorted((Path(out_dir) / "results").glob(_SHARD_GLOB))


def scan_results(out_dir: str | Path) -> pl.LazyFrame:
    """Lazily scan every committed row (all attempts) of a results directory."""
    paths = _shard_paths(Path(out_dir))
    if not paths:
        return pl.LazyFrame(schema=RESULT_SCHEMA)
    return pl.scan_parquet(paths, schema=RESULT_SCHEMA, missing_columns="insert", extra_columns="ignore")


def latest_rows(rows: pl.LazyFrame) -> pl.LazyFrame:
    """One row per key: the ok row if there is one, else the latest error."""
    return (
        rows.with_columns((pl.col("status") == "ok").alias("_ok"))
        .sort(["_ok", "finished_at"], descending=[True, True])
        .unique(subset=list(KEY_COLUMNS), keep="first", maintain_order=True)
        .drop("_ok")
    )


class ResultStore:
    """Buffered, atomic, resumable writer of result rows for one results directory."""

    def __init__(self, out_dir: str | Path, *, lock: bool = True) -> None:
        self.out_dir = Path(out_dir)
        self.results_dir = self.out_dir / "results"
        self.results_dir.mkdir(parents=True, exist_ok=True)
        self._buffer: list[ResultRow] = []
        self._mutex = threading.Lock()
        self._seq = 0
        self._token = uuid.uuid4().hex[:8]
        self._lock_fd: int | None = None
        self.rows_committed = 0
        self.shards_committed = 0
        self.last_commit = time.monotonic()
        if lock:
            self._acquire_lock()

    # --- locking -----------------------------------------------------------------
    def _acquire_lock(self) -> None:
        path = self.out_dir / ".lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 256, 0).decode(errors="replace").strip()
            os.close(fd)
            raise StoreLockedError(
                f"{self.out_dir} is being written by another framesweep driver ({holder or 'unknown'}); "
                "wait for it to finish or use another --out directory"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {os.uname().nodename}\n".encode(), 0)
        self._lock_fd = fd

    def close(self) -> None:
        """Commit what is buffered and release the lock."""
        self.commit()
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- manifest ----------------------------------------------------------------
    def read_manifest(self) -> dict[str, Any]:
        """manifest.json, or {} when there is none (or it cannot be read)."""
        try:
            return json.loads((self.out_dir / "manifest.json").read_text())
        except (OSError, json.JSONDecodeError):
            return {}

    def write_manifest(self, info: dict[str, Any]) -> None:
        """Write manifest.json atomically, keeping its first creation time."""
        path = self.out_dir / "manifest.json"
        created = datetime.now(UTC).isoformat()
        if path.exists():
            try:
                created = json.loads(path.read_text()).get("created_at", created)
            except (OSError, json.JSONDecodeError):
                log.warning("unreadable manifest %s is rewritten", path)
        doc = {**info, "created_at": created, "updated_at": datetime.now(UTC).isoformat()}
        atomic_write(path, json.dumps(doc, indent=2, default=str))

    def check_sweep(self, sweep_id: str) -> None:
        """Refuse a directory whose manifest belongs to another sweep (one directory holds one sweep)."""
        other = self.read_manifest().get("sweep_id")
        if other is not None and other != sweep_id:
            raise ForeignSweepError(
                f"{self.out_dir} holds sweep {other!r}, not {sweep_id!r}; use another --out directory "
                "(or the spec's sweep_id)")

    # --- reading -----------------------------------------------------------------
    def _rows(self, sweep_id: str | None) -> pl.LazyFrame:
        rows = scan_results(self.out_dir)
        return rows if sweep_id is None else rows.filter(pl.col("sweep_id") == sweep_id)

    def done_keys(self, sweep_id: str | None = None) -> set[tuple[str, str, str, str]]:
        """Keys that already have an ok row (of `sweep_id` only, when given): a rerun skips them."""
        df = self._rows(sweep_id).filter(pl.col("status") == "ok").select(KEY_COLUMNS).unique().collect()
        return set(df.iter_rows())

    def attempts(self, sweep_id: str | None = None) -> dict[tuple[str, str, str, str], int]:
        """Highest attempt number recorded per key (errors included; of `sweep_id` only, when given)."""
        df = self._rows(sweep_id).group_by(KEY_COLUMNS).agg(pl.col("attempt").max()).collect()
        return {tuple(r[:4]): int(r[4] or 0) for r in df.iter_rows()}  # type: ignore[misc]

    def foreign_shards(self, sweep_id: str) -> list[Path]:
        """Shards holding rows of another sweep (copied in by hand): reported, and never counted as done."""
        return foreign_shards(self.out_dir, sweep_id)

    # --- writing -----------------------------------------------------------------
    def add(self, rows: Iterable[ResultRow]) -> None:
        """Buffer rows; they are durable only after `commit`."""
        with self._mutex:
            self._buffer.extend(rows)

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def commit(self) -> int:
        """Write buffered rows as one shard (temp file, fsync, rename). Returns rows written."""
        with self._mutex:
            rows, self._buffer = self._buffer, []
            self.last_commit = time.monotonic()
            if not rows:
                return 0
            self._seq += 1
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
            name = f"part-{stamp}-{os.getpid()}-{self._token}-{self._seq:05d}.parquet"
            final = self.results_dir / name
            tmp = self.results_dir / f".{name}.tmp"
            frame = rows_to_frame(rows)
            try:
                atomic_write(final, lambda fh: frame.write_parquet(fh, compression="zstd", statistics=True), tmp=tmp)
            except BaseException:
                self._buffer[:0] = rows  # keep them for the next try
                raise
            self.rows_committed += len(rows)
            self.shards_committed += 1
            log.debug("committed %d rows to %s", len(rows), final.name)
            return len(rows)
