"""The driver's ceiling: how many jobs per second one driver process plans, views, builds, scores and commits.

A sweep of ~200k jobs (12 models x 6 budgets x 3 questions over ~930 synthetic videos by default) runs
through the whole pipeline (`Sweep.run`: plan, decode on decode actors, per-budget views, request
building, scoring, commits) against a benchmark-only engine that answers every request at once
(`BenchmarkInstantEngine`, defined here and never selectable in a spec). Budgets read the frame cache,
filled by an untimed warm-up sweep, so decoding costs little; the decode actors run in Ray beside the
driver and hand the engine frames by reference, as engines in the cluster get them.

Reported: jobs/s sustained (from 10% to 100% of the jobs, so start-up is left out), the driver's RSS at
10%, 50% and 100% of the jobs and its growth from 10% to 100%, and the frame bytes that entered the
driver per job: those the run itself counts (`SweepSummary.driver_frame_bytes`) and frame arrays
deserialised in the driver (`engine.frames.meter.FrameMeter`). Frame bytes between nodes need two
nodes: `internode_frame_bytes_per_job` is null here (tests/e2e/test_two_nodes.py measures it).

    python benchmarks/driver_ceiling.py --quick --output-json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

from engine.backends.base import BackendBase, EngineRequest, EngineResult
from engine.frames.view import FrameRef

KEYS = ("driver_jobs_per_s", "driver_rss_growth", "driver_frame_bytes_per_job", "internode_frame_bytes_per_job")
MARKS = (0.1, 0.5, 1.0)


def add_cli_args(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--quick", action="store_true", help="a small sweep (about 2,000 jobs) to check the pipeline")
    p.add_argument("--jobs", type=int, default=200_000, help="jobs to run (rounded up to whole videos)")
    p.add_argument("--models", type=int, default=12)
    p.add_argument("--questions", type=int, default=3, choices=[1, 2, 3])
    p.add_argument("--budgets", default="0,16,32,64,128,256", help="frames per budget, 0 = text-only")
    p.add_argument("--seconds", type=float, default=4.0, help="video length")
    p.add_argument("--fps", type=int, default=16)
    p.add_argument("--size", default="64x48", help="video WxH")
    p.add_argument("--pipeline", default="cached", choices=["cached", "raw"])
    p.add_argument("--decode-actors", type=int, default=1, help="0: decode in the driver (the fallback path)")
    p.add_argument("--max-videos-in-flight", type=int, default=4)
    p.add_argument("--work", type=Path, default=Path("/tmp/framesweep-driver-ceiling"),
                   help="videos' frame cache and results (the cache is kept for later runs)")
    p.add_argument("--output-json", type=Path, default=None)
    return p


class BenchmarkInstantEngine(BackendBase):
    """A benchmark-only engine: answers every request at once (option A, certain) without reading its frames,
    as an engine elsewhere in the cluster would receive them (by reference). Not a spec backend."""

    name = "benchmark-instant"

    def __init__(self) -> None:
        self.by_ref = 0
        self.with_pixels = 0

    @property
    def takes_frame_refs(self) -> bool:
        return True

    async def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        for r in requests:
            if isinstance(r.video, FrameRef):
                self.by_ref += 1
            elif r.video is not None:
                self.with_pixels += 1
        return [EngineResult(r.request_id, text="A", letter_logprobs={x: (0.0 if x == "A" else -30.0)
                                                                       for x in r.letters},
                             prompt_tokens=1, output_tokens=1, engine_s=0.0, worker="benchmark")
                for r in requests]


def _spec(args: argparse.Namespace, out: Path, n_videos: int, n_models: int) -> Any:
    from engine.config import parse_spec

    w, h = (int(x) for x in args.size.split("x"))
    budgets = [int(b) for b in args.budgets.split(",")]
    return parse_spec({
        "sweep_id": "driver-ceiling",
        "models": [{"id": f"m{i:02d}", "family": "qwen2_5_vl", "path": "benchmark"} for i in range(n_models)],
        "dataset": {"name": "synthetic", "n_videos": n_videos, "seconds": args.seconds, "fps": args.fps,
                    "width": w, "height": h,
                    "questions": ["flash_count", "first_colour", "static_shape"][: args.questions]},
        "budgets": [{"frames": b} for b in budgets],
        "decode": {"actors": args.decode_actors, "actor_cpus": 1.0, "pipeline": args.pipeline,
                   "cache_dir": str(args.work / "frames"), "max_videos_in_flight": args.max_videos_in_flight},
        "store": {"out_dir": str(out), "commit_interval_s": 5.0},
    })


class _Marks:
    """The driver's RSS and the time when 10%, 50% and 100% of the jobs are done (a progress callback)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.at: dict[float, tuple[float, float]] = {}  # mark -> (seconds, RSS MiB)
        self.t0 = time.perf_counter()
        self._proc = psutil.Process()

    def __call__(self, event: str, n: int) -> None:
        if event != "done":
            return
        self.done += n
        for mark in MARKS:
            if mark not in self.at and self.done >= mark * self.total:
                self.at[mark] = (time.perf_counter() - self.t0, self._proc.memory_info().rss / 2**20)


async def _run(spec: Any, engine: BenchmarkInstantEngine, marks: _Marks | None) -> Any:
    from engine.sweep import Sweep

    backends = {m.id: engine for m in spec.models}
    return await Sweep(spec, backends=backends, progress=marks).run()


def _warm_up(args: argparse.Namespace, n_videos: int) -> float:
    """Fill the frame cache with every video's frames (one model, untimed); seconds it took."""
    t0 = time.perf_counter()
    spec = _spec(args, args.work / "warm-up", n_videos, 1)
    shutil.rmtree(spec.store.out_dir, ignore_errors=True)
    asyncio.run(_run(spec, BenchmarkInstantEngine(), None))
    return time.perf_counter() - t0


def main(args: argparse.Namespace) -> dict[str, Any]:
    import ray

    from engine.frames.meter import FrameMeter

    if args.quick:
        args.jobs, args.models = min(args.jobs, 2_000), min(args.models, 4)
    per_video = args.models * len(args.budgets.split(",")) * args.questions
    n_videos = max(1, math.ceil(args.jobs / per_video))
    args.work.mkdir(parents=True, exist_ok=True)
    warm_s = _warm_up(args, n_videos) if args.pipeline == "cached" else 0.0
    ray.shutdown()
    spec = _spec(args, args.work / "run", n_videos, args.models)
    shutil.rmtree(spec.store.out_dir, ignore_errors=True)
    engine = BenchmarkInstantEngine()
    marks = _Marks(n_videos * per_video)
    with FrameMeter() as meter:
        summary = asyncio.run(_run(spec, engine, marks))
    ray.shutdown()
    return _report(args, summary, marks, meter, engine, warm_s)


def _report(args: argparse.Namespace, summary: Any, marks: _Marks, meter: Any, engine: BenchmarkInstantEngine,
            warm_s: float) -> dict[str, Any]:
    jobs = summary.jobs_ok + summary.jobs_failed
    (t10, rss10), (t50, rss50), (t100, rss100) = (marks.at[m] for m in MARKS)
    out: dict[str, Any] = {
        "driver_jobs_per_s": (marks.done - math.ceil(0.1 * marks.total)) / (t100 - t10) if t100 > t10 else None,
        "driver_rss_growth": rss100 / rss10 - 1.0,
        "driver_frame_bytes_per_job": (summary.driver_frame_bytes + meter.bytes) / jobs,
        "internode_frame_bytes_per_job": None,
        "internode_note": "needs two nodes: tests/e2e/test_two_nodes.py measures it",
        "jobs": jobs, "jobs_ok": summary.jobs_ok, "videos": summary.videos, "models": args.models,
        "wall_s": summary.wall_s, "jobs_per_s_whole_run": jobs / summary.wall_s,
        "rss_mb": {"10%": rss10, "50%": rss50, "100%": rss100}, "seconds_at": {"10%": t10, "50%": t50, "100%": t100},
        "driver_frame_bytes": summary.driver_frame_bytes, "frame_arrays_deserialised": meter.arrays,
        "frame_bytes_deserialised": meter.bytes, "requests_by_ref": engine.by_ref,
        "requests_with_pixels": engine.with_pixels, "decode_actors": len(summary.decode_workers),
        "decode_calls": summary.decode_calls, "pipeline": args.pipeline, "warm_up_s": warm_s,
    }
    print(f"driver: {out['driver_jobs_per_s']:.0f} jobs/s sustained ({jobs} jobs, {summary.videos} videos, "
          f"{out['decode_actors']} decode actor(s)); RSS {rss10:.0f} -> {rss50:.0f} -> {rss100:.0f} MiB "
          f"({out['driver_rss_growth']:+.1%}); frame bytes into the driver per job: "
          f"{out['driver_frame_bytes_per_job']:.0f}")
    if args.output_json:
        args.output_json.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main(add_cli_args(argparse.ArgumentParser(description=__doc__.splitlines()[0])).parse_args())
