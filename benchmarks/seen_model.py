"""The trained tiny model's goals, measured on held-out items through a real sweep.

`tiny:qwen2_5_vl_seen` (trained by `tools/train_tiny.py` on videos of its own seed stream) answers the
synthetic benchmark's version-2 questions on videos of evaluation seeds it never saw, through the whole
pipeline (real H.264 decode, the frame planner, the vLLM CPU engine, letter scoring). Budgets: text only,
4, 8, 16 and 32 uniform frames at full size (112x84), and 16 frames at half size (`short_side` 42).

Printed and written (`--output-json`, fixed keys): accuracy per question kind and budget with a percentile
bootstrap interval over items, and the goals of the issue that asked for the model:

    text_only_at_chance      text-only accuracy's interval holds chance (1/4)
    one_frame_at_16          at 16 frames, accuracy >= 0.85 on each question one frame answers
                             (first colour, last colour: the first or last frame; static shape: any)
    flash_rises              flash counting: 4 < 8 < 16 frames, and the 4- and 16-frame intervals do not overlap
    resolution_question      texture (fine detail): at half size its interval holds chance; at full size (16 frames)
                             it passes: accuracy >= 0.75 and its interval above chance

    python benchmarks/seen_model.py --videos 40 --output-json out.json
    python benchmarks/seen_model.py --smoke      # 4 videos: checks the script end to end (no figure to quote)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

CHANCE = 0.25
ONE_FRAME = ("first_colour", "last_colour", "static_shape")
KINDS = ("flash_count", *ONE_FRAME, "texture")
LOW = "f16-s42"


def spec_dict(out: Path, videos: int, seed: int) -> dict[str, Any]:
    budgets: list[dict[str, Any]] = [{"frames": n} for n in (0, 4, 8, 16, 32)]
    budgets.append({"frames": 16, "short_side": 42})
    return {
        "sweep_id": "seen-model",
        "models": [{"id": "seen", "family": "qwen2_5_vl", "path": "tiny:qwen2_5_vl_seen", "max_frames": 32,
                    "engine": {"max_model_len": 4096, "max_num_seqs": 32, "dtype": "float32"}}],
        "dataset": {"name": "synthetic", "version": 2, "n_videos": videos, "seed": seed},
        "budgets": budgets,
        "prompt": {"scoring": "letter"},
        "store": {"out_dir": str(out), "commit_interval_s": 5.0},
    }


def run_sweep(spec: dict[str, Any]) -> pl.DataFrame:
    from engine.config import parse_spec
    from engine.results.directory import ResultsDir
    from engine.sweep import Sweep

    sweep = parse_spec(spec)
    asyncio.run(Sweep(sweep).run())
    return ResultsDir.open(spec["store"]["out_dir"]).rows().collect()


def interval(values: np.ndarray, reps: int, seed: int) -> tuple[float, float, float]:
    """Mean and 95% percentile bootstrap interval over items."""
    rng = np.random.default_rng(seed)
    boots = values[rng.integers(0, len(values), size=(reps, len(values)))].mean(axis=1)
    return float(values.mean()), float(np.quantile(boots, 0.025)), float(np.quantile(boots, 0.975))


def budget_name(frames: int, short_side: int | None) -> str:
    return f"f{frames}" + (f"-s{short_side}" if short_side else "")


def accuracy_table(rows: pl.DataFrame, reps: int) -> dict[str, dict[str, list[float]]]:
    """{budget: {kind or "all": [accuracy, low, high]}} over the rows without errors."""
    ok = rows.filter(pl.col("error_type").is_null())
    out: dict[str, dict[str, list[float]]] = {}
    for (frames, short), g in sorted(ok.group_by(["frames", "short_side"]),
                                     key=lambda kv: (kv[0][1] is not None, kv[0][0])):
        name = budget_name(int(frames), short)  # type: ignore[arg-type]
        out[name] = {}
        for kind in (*KINDS, "all"):
            sub = g if kind == "all" else g.filter(pl.col("task_type") == kind)
            if sub.height:
                values = sub["correct"].cast(pl.Float64).to_numpy()
                out[name][kind] = [round(x, 4) for x in interval(values, reps, seed=len(out) * 7 + len(kind))]
    return out


def goals(acc: dict[str, dict[str, list[float]]]) -> dict[str, bool]:
    def a(budget: str, kind: str) -> list[float]:
        return acc[budget][kind]

    text = a("f0", "all")
    flash = [a(b, "flash_count") for b in ("f4", "f8", "f16")]
    return {
        "text_only_at_chance": text[1] <= CHANCE <= text[2],
        "one_frame_at_16": all(a("f16", k)[0] >= 0.85 for k in ONE_FRAME),
        "flash_rises": flash[0][0] < flash[1][0] < flash[2][0] and flash[0][2] < flash[2][1],
        "resolution_question": a(LOW, "texture")[1] <= CHANCE <= a(LOW, "texture")[2]
        and a("f16", "texture")[0] >= 0.75 and a("f16", "texture")[1] > CHANCE,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--videos", type=int, default=40, help="held-out videos (5 questions each)")
    p.add_argument("--seed", type=int, default=1000, help="the evaluation seed of the videos")
    p.add_argument("--reps", type=int, default=2000, help="bootstrap replicates")
    p.add_argument("--smoke", action="store_true", help="4 videos: checks the script end to end")
    p.add_argument("--out-dir", type=Path, default=None, help="results directory (default: a temporary one)")
    p.add_argument("--output-json", type=Path, default=None)
    args = p.parse_args(argv)
    videos = 4 if args.smoke else args.videos
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out_dir or Path(tmp) / "run"
        rows = run_sweep(spec_dict(out, videos, args.seed))
    acc = accuracy_table(rows, args.reps)
    met = goals(acc)
    result = {"model": "tiny:qwen2_5_vl_seen", "videos": videos, "items": videos * len(KINDS), "seed": args.seed,
              "budgets": list(acc), "accuracy": acc, "goals": met, "all_goals_met": all(met.values()),
              "errors": int(rows["error_type"].is_not_null().sum()), "wall_s": round(time.perf_counter() - t0, 1)}
    for budget, kinds in acc.items():
        cells = "  ".join(f"{k}={v[0]:.2f} [{v[1]:.2f},{v[2]:.2f}]" for k, v in kinds.items())
        print(f"{budget:8} {cells}")
    print("goals: " + ", ".join(f"{k}={'met' if v else 'NOT met'}" for k, v in met.items()))
    if args.output_json:
        args.output_json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
