"""The results store: a Parquet dataset of atomically committed shards.

Layout of a results directory::

    manifest.json           sweep id, spec, created/updated times
    results/part-*.parquet  committed shards (never modified after the rename; small ones are compacted into
                            `part-*-compacted-*.parquet`, `engine.results.compact`, and readers leave out
                            the shards a compacted one holds, `engine.results.shards`)
    quarantine/             unreadable shards moved aside by `framesweep doctor`
    .lock                   held by the one driver writing here

Commands read a results directory through `engine.results.directory.ResultsDir` (its manifest, the own
sweep's rows, each footer checked once with `shard_problem`); this module writes it.

A shard is written to a hidden temp file in ``results/``, fsynced, then renamed
into place, and the directory is fsynced: a reader (or a rerun after SIGKILL)
sees a shard completely or not at all. A key is done once a shard holding an
``ok`` row for it exists; error rows are kept as data and retried by a rerun.
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import re
import stat
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, Self

import polars as pl
from polars.datatypes import DataTypeClass

from engine.results.errors import (
    CorruptShardError,
    ForeignSweepError,
    ManifestError,
    StoreFullError,
    StoreLockedError,
    StoreLockLostError,
)
from engine.results.lock import DirLock
from engine.results.manifest import write_manifest
from engine.results.pages import encode_shard, page_problem
from engine.results.schema import KEY_COLUMNS, RESULT_SCHEMA, ResultRow, rows_to_frame
from engine.results.shards import GRACE_S, live_shards, remove_superseded
from engine.runtime.atomic import atomic_write, clean_stale_temps, fsync_dir

__all__ = [
    "CorruptShardError",
    "ForeignSweepError",
    "ManifestError",
    "ResultStore",
    "StoreFullError",
    "StoreLockLostError",
    "StoreLockedError",
    "corrupt_shards_error",
    "doctor",
    "latest_rows",
    "naming_corrupt_shards",
    "not_a_regular_file",
    "scan_results",
    "scan_shards",
    "shard_problem",
]

log = logging.getLogger(__name__)

# the commit's temp name before it was `temp_name`'s (`.part-<stamp>-<pid>-<token>-<seq>.parquet.tmp`): still cleaned
_LEGACY_SHARD_TEMP = re.compile(r"\.part-.+\.parquet\.tmp")


def _shard_paths(out_dir: Path) -> list[Path]:
    return live_shards(out_dir)  # a compacted shard's inputs, while still on disk, are left out


# narrower integer columns (a shard written by another tool, e.g. `seed` as Int32) are read upcast
_CAST = pl.ScanCastOptions(integer_cast="upcast")


# what reading a corrupt shard raises (Polars panics on some corrupt pages: a BaseException, not a PolarsError)
_READ_ERRORS = (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError)


def _int_bits(t: pl.DataType | DataTypeClass) -> int:
    return int(str(t).removeprefix("U").removeprefix("Int"))  # Int8 ... Int128, UInt8 ... UInt128


def _readable_as(have: pl.DataType | DataTypeClass, want: pl.DataType | DataTypeClass) -> bool:
    """Whether a shard's column of type `have` reads losslessly as the schema's `want` (what `_CAST` allows)."""
    if have == want:
        return True
    if have.is_integer() and want.is_integer():
        if have.is_signed_integer() == want.is_signed_integer():
            return _int_bits(have) <= _int_bits(want)  # widened (Int32 -> Int64), never narrowed
        # unsigned fits a signed integer only when strictly narrower (UInt32 -> Int64); signed never fits unsigned
        return want.is_signed_integer() and _int_bits(have) < _int_bits(want)
    if isinstance(have, pl.List) and isinstance(want, pl.List):
        return _readable_as(have.inner, want.inner)
    return have == pl.Null()


def not_a_regular_file(path: Path) -> str | None:
    """Why `path` is no regular file (None: it is); found without opening it (opening a FIFO blocks)."""
    try:
        mode = path.stat().st_mode
    except OSError as err:
        return f"cannot be opened ({err.strerror})"
    if stat.S_ISREG(mode):
        return None
    kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a directory" if stat.S_ISDIR(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "a device")
    return f"not a regular file but {kind}; never opened"


@functools.lru_cache(maxsize=64)
def _schema_problem(found: tuple[tuple[str, pl.DataType], ...]) -> str | None:
    """Columns a shard's schema holds that do not read as the result schema's (None: all do); shards of one
    sweep share a few schemas, so each is checked once per process, not once per shard."""
    bad = [f"column {c} is {t}, not {RESULT_SCHEMA[c]}" for c, t in found
           if c in RESULT_SCHEMA and not _readable_as(t, RESULT_SCHEMA[c])]
    return "; ".join(bad) or None


def shard_problem(path: Path, full: bool = False) -> str | None:
    """Why a shard cannot be read as the result schema (None: it can). `full` reads every page too.

    Anything but a regular file (a FIFO, a folder, a dangling link named `part-*.parquet`) is a problem
    found without opening it: every reader checks its shards here first, so none blocks on a FIFO."""
    if why := not_a_regular_file(path):
        return why
    try:
        if bad := _schema_problem(tuple(pl.read_parquet_schema(path).items())):
            return bad
        if full:
            if why := page_problem(path):  # page checksums, where the shard has them
                return why
            scan_shards([path]).collect()
    except _READ_ERRORS as err:
        return f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
    return None


def scan_shards(paths: list[Path], *, with_paths: bool = False) -> pl.LazyFrame:
    """Lazily scan shards whose footers were checked (`shard_problem`) as the result schema; `with_paths` adds
    each row's shard as ``_shard`` and reads the columns (not their statistics: corrupt pages are found too)."""
    if not paths:
        return pl.LazyFrame(schema=RESULT_SCHEMA)
    extra: dict[str, Any] = {"include_file_paths": "_shard", "use_statistics": False} if with_paths else {}
    return pl.scan_parquet(paths, schema=RESULT_SCHEMA, missing_columns="insert", extra_columns="ignore",
                           cast_options=_CAST, **extra)


def corrupt_shards_error(out_dir: str | Path, bad: list[tuple[Path, str]]) -> CorruptShardError:
    """The one error naming unreadable shards (each with why) and what to do."""
    files = "; ".join(f"{p}: unreadable result shard ({why})" for p, why in bad)
    them, its = ("it", "its") if len(bad) == 1 else ("them", "their")
    return CorruptShardError(f"{files}; run `framesweep doctor {out_dir}` to move {them} to quarantine/ ({its} keys "
                             "are recomputed by the next run)")


def scan_results(out_dir: str | Path) -> pl.LazyFrame:
    """Lazily scan every committed row (all attempts, every sweep) of a results directory; commands read
    through `engine.results.directory.ResultsDir`, which checks each footer once and knows the own sweep.

    Every shard's footer is checked first: one that cannot be read raises `CorruptShardError`
    naming it (`framesweep doctor DIR` moves such shards aside). Corrupt data pages behind a valid
    footer only fail when collected: collect inside `naming_corrupt_shards(DIR)` to have them named too."""
    paths = _shard_paths(Path(out_dir))
    for p in paths:
        if why := shard_problem(p):
            raise corrupt_shards_error(out_dir, [(p, why)])
    return scan_shards(paths)


@contextmanager
def naming_corrupt_shards(out_dir: str | Path) -> Iterator[None]:
    """Turn a Polars or OS error raised inside (collecting rows of `out_dir`) into `CorruptShardError` naming
    every shard that does not read whole.

    `scan_results` checks footers only (reading every page of every shard on each command would be too slow
    for a big directory), so a shard with corrupt data pages fails first in a collect, with an error naming no
    file; only then is each shard read whole. An error that no shard explains is raised as it was."""
    try:
        yield
    except _READ_ERRORS as err:
        bad = [(p, why) for p in _shard_paths(Path(out_dir)) if (why := shard_problem(p, full=True))]
        if not bad:
            raise
        raise corrupt_shards_error(out_dir, bad) from err


def doctor(out_dir: str | Path) -> list[tuple[Path, str]]:
    """Read every shard of a results directory whole; move each unreadable one to `quarantine/`.

    Takes the directory's lock (no sweep may be writing). Returns (quarantined path, reason) pairs;
    the rows they held are missing from then on, so the next run recomputes their keys."""
    out = Path(out_dir)
    moved = []
    with ResultStore(out):
        for p in _shard_paths(out):
            if why := shard_problem(p, full=True):
                dest = out / "quarantine" / p.name
                dest.parent.mkdir(exist_ok=True)
                os.replace(p, dest)
                fsync_dir(p.parent)
                log.warning("%s: %s; moved to %s", p, why, dest)
                moved.append((dest, why))
    return moved


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
        self._buffer: list[ResultRow] = []
        self._mutex = threading.Lock()
        self._seq = 0
        self._token = uuid.uuid4().hex[:8]
        self._lock = DirLock(self.out_dir)
        self._lost: StoreLockLostError | None = None
        self.maintenance = threading.Lock()
        """Held while compacting (`engine.results.compact`); `close` waits for it before letting go of the lock."""
        self.not_compactable: set[str] = set()
        """Shards a compaction left as they were (another sweep's, unreadable): not counted towards the next."""
        self.rows_committed = 0
        self.shards_committed = 0
        self.last_commit = time.monotonic()
        self._make_dirs()
        if lock:
            self._lock.acquire()
            # a writer killed mid-commit leaves its hidden temp file behind; with the lock held none is live
            # framesweep's own temp names only: a user's `.notes.tmp` in OUT stays
            stale = clean_stale_temps(self.results_dir, also=_LEGACY_SHARD_TEMP) + clean_stale_temps(self.out_dir)
            if stale:
                log.info("removed %d stale temp file(s) in %s", len(stale), self.out_dir)
            remove_superseded(self.out_dir, GRACE_S)  # what a compaction killed before its last step left

    # --- locking -----------------------------------------------------------------
    def _make_dirs(self) -> None:
        try:
            self.results_dir.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            if err.errno in (errno.ENOSPC, errno.EDQUOT):
                raise StoreFullError(err.errno, f"{self.results_dir}: no space left on device to create it "
                                     "(nothing was started; free space and rerun)") from err
            raise

    def _check_lock(self, n_rows: int) -> None:
        """Stop before committing when `.lock` is no longer ours (`engine.results.lock`); the rows are dropped."""
        if not self._lock.held:
            return
        if self._lost is None:
            try:
                self._lock.check()
                return
            except StoreLockLostError as err:
                self._lost = err
        if n_rows:
            log.error("%d row(s) not committed: %s", n_rows, self._lost)
        raise self._lost

    def check_lock(self) -> None:
        """Raise `StoreLockLostError` unless `.lock` is still this store's (before anything becomes visible)."""
        self._check_lock(0)

    def close(self) -> None:
        """Commit what is buffered and release the lock (released even when the commit fails; nothing is
        committed once the lock was lost), after a compaction still running has finished."""
        try:
            if self._lost is None:
                self.commit()
        finally:
            with self.maintenance:
                self._lock.release()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- manifest ----------------------------------------------------------------
    def write_manifest(self, info: dict[str, Any]) -> None:
        """Write manifest.json atomically, keeping its first creation time (only while the lock is ours)."""
        self._check_lock(0)
        write_manifest(self.out_dir, info)

    def check_sweep(self, sweep_id: str, manifest: dict[str, Any]) -> None:
        """Refuse a directory whose manifest (as `engine.results.directory.ResultsDir` read it) belongs to another
        sweep (one directory holds one sweep)."""
        other = manifest.get("sweep_id")
        if other is not None and other != sweep_id:
            raise ForeignSweepError(
                f"{self.out_dir} holds sweep {other!r}, not {sweep_id!r}; use another --out directory "
                "(or the spec's sweep_id)")

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
            self._check_lock(len(rows))  # a lost lock drops the rows: another driver may hold their keys now
            self._seq += 1
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
            name = f"part-{stamp}-{os.getpid()}-{self._token}-{self._seq:05d}.parquet"
            final = self.results_dir / name
            # encoded in memory first: a full disk then fails in our write with a plain ENOSPC, not inside
            # the Parquet writer (which reports it as an unrelated-looking "Invalid thrift" error)
            encoded = encode_shard(rows_to_frame(rows))  # with page checksums, verified by `doctor`

            def write(fh: BinaryIO) -> None:
                fh.write(encoded)
                self._check_lock(len(rows))  # the last moment before the rename makes the shard visible

            try:
                atomic_write(final, write)
            except StoreLockLostError:
                raise  # these rows are not ours to commit any more
            except (OSError, pl.exceptions.PolarsError) as err:
                self._buffer[:0] = rows  # keep them for the next try
                # Polars reports the writer's ENOSPC as a ComputeError naming "os error 28"
                if getattr(err, "errno", None) == errno.ENOSPC or f"os error {errno.ENOSPC})" in str(err):
                    raise StoreFullError(errno.ENOSPC, f"{final}: no space left on device; {len(rows)} row(s) not "
                                         "committed (every shard committed before is intact: free space and "
                                         "rerun)") from err
                raise
            except BaseException:
                self._buffer[:0] = rows  # keep them for the next try
                raise
            self.rows_committed += len(rows)
            self.shards_committed += 1
            log.debug("committed %d rows to %s", len(rows), final.name)
            return len(rows)
