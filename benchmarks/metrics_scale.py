"""Metrics at scale: `framesweep metrics --json` on a generated Video-MME-sized results dataset.

The dataset (written once per shape into --out, default a temp folder) has --models models x
--items items x 6 budgets (text, 8, 16, 32, 64, 128 frames), one Parquet shard per model, with
each item's correctness drawn from an item difficulty and a model skill that grows with frames
(so items flip both ways, as real ones do), plus a confidence and a task type. Then the whole
metrics document is computed two ways, each in a fresh process so peak memory is its own:

    no_boot   every table and the document, no bootstrap replicates
    boot      the same with --n-boot replicates (default 1000): the confidence intervals

The JSON gives rows, seconds and peak_rss_mb of the `boot` run (the fixed keys), the same for
`no_boot`, and their ratios (what the intervals cost).

    python benchmarks/metrics_scale.py --models 40 --items 2700 --output-json out.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

BUDGETS = {"text": 0, "f8": 8, "f16": 16, "f32": 32, "f64": 64, "f128": 128}
KEYS = ("rows", "seconds", "peak_rss_mb", "n_boot")


def add_cli_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--models", type=int, default=10, help="models in the generated dataset")
    p.add_argument("--items", type=int, default=2700, help="items per model (Video-MME has 2,700)")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap replicates of the `boot` run")
    p.add_argument("--out", type=Path, default=None, help="dataset folder (default: a temp folder, kept per shape)")
    p.add_argument("--output-json", type=Path, default=None, help="write the figures here")


def generate(out: Path, n_models: int, n_items: int, seed: int = 0) -> int:
    """Write the results dataset (idempotent per shape); returns its row count."""
    from engine.results.schema import RESULT_SCHEMA

    results = out / "results"
    marker = out / f".shape-{n_models}x{n_items}"
    n_rows = n_models * n_items * len(BUDGETS)
    if marker.exists():
        return n_rows
    results.mkdir(parents=True, exist_ok=True)
    for old in results.glob("part-*.parquet"):
        old.unlink()
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0.0, 1.2, n_items)
    tasks = np.array(["perception", "reasoning", "counting", "temporal"])[rng.integers(0, 4, n_items)]
    for m in range(n_models):
        skill = rng.normal(0.0, 0.3)
        parts = []
        for b, frames in BUDGETS.items():
            logit = skill + 0.25 * np.log2(1 + frames) - difficulty + rng.normal(0.0, 0.8, n_items)
            correct = rng.random(n_items) < 1 / (1 + np.exp(-logit))
            parts.append(pl.DataFrame({
                "sweep_id": "scale", "model_id": f"model-{m:03d}", "model_family": "qwen2_5_vl",
                "dataset": "videomme", "dataset_version": "1", "item_id": [f"q{i:05d}" for i in range(n_items)],
                "video_id": [f"v{i // 3:05d}" for i in range(n_items)], "task_kind": "mcq", "task_type": tasks,
                "budget_id": b, "frames": frames, "frames_sent": frames, "policy": "uniform", "seed": 0,
                "width": 448 if frames else None, "height": 252 if frames else None,
                "pixels_total": frames * 448 * 252, "pipeline": "raw", "status": "ok", "attempt": 1,
                "pred": np.where(correct, "A", "B"), "answer": "A", "correct": correct,
                "score": correct.astype(np.float64), "confidence": rng.uniform(0.25, 1.0, n_items),
            }))
        frame = pl.concat(parts, how="diagonal_relaxed")
        frame = frame.select([pl.col(c).cast(t) if c in frame.columns else pl.lit(None, dtype=t).alias(c)
                              for c, t in RESULT_SCHEMA.items()])
        frame.write_parquet(results / f"part-{m:05d}.parquet", compression="zstd")
    (out / "manifest.json").write_text(json.dumps({"sweep_id": "scale"}))
    marker.touch()
    return n_rows


_CHILD = """
import json, resource, sys, time
from engine.metrics.document import summary_document
from engine.metrics.summary import SummaryOptions, load_rows, summary_tables
out, n_boot = sys.argv[1], int(sys.argv[2])
t0 = time.perf_counter()
opts = SummaryOptions(n_boot=n_boot)
doc = summary_document(summary_tables(load_rows(out), opts), opts, source=out)
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "groups": len(doc["groups"])}))
"""


def measure(out: Path, n_boot: int) -> dict[str, Any]:
    """The metrics document in a fresh process: wall seconds (perf_counter, inside) and peak RSS."""
    done = subprocess.run([sys.executable, "-c", _CHILD, str(out), str(n_boot)], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(args: argparse.Namespace) -> dict[str, Any]:
    out = args.out or Path(tempfile.gettempdir()) / "framesweep-metrics-scale"
    t0 = time.perf_counter()
    rows = generate(out, args.models, args.items)
    gen_s = time.perf_counter() - t0
    no_boot = measure(out, 0)
    boot = measure(out, args.n_boot)
    result = {
        "rows": rows, "seconds": round(boot["seconds"], 2), "peak_rss_mb": round(boot["peak_rss_mb"], 1),
        "n_boot": args.n_boot, "models": args.models, "items": args.items, "groups": boot["groups"],
        "seconds_no_boot": round(no_boot["seconds"], 2), "peak_rss_mb_no_boot": round(no_boot["peak_rss_mb"], 1),
        "boot_over_no_boot_seconds": round(boot["seconds"] / max(no_boot["seconds"], 1e-9), 2),
        "boot_over_no_boot_rss": round(boot["peak_rss_mb"] / max(no_boot["peak_rss_mb"], 1e-9), 2),
        "generate_s": round(gen_s, 2),
    }
    print(f"metrics_scale: {rows} rows, {args.n_boot} replicates: {result['seconds']} s, "
          f"{result['peak_rss_mb']} MB peak (no replicates: {result['seconds_no_boot']} s, "
          f"{result['peak_rss_mb_no_boot']} MB)")
    if args.output_json:
        args.output_json.write_text(json.dumps({k: result[k] for k in KEYS} | result, indent=2))
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_cli_args(parser)
    main(parser.parse_args())
