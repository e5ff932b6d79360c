"""Shard compaction: `status` and `metrics` over a results directory of many small shards, before and after
`framesweep compact`.

A sweep commits a shard every few seconds: a day is ~17,000 shards. The directory here holds --shards
committed shards of --rows rows each (one sweep: --models models x Video-MME-like items x budgets text, 16, 32,
64, 128 and 256 frames, each row with its frame indices, every row ok; 20,000 x 10 rows is 12 models x 2,778
items x 6 budgets, the issue's ~200k jobs), written once per shape into the cache dir and copied for each run. Measured, each in a fresh
process (perf_counter around the call, imports excluded; `*_cli_s`: the whole `framesweep status` process):

    status_s_before / metrics_s_before    over the --shards small shards
    compact_s                             `framesweep compact OUT --grace-s 0` (the lock, every page checksum
                                          verified, the compacted shards written and fsynced, inputs removed)
    status_s_20k_shards / metrics_s_after over the compacted directory (the name of the fixed key says the
                                          default shape: a directory that held 20,000 shards)

`metrics` is `framesweep metrics OUT --n-boot 0`'s work (every table and the document, no bootstrap). A
measurement that runs past --before-timeout is reported as null with `*_timed_out` true.

    python benchmarks/shard_compaction.py --shards 20000 --output-json out.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from engine.results.manifest import write_manifest
from engine.results.pages import encode_shard
from engine.results.schema import ResultRow, rows_to_frame
from engine.results.shards import live_shards
from engine.runtime.atomic import atomic_write
from engine.runtime.paths import cache_dir

BUDGETS = ("text", "f16", "f32", "f64", "f128", "f256")
KEYS = ("status_s_20k_shards", "status_s_before", "metrics_s_after", "metrics_s_before", "compact_s",
        "shards_before", "shards_after", "rows")


def add_cli_args(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--shards", type=int, default=20_000, help="small shards in the directory (a commit each)")
    p.add_argument("--rows", type=int, default=10, help="rows per shard")
    p.add_argument("--models", type=int, default=12, help="models the rows are spread over")
    p.add_argument("--before-timeout", type=float, default=900.0, help="give up a `before` measurement after this")
    p.add_argument("--work-dir", type=Path, default=None, help="where the directory is copied (default: a temp dir)")
    p.add_argument("--output-json", type=Path, default=None, help="write the figures here")
    return p


def _row(k: int, shard: int, items: int) -> ResultRow:
    """Job `k`: model-major, then item, then budget (a sweep commits a model's videos' budgets together)."""
    model, rest = divmod(k, items * len(BUDGETS))
    item, b = divmod(rest, len(BUDGETS))
    budget = BUDGETS[b]
    frames = 0 if budget == "text" else int(budget[1:])
    right = (item * 7 + b * 3 + model) % 5 != 0
    return ResultRow(sweep_id="bench", model_id=f"model-{model:02d}", model_family="qwen2_5_vl", dataset="videomme",
                     dataset_version="1", item_id=f"q{item:05d}", video_id=f"v{item // 3:05d}", task_kind="mcq",
                     task_type="perception", budget_id=budget, frames=frames, policy="uniform", seed=0,
                     frame_indices=list(range(0, 4 * frames, 4)) if frames else None,
                     option_probs=[0.4, 0.3, 0.2, 0.1], response="B", pred="B" if right else "A", answer="B",
                     correct=right, confidence=0.4, status="ok", attempt=1, answer_fingerprint="fp",
                     finished_at=datetime(2025, 1, 1, tzinfo=UTC) + timedelta(seconds=5 * shard))


def generate(root: Path, shards: int, rows: int, models: int) -> Path:
    """The pristine directory of this shape (written once: shards are encoded as commits encode them)."""
    out = root / f"shards-{shards}x{rows}-{models}m"
    if (out / "manifest.json").exists():
        return out
    shutil.rmtree(out, ignore_errors=True)
    (out / "results").mkdir(parents=True)
    items = -(-shards * rows // (models * len(BUDGETS)))
    total = min(shards * rows, models * items * len(BUDGETS))
    for s in range(shards):
        batch = [_row(k, s, items) for k in range(s * rows, min(total, (s + 1) * rows))]
        if batch:
            atomic_write(out / "results" / f"part-{s:08d}.parquet", encode_shard(rows_to_frame(batch)), durable=False)
    expected = {f"model-{m:02d}": dict.fromkeys(BUDGETS, items) for m in range(models)}
    write_manifest(out, {"sweep_id": "bench", "expected_by_dataset": {"videomme": expected}})  # last: complete
    return out


_CHILD = """
import json, sys, time
what, out = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
if what == "status":
    from engine.metrics.status import sweep_status
    t0 = time.perf_counter()
    done = sweep_status(out).done
else:
    from engine.metrics.document import summary_document
    from engine.metrics.summary import SummaryOptions, load_rows, summary_tables
    t0 = time.perf_counter()
    opts = SummaryOptions(n_boot=0)
    done = len(summary_document(summary_tables(load_rows(out), opts), opts, source=out)["groups"])
print(json.dumps({"seconds": time.perf_counter() - t0, "value": done}))
"""


def measure(what: str, out: Path, timeout: float | None = None) -> dict[str, Any]:
    """`status` or `metrics` over `out` in a fresh process: seconds inside it (None past `timeout`)."""
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD, what, str(out)], capture_output=True, text=True,
                              check=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"seconds": None, "value": None, "timed_out": True}
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "timed_out": False}


def _cli(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True, text=True, check=True)
    return time.perf_counter() - t0


def fmt(seconds: float | None) -> str:
    return "timed out" if seconds is None else f"{seconds:.2f}s"


def main(args: argparse.Namespace) -> dict[str, Any]:
    pristine = generate(cache_dir() / "bench", args.shards, args.rows, args.models)
    work = Path(tempfile.mkdtemp(prefix="fs-compaction-", dir=args.work_dir))
    out = work / "out"
    try:
        shutil.copytree(pristine, out)
        before_n = len(live_shards(out))
        status_before = measure("status", out, args.before_timeout)
        metrics_before = measure("metrics", out, args.before_timeout)
        compact_s = _cli(["compact", str(out), "--grace-s", "0"])
        status_after, metrics_after = measure("status", out), measure("metrics", out)
        result = {
            "status_s_20k_shards": status_after["seconds"], "status_s_before": status_before["seconds"],
            "metrics_s_after": metrics_after["seconds"], "metrics_s_before": metrics_before["seconds"],
            "compact_s": compact_s, "shards_before": before_n, "shards_after": len(live_shards(out)),
            "rows": args.shards * args.rows, "status_done_after": status_after["value"],
            "status_done_before": status_before["value"], "metrics_groups_after": metrics_after["value"],
            "status_before_timed_out": status_before["timed_out"],
            "metrics_before_timed_out": metrics_before["timed_out"],
            "status_cli_s_after": _cli(["status", str(out)]),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"shard_compaction: {result['shards_before']} shards of {args.rows} rows -> {result['shards_after']} in "
          f"{compact_s:.1f}s; status {fmt(result['status_s_before'])} -> {fmt(result['status_s_20k_shards'])}, "
          f"metrics --n-boot 0 {fmt(result['metrics_s_before'])} -> {fmt(result['metrics_s_after'])}")
    if args.output_json:
        args.output_json.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main(add_cli_args(argparse.ArgumentParser(description=__doc__.splitlines()[0])).parse_args())
