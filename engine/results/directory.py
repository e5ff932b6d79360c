"""The one reader of a results directory: what every command reads, each file checked once.

`ResultsDir.open(OUT)` reads `OUT/manifest.json` (`engine.results.manifest.read_manifest`, its one
failure rule) and lists the live shards (`engine.results.shards`); on first use the footer of each
shard is checked once (`engine.results.store.shard_problem`) and the value keeps what it found:

    manifest       the manifest ({} without one); `sweep_id` the sweep it names (or the one asked for)
    rows()         one row per key of the directory's own sweep, lazily (safe while a sweep writes to it)
    scan()         every committed row of every readable shard (all attempts, every sweep)
    foreign        shards holding rows of another sweep (never counted; empty without a sweep id)
    bad            (shard, why) for each result shard whose footer does not read as the result schema
    video_stats()  one row per decoded video (``video_stats/``, `engine.results.video_stats`)
    table(t)       every committed row of any table (`engine.results.tables`: results, video_stats, predictions)

`rows()`, `scan()`, `foreign`, `video_stats()` and `table()` raise `CorruptShardError` naming every bad
shard of the table read (a bad video-stats shard too: `framesweep doctor` quarantines it as it does a result
shard); collect inside `reading()` to have a shard with corrupt data pages behind a valid footer named too.
`relisted()` is the same value after a run committed more shards: the manifest kept, each new shard's footer
checked (and only those). Each way a
directory cannot be read is one error with one message, the same from every command (exit 2):
`NoResultsDirError` (no such directory, or no ``results/`` in it), `ManifestError` (no manifest
where one is needed, or one that does not read), `CorruptShardError` (naming the file and the
column). Values are cheap; a command opens its directory once and hands the value on.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl

from engine.results.errors import NoResultsDirError
from engine.results.manifest import MANIFEST, read_manifest
from engine.results.store import checked_shards, corrupt_shards_error, latest_rows, naming_corrupt_shards, scan_shards
from engine.results.tables import RESULTS, VIDEO_STATS, Table, table_of
from engine.results.video_stats import latest_video_stats

__all__ = ["ResultsDir", "check_results_dir", "own_rows"]


def check_results_dir(out_dir: str | Path) -> Path:
    """`out_dir` as a Path, when it is a results directory (one holding ``results/``, which `run` makes first).

    Raises:
        NoResultsDirError: naming it; the one message every command prints for it.
    """
    out = Path(out_dir)
    if not (out / "results").is_dir():
        raise NoResultsDirError(f"{out}: no results/ directory (not a framesweep results directory?)")
    return out


class ResultsDir:
    """A results directory as a command reads it (see the module docstring)."""

    def __init__(self, path: Path, manifest: dict[str, Any], has_manifest: bool, sweep_id: str | None) -> None:
        self.path = path
        self.manifest = manifest
        self.has_manifest = has_manifest
        self.sweep_id = sweep_id
        """The sweep whose rows are the directory's own (None: every row counts)."""
        self._tables: dict[str, tuple[list[Path], list[tuple[Path, str]]]] = {}

    @classmethod
    def open(cls, out_dir: str | Path, *, sweep_id: str | None = None) -> ResultsDir:
        """Read the manifest of `out_dir` (none: {}, and every row counts); shards are checked on first use.

        Args:
            sweep_id: read the rows of this sweep (default: the one the manifest names).

        Raises:
            NoResultsDirError, ManifestError: naming the directory or the file.
        """
        out = check_results_dir(out_dir)
        doc = read_manifest(out)
        return cls(out, doc, (out / MANIFEST).is_file(), sweep_id or doc.get("sweep_id"))

    @classmethod
    def of(cls, out_dir: str | Path | ResultsDir) -> ResultsDir:
        """`out_dir` itself when it is opened already, else `open(out_dir)`."""
        return out_dir if isinstance(out_dir, ResultsDir) else cls.open(out_dir)

    def __repr__(self) -> str:
        return f"ResultsDir({str(self.path)!r}, sweep_id={self.sweep_id!r})"

    def need_manifest(self) -> None:
        """Raise `ManifestError` unless the directory has a manifest (what `status` counts against)."""
        if not self.has_manifest:
            read_manifest(self.path, required=True)

    def _checked(self, table: Table = RESULTS) -> tuple[list[Path], list[tuple[Path, str]]]:
        """(readable shards, [(bad shard, why)]) of a table: every live shard's footer checked, once."""
        if table.folder not in self._tables:
            self._tables[table.folder] = checked_shards(self.path, table)
        return self._tables[table.folder]

    def relisted(self) -> ResultsDir:
        """This directory as it is now (after a run committed shards): the manifest as read, the shards listed
        again, the footers of the shards it had checked already not read again."""
        again = ResultsDir(self.path, self.manifest, self.has_manifest, self.sweep_id)
        for folder, (good, _) in self._tables.items():
            again._tables[folder] = checked_shards(self.path, table_of(folder), known=set(good))
        return again

    @property
    def bad(self) -> list[tuple[Path, str]]:
        """(shard, why) for each result shard whose footer does not read as the result schema."""
        return list(self._checked()[1])

    def shards_of(self, table: Table = RESULTS) -> list[Path]:
        """A table's live shards, every one readable (`CorruptShardError` naming the bad ones otherwise)."""
        good, bad = self._checked(table)
        if bad:
            raise corrupt_shards_error(self.path, bad, table)
        return list(good)

    @property
    def shards(self) -> list[Path]:
        """The live result shards, every one readable (`CorruptShardError` naming the bad ones otherwise)."""
        return self.shards_of(RESULTS)

    def table(self, table: Table) -> pl.LazyFrame:
        """Every committed row of a table of the directory (`engine.results.tables`), lazily."""
        return scan_shards(self.shards_of(table), table=table)

    def scan(self) -> pl.LazyFrame:
        """Every committed row (all attempts, every sweep), lazily."""
        return self.table(RESULTS)

    def video_stats(self) -> pl.LazyFrame:
        """One row per (dataset, video_id): its statistics read from the most frames (`engine.results.video_stats`)."""
        return latest_video_stats(self.table(VIDEO_STATS))

    def attempts(self) -> pl.LazyFrame:
        """Every committed row of the directory's own sweep (all attempts; every row without a sweep id)."""
        rows = self.scan()
        return rows if self.sweep_id is None else rows.filter(pl.col("sweep_id") == self.sweep_id)

    def rows(self) -> pl.LazyFrame:
        """One row per key of the directory's own sweep: its ok row if it has one, else its latest error."""
        return latest_rows(self.attempts())

    @functools.cached_property
    def foreign(self) -> list[Path]:
        """Shards holding any row of another sweep than the directory's (read once: their `sweep_id` column)."""
        paths = self.shards
        if self.sweep_id is None or not paths:
            return []
        with self.reading():
            found = (scan_shards(paths, with_paths=True)
                     .filter(pl.col("sweep_id").ne_missing(self.sweep_id)).select(pl.col("_shard").unique()).collect())
        return sorted(Path(p) for p in found["_shard"])

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Collect inside: a Polars or OS error is turned into `CorruptShardError` naming each shard that does
        not read whole, of any table (`engine.results.store.naming_corrupt_shards`)."""
        with naming_corrupt_shards(self.path):
            yield


def own_rows(out_dir: str | Path) -> tuple[pl.LazyFrame, list[Path]]:
    """`ResultsDir.open(out_dir)`'s rows and foreign shards."""
    rd = ResultsDir.open(out_dir)
    return rd.rows(), rd.foreign

