"""Shard compaction: many small shards of a table rewritten as a few large ones, atomically.

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

Every table of the directory is compacted alike (``results/``, ``video_stats/``, ``predictions/``:
`engine.results.tables`). Result shards holding any row of another sweep, shards with columns
framesweep does not know, and unreadable shards are left untouched. Only the holder of the directory's lock compacts: the
sweep's own driver (`compact_if_due` after a commit) or `framesweep compact OUT`.
"""

from __future__ import annotations

import json
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from engine.results.manifest import manifest_sweep_id
from engine.results.shards import COMPACTED_FROM, GRACE_S, live_shards, remove_superseded, shard_listing
from engine.results.store import ResultStore, shard_problem
from engine.results.tables import TABLES, Table, compacted_name, write_shard

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


def _read(path: Path, table: Table, sweep_id: str | None) -> pa.Table | str:
    """A shard's rows, every page checksum verified; or why it stays as it is."""
    if why := shard_problem(path, table=table):  # not a regular file, a footer that does not read, a wrong type
        return f"unreadable ({why}); `framesweep doctor` moves it aside"
    try:
        with pq.ParquetFile(path, page_checksum_verification=True) as f:
            rows = f.read()
    except (OSError, pa.ArrowException) as err:
        first = str(err).splitlines()[0] if str(err) else ""
        return f"unreadable ({type(err).__name__}: {first}); `framesweep doctor` moves it aside"
    unknown = sorted(set(rows.column_names) - set(table.schema))
    if unknown:
        return f"columns framesweep does not know ({', '.join(unknown)}): kept as written"
    if table.per_sweep and ("sweep_id" not in rows.column_names or not _all_equal(rows["sweep_id"], sweep_id)):
        return "rows of another sweep: never compacted"
    return rows.replace_schema_metadata(None)


def _all_equal(column: pa.ChunkedArray, value: str | None) -> bool:
    return column.null_count == 0 and bool(pc.all(pc.equal(column, value)).as_py() if len(column) else True)


def _rows(tables: list[pa.Table], table: Table) -> pl.DataFrame:
    """Shards' rows, one after the other, in the table's schema (missing columns null, narrower integers upcast)."""
    try:
        return _conform(pa.concat_tables(tables, promote_options="permissive"), table)
    except pa.ArrowException:  # Arrow types no promotion joins (another writer's shards): one shard at a time
        return pl.concat([_conform(t, table) for t in tables], how="vertical")


def _conform(rows: pa.Table, table: Table) -> pl.DataFrame:
    frame = pl.from_arrow(rows)
    assert isinstance(frame, pl.DataFrame)
    return frame.select([pl.col(c).cast(t) if c in frame.columns else pl.lit(None, t).alias(c)
                         for c, t in table.schema.items()])


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


def _write(store: ResultStore, table: Table, group: list[tuple[Path, pa.Table]], n: int) -> Path:
    """Steps 1 and 2: the compacted shard, fsynced, renamed into place (the lock checked just before)."""
    names = [p.name for p, _ in group]
    return write_shard(table.dir(store.out_dir), compacted_name(n), _rows([t for _, t in group], table),
                       metadata={COMPACTED_FROM: json.dumps(names)}, check=store.check_lock)


def _key(path: Path) -> str:
    """How `ResultStore.not_compactable` names a shard (its table's folder and its name)."""
    return f"{path.parent.name}/{path.name}"


def _compact_table(store: ResultStore, table: Table, sweep_id: str | None, small_bytes: int, target_rows: int,
                   report: Compaction) -> None:
    """Compact the small shards of one table into `report` (the store's maintenance lock held)."""
    candidates = _small(live_shards(store.out_dir, table.folder), small_bytes)
    if len(candidates) <= 1:
        return
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:  # pyarrow reads off the GIL
        frames = list(pool.map(lambda p: _read(p, table, sweep_id), candidates))
    read = []
    for p, got in zip(candidates, frames, strict=True):
        if isinstance(got, str):
            report.skipped.append((p, got))
            store.not_compactable.add(_key(p))
        else:
            read.append((p, got))
    if len(read) <= 1:
        return
    for n, group in enumerate(_groups(read, target_rows)):
        final = _write(store, table, group, n)
        report.inputs += len(group)
        report.outputs += 1
        report.rows += sum(t.num_rows for _, t in group)
        log.info("compacted %d shard(s) into %s", len(group), final.relative_to(store.out_dir))


def compact(store: ResultStore, *, grace_s: float = GRACE_S, small_bytes: int = SMALL_BYTES,
            target_rows: int = TARGET_ROWS) -> Compaction:
    """Compact the small shards of every table of the store's directory (the store must hold its lock); result
    shards only when the manifest names the sweep (`Compaction` sums the tables).

    Raises:
        StoreLockLostError: the lock was lost (nothing of this compaction became visible).
        ManifestError: the manifest is damaged.
    """
    report = Compaction()
    with store.maintenance:
        store.check_lock()
        sweep_id = manifest_sweep_id(store.out_dir)
        for table in TABLES:
            if table.per_sweep and sweep_id is None:
                continue
            _compact_table(store, table, sweep_id, small_bytes, target_rows, report)
        report.removed = sum(remove_superseded(store.out_dir, grace_s, t.folder) for t in TABLES)
        report.waiting = sum(_waiting(store.out_dir, t.folder) for t in TABLES)
    return report


def _waiting(out_dir: Path, folder: str) -> int:
    shards = Path(out_dir) / folder
    return sum(1 for name in shard_listing(out_dir, folder)[1] if (shards / name).exists())


def _due(store: ResultStore, at: int) -> bool:
    """Whether any table has `at` small live shards that a compaction has not left as they were."""
    for table in TABLES:
        live = [p for p in live_shards(store.out_dir, table.folder) if _key(p) not in store.not_compactable]
        if len(_small(live, SMALL_BYTES)) >= at:
            return True
    return False


def compact_if_due(store: ResultStore, at: int | None = None, grace_s: float = GRACE_S) -> Compaction | None:
    """After a commit: compact once `at` (default `COMPACT_AT`) small shards of a table are live; remove the
    inputs whose grace is over.

    Returns the compaction done, or None when nothing was due."""
    try:
        if _due(store, COMPACT_AT if at is None else at):
            return compact(store, grace_s=grace_s)
        with store.maintenance:
            removed = sum(remove_superseded(store.out_dir, grace_s, t.folder) for t in TABLES)
    except OSError as err:  # a full disk, say: every shard is intact and the sweep goes on (commits say more)
        log.warning("compaction of %s skipped: %s", store.out_dir, err)
        return None
    return Compaction(removed=removed) if removed else None


def compact_dir(out_dir: str | Path, grace_s: float = GRACE_S) -> Compaction:
    """`framesweep compact OUT`: take the directory's lock and compact (`StoreLockedError` while a sweep runs)."""
    with ResultStore(out_dir) as store:
        return compact(store, grace_s=grace_s)
