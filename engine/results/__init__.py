"""The results dataset: one row per (model, dataset, item, budget), committed as Parquet shards.

    schema.py     the result row and its Polars schema (defined once, here)
    store.py      ResultStore: atomic shard commits, resume keys, the manifest; scan_results for readers
    lmms_eval.py  import lmms-eval sample logs as result rows (paired comparison with a peer harness)
    lmms_logs.py  lmms-eval's log layout and what each log's results.json records (frames, model, task data)
    lmms_merge.py one key, one answer: imported logs merged and checked against the directory
"""
