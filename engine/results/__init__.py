"""The results dataset: one row per (model, dataset, item, budget), committed as Parquet shards.

    schema.py     the result row and its Polars schema (defined once, here)
    store.py      ResultStore: atomic shard commits, resume keys; scan_results / own_rows for readers
    committed.py  what a rerun reads in one pass: done keys, attempts, answer fingerprints, foreign shards
    manifest.py   OUT/manifest.json, read (one failure rule: ManifestError) and written in one place
    lock.py       OUT/.lock: one driver at a time, checked before every commit
    errors.py     what reading or writing a results directory fails with
    pages.py      Parquet page checksums: written with every shard, verified by `framesweep doctor`
    lmms_eval.py  import lmms-eval sample logs as result rows (paired comparison with a peer harness)
    lmms_logs.py  lmms-eval's log layout and what each log's results.json records (frames, model, task data)
    lmms_merge.py one key, one answer: imported logs merged and checked against the directory

The one reader of a results directory, as every command reads it: `own_rows(OUT)` (one row per key of the
directory's own sweep; shards of another sweep left out and named).
"""

from engine.results.store import own_rows

__all__ = ["own_rows"]
