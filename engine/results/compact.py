"""Shard compaction: many small result shards rewritten as a few large ones, atomically.

A sweep commits a shard every few seconds (~17,000 a day), and every reader pays per shard
(a footer check, a file to open per scan). Compaction reads the directory's small shards of
its own sweep, checks every page checksum on the way (a damaged shard is left for `doctor`,
never laundered into a new checksum), and writes their rows, all of them, unchanged and
unmerged (every attempt, error rows too, so `latest_rows` picks exactly what it picked
before), as one compacted shard per `TARGET_ROWS` rows, with page checksums and the list of
the shards it holds in its footer (`engine.results.shards`). Steps, each safe to be killed
after:

1. write the compacted shard to a hidden temp file and fsync it (a kill leaves a temp file
   that the next holder of the lock removes);
2. rename it into `results/` and fsync the folder: from this instant readers read it and
   leave its inputs out (`shards.live_shards`);
3. remove the inputs once the compacted shard is `grace_s` old (readers that listed the
   folder before step 2 may still be reading them), plain shards first.

Shards holding any row of another sweep, shards with columns framesweep does not know, and
unreadable shards are left untouched. Only the holder of the directory's lock compacts: the
sweep's own driver (`compact_if_due` after a commit) or `framesweep compact OUT`.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import BinaryIO

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from engine.results.manifest import manifest_sweep_id
from engine.results.pages import encode_shard
from engine.results.schema import RESULT_SCHEMA
from engine.results.shards import COMPACTED_FROM, GRACE_S, live_shards, remove_superseded, shard_listing
from engine.results.store import ResultStore, shard_problem
from engine.runtime.atomic import atomic_write

__all__ = ["COMPACT_AT", "SMALL_BYTES", "TARGET_ROWS", "Compaction", "compact", "compact_dir", "compact_if_due"]

log = logging.getLogger(__name__)

COMPACT_AT = 200
"""Small live shards that make a sweep's driver compact after a commit (a commit every 5 s: every ~17 min)."""
SMALL_BYTES = 16 * 1024 * 1024
"""A shard below this size is compacted again (with newer ones) until its compacted shard outgrows it."""
TARGET_ROWS = 500_000
"""Rows per compacted shard at most (inputs are never split between two)."""


@dataclass
class Compaction:
    """What one compaction did."""

    inputs: int = 0
    """Shards whose rows went into compacted shards."""
    outputs: int = 0
    """Compacted shards written."""
    rows: int = 0
    removed: int = 0
    """Shards removed that a compacted shard (this one's or an earlier one's) holds."""
    waiting: int = 0
    """Shards a compacted shard holds that stay on disk until it is `grace_s` old (readers may be reading them)."""
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    """Small shards left untouched, and why (another sweep's rows, unknown columns, unreadable)."""


def _small(paths: list[Path], small_bytes: int) -> list[Path]:
    out = []
    for p in paths:
        try:
            if p.stat().st_size < small_bytes:
                out.append(p)
        except OSError:
            continue
    return out


def _read(path: Path, sweep_id: str) -> pa.Table | str:
    """A shard's rows, every page checksum verified; or why it stays as it is."""
    if why := shard_problem(path):  # not a regular file, a footer that does not read, a column of the wrong type
        return f"unreadable ({why}); `framesweep doctor` moves it aside"
    try:
        with pq.ParquetFile(path, page_checksum_verification=True) as f:
            table = f.read()
    except (OSError, pa.ArrowException) as err:
        first = str(err).splitlines()[0] if str(err) else ""
        return f"unreadable ({type(err).__name__}: {first}); `framesweep doctor` moves it aside"
    unknown = sorted(set(table.column_names) - set(RESULT_SCHEMA))
    if unknown:
        return f"columns framesweep does not know ({', '.join(unknown)}): kept as written"
    if "sweep_id" not in table.column_names or not _all_equal(table["sweep_id"], sweep_id):
        return "rows of another sweep: never compacted"
    return table.replace_schema_metadata(None)


def _all_equal(column: pa.ChunkedArray, value: str) -> bool:
    return column.null_count == 0 and bool(pc.all(pc.equal(column, value)).as_py() if len(column) else True)


def _rows(tables: list[pa.Table]) -> pl.DataFrame:
    """Shards' rows, one after the other, in the result schema (missing columns null, narrower integers upcast)."""
    try:
        return _conform(pa.concat_tables(tables, promote_options="permissive"))
    except pa.ArrowException:  # Arrow types no promotion joins (another writer's shards): one shard at a time
        return pl.concat([_conform(t) for t in tables], how="vertical")


def _conform(table: pa.Table) -> pl.DataFrame:
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame.select([pl.col(c).cast(t) if c in frame.columns else pl.lit(None, t).alias(c)
                         for c, t in RESULT_SCHEMA.items()])


def _groups(read: list[tuple[Path, pa.Table]], target_rows: int) -> list[list[tuple[Path, pa.Table]]]:
    """Inputs in name order, cut into groups of at most `target_rows` rows (a shard is never split)."""
    groups: list[list[tuple[Path, pa.Table]]] = [[]]
    rows = 0
    for p, frame in read:
        if groups[-1] and rows + frame.num_rows > target_rows:
            groups.append([])
            rows = 0
        groups[-1].append((p, frame))
        rows += frame.num_rows
    return [g for g in groups if g]


def _write(store: ResultStore, group: list[tuple[Path, pa.Table]], n: int) -> Path:
    """Steps 1 and 2: the compacted shard, fsynced, renamed into place (the lock checked just before)."""
    names = [p.name for p, _ in group]
    frame = _rows([t for _, t in group])
    encoded = encode_shard(frame, metadata={COMPACTED_FROM: json.dumps(names)})
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
    final = store.results_dir / f"part-{stamp}-compacted-{uuid.uuid4().hex[:8]}-{n:03d}.parquet"

    def write(fh: BinaryIO) -> None:
        fh.write(encoded)
        store.check_lock()  # the last moment before the rename makes it visible

    atomic_write(final, write)
    return final


def compact(store: ResultStore, *, grace_s: float = GRACE_S, small_bytes: int = SMALL_BYTES,
            target_rows: int = TARGET_ROWS) -> Compaction:
    """Compact the small shards of the store's sweep (the store must hold the directory's lock).

    Raises:
        StoreLockLostError: the lock was lost (nothing of this compaction became visible).
        ManifestError: the manifest is damaged.
    """
    report = Compaction()
    with store.maintenance:
        store.check_lock()
        sweep_id = manifest_sweep_id(store.out_dir)
        candidates = _small(live_shards(store.out_dir), small_bytes) if sweep_id is not None else []
        if len(candidates) > 1 and sweep_id is not None:
            with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:  # pyarrow reads off the GIL
                frames = list(pool.map(partial(_read, sweep_id=sweep_id), candidates))
            read = []
            for p, got in zip(candidates, frames, strict=True):
                if isinstance(got, str):
                    report.skipped.append((p, got))
                    store.not_compactable.add(p.name)
                else:
                    read.append((p, got))
            if len(read) > 1:
                for n, group in enumerate(_groups(read, target_rows)):
                    final = _write(store, group, n)
                    report.inputs += len(group)
                    report.outputs += 1
                    report.rows += sum(t.num_rows for _, t in group)
                    log.info("compacted %d shard(s) into %s", len(group), final.name)
        report.removed = remove_superseded(store.out_dir, grace_s)
        report.waiting = _waiting(store.out_dir)
    return report


def _waiting(out_dir: Path) -> int:
    results = Path(out_dir) / "results"
    return sum(1 for name in shard_listing(out_dir)[1] if (results / name).exists())


def compact_if_due(store: ResultStore, at: int | None = None, grace_s: float = GRACE_S) -> Compaction | None:
    """After a commit: compact once `at` (default `COMPACT_AT`) small shards are live; remove the inputs
    whose grace is over.

    Returns the compaction done, or None when nothing was due."""
    try:
        live = [p for p in live_shards(store.out_dir) if p.name not in store.not_compactable]
        if len(_small(live, SMALL_BYTES)) >= (COMPACT_AT if at is None else at):
            return compact(store, grace_s=grace_s)
        with store.maintenance:
            removed = remove_superseded(store.out_dir, grace_s)
    except OSError as err:  # a full disk, say: every shard is intact and the sweep goes on (commits say more)
        log.warning("compaction of %s skipped: %s", store.out_dir, err)
        return None
    return Compaction(removed=removed) if removed else None


def compact_dir(out_dir: str | Path, grace_s: float = GRACE_S) -> Compaction:
    """`framesweep compact OUT`: take the directory's lock and compact (`StoreLockedError` while a sweep runs)."""
    with ResultStore(out_dir) as store:
        return compact(store, grace_s=grace_s)
