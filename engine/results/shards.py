"""Which shards of a table are live: every `<table>/part-*.parquet` but those a compacted shard holds.

The same for each table of a results directory (``results/``, ``video_stats/``, ``predictions/``:
`engine.results.tables`); `folder` names the table, ``results`` by default.

Compaction (`engine.results.compact`) writes the rows of many small shards into one
compacted shard, `part-<stamp>-compacted-<token>-<n>.parquet`, whose Parquet footer lists
the names of the shards it holds (key `framesweep.compacted_from`). The rename that makes
the compacted shard visible is the one step that switches a reader over: from then on every
listing here leaves its inputs out, so a reader sees each row once whether or not the inputs
are still on disk. Inputs are removed afterwards, once their compacted shard is older than a
grace period (a reader that listed the directory before the rename may still be reading
them), oldest first and plain shards before compacted ones, so that a compacted shard is
never removed while a shard it holds is still there.
"""

from __future__ import annotations

import json
import logging
import stat
import threading
import time
from pathlib import Path

import polars as pl

from engine.runtime.atomic import fsync_dir

__all__ = [
    "COMPACTED_FROM",
    "COMPACTED_TAG",
    "GRACE_S",
    "SHARD_GLOB",
    "is_compacted",
    "live_shards",
    "remove_superseded",
    "shard_listing",
]

log = logging.getLogger(__name__)

SHARD_GLOB = "part-*.parquet"
COMPACTED_TAG = "-compacted-"
"""In the name of a compacted shard: only such shards are opened to read what they supersede."""
COMPACTED_FROM = "framesweep.compacted_from"
"""Footer key of a compacted shard: a JSON list of the shard names whose rows it holds."""

GRACE_S = 600.0
"""Seconds a compacted shard's inputs stay on disk after it appeared (readers that listed the folder before may
still be reading them); `framesweep compact --grace-s 0` removes them at once."""

_inputs_cache: dict[tuple[str, int, int], frozenset[str]] = {}
_cache_lock = threading.Lock()


def is_compacted(path: Path) -> bool:
    return COMPACTED_TAG in path.name


def _inputs_of(path: Path) -> frozenset[str]:
    """The shard names a compacted shard holds (empty when its footer cannot be read: then it supersedes
    nothing, so its inputs, while they exist, stay visible and the shard itself is named as unreadable)."""
    try:
        st = path.stat()
    except OSError:
        return frozenset()
    if not stat.S_ISREG(st.st_mode):  # never opened (a FIFO would block): named by the footer checks instead
        return frozenset()
    key = (str(path), st.st_size, st.st_mtime_ns)
    with _cache_lock:
        hit = _inputs_cache.get(key)
    if hit is not None:
        return hit
    try:
        names = frozenset(json.loads(pl.read_parquet_metadata(path).get(COMPACTED_FROM, "[]")))
    except (OSError, ValueError, pl.exceptions.PolarsError, pl.exceptions.PanicException) as err:
        log.debug("%s: its list of compacted shards cannot be read: %s", path, err)
        return frozenset()
    with _cache_lock:
        _inputs_cache[key] = names
    return names


def shard_listing(out_dir: str | Path, folder: str = "results") -> tuple[list[Path], dict[str, Path]]:
    """(live shards sorted by name, {superseded name: the compacted shard holding it}) of `out_dir/folder`.

    A superseded name that is itself a compacted shard is mapped to the newer one that holds it."""
    paths = sorted((Path(out_dir) / folder).glob(SHARD_GLOB))
    held: dict[str, Path] = {}
    for p in paths:
        if is_compacted(p):
            for name in _inputs_of(p):
                held.setdefault(name, p)
    return [p for p in paths if p.name not in held], held


def live_shards(out_dir: str | Path, folder: str = "results") -> list[Path]:
    """The shards a reader reads: every `<folder>/part-*.parquet` but those a compacted shard holds."""
    return shard_listing(out_dir, folder)[0]


def remove_superseded(out_dir: str | Path, grace_s: float, folder: str = "results") -> int:
    """Remove the shards of `out_dir/folder` a compacted shard holds, once that compacted shard is at least
    `grace_s` old (call only while holding the directory's lock). Returns how many were removed."""
    results = Path(out_dir) / folder
    _, held = shard_listing(out_dir, folder)
    now = time.time()
    due = []
    for name, holder in held.items():
        path = results / name
        try:
            if now - holder.stat().st_mtime >= grace_s and path.exists():
                due.append(path)
        except OSError:
            continue
    # plain shards first, then compacted ones oldest first: a compacted shard goes only after what it holds
    due.sort(key=lambda p: (is_compacted(p), p.name))
    for p in due:
        try:
            p.unlink()
        except FileNotFoundError:
            pass
    if due:
        fsync_dir(results)
        log.info("removed %d shard(s) held by compacted shards in %s", len(due), results)
    return len(due)
