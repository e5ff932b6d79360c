"""The results dataset: one row per (model, dataset, item, budget), committed as Parquet shards.

    schema.py     the result row and its Polars schema, and the video-stats and prediction tables' (defined once, here)
    tables.py     the three tables (results/, video_stats/, predictions/) and the one shard name and writer
    directory.py  ResultsDir: the one reader of a results directory (manifest, own rows, foreign and bad shards)
    store.py      ResultStore: atomic shard commits, resume keys; the footer checks and scans ResultsDir uses
    committed.py  what a rerun reads in one pass: done keys, attempts, answer fingerprints, foreign shards
    manifest.py   OUT/manifest.json, read (one failure rule: ManifestError) and written in one place
    lock.py       OUT/.lock: one driver at a time, checked before every commit
    errors.py     what reading or writing a results directory fails with
    pages.py      Parquet page checksums: written with every shard of every table, verified by `framesweep doctor`
    lmms_eval.py  import lmms-eval sample logs as result rows (paired comparison with a peer harness)
    lmms_logs.py  lmms-eval's log layout and what each log's results.json records (frames, model, task data)
    lmms_merge.py one key, one answer: imported logs merged and checked against the directory

The one reader of a results directory, as every command reads it: `ResultsDir.open(OUT)` (its manifest;
`.rows()` one row per key of the directory's own sweep; `.foreign` the shards of another sweep left out;
`.bad` the shards that do not read; `.video_stats()` each video's statistics), each shard's footer checked once. `own_rows(OUT)` is its rows and
foreign shards in one call.
"""

from engine.results.directory import ResultsDir, own_rows
from engine.results.errors import CorruptShardError, ManifestError, NoResultsDirError, ResultsDirError

__all__ = ["CorruptShardError", "ManifestError", "NoResultsDirError", "ResultsDir", "ResultsDirError", "own_rows"]
