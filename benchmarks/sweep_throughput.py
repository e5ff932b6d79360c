"""Sweep throughput: framesweep end to end vs the raw engine vs a naive harness, side by side.

The same sweep (videos x questions x budgets on the synthetic benchmark, tiny
Qwen2.5-VL by default) is run three ways in one session, each timed with
perf_counter around the measured work only (engines are started and warmed up
before their clocks start):

- raw: every request prepared in advance (frames already decoded), one
  `LLM.generate` call: the engine's limit;
- framesweep: `Sweep.run` end to end (plan, union decode, request, generate on
  the Ray actor, score, commit);
- naive: what common harnesses do: per job decode its own frames, generate in
  fixed batches, alternating, nothing shared.

decode_only_s is the union decode of every video (what framesweep must at least
spend on the CPU). `--rss-sizes 2,8` also runs framesweep over growing datasets
at a fixed in-flight cap and reports the driver's peak RSS for each.

Start-up, timed from outside as a user sees it: cold_start_s is a whole
`framesweep run` process from launch to its first committed row with no engine
running (Ray, the engine actor, vLLM's import and load included); warm_start_s
the same with the spec's engine already up (`framesweep engines up`, not timed).
Both run on the same sweep with commits every 0.5 s, in a cache folder of their
own (`--no-start-up` skips them). They run first; the three strategies then run
on the engine `engines up` left running (engine_reused: true), as a second run
would; with `--no-start-up` on an engine of their own.

    python benchmarks/sweep_throughput.py --quick --output-json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Self
from unittest import mock

import numpy as np

KEYS = ("raw_engine_s", "framesweep_s", "naive_s", "decode_only_s", "jobs", "prompt_tokens",
        "ratio_framesweep_over_raw", "ratio_naive_over_framesweep", "peak_rss_mb", "cold_start_s", "warm_start_s")


def add_cli_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="small grid, under 2 minutes")
    p.add_argument("--videos", type=int, default=6)
    p.add_argument("--questions", type=int, default=3, choices=[1, 2, 3])
    p.add_argument("--budgets", default="0,4,8,16,32", help="frames per budget, 0 = text-only")
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--fps", type=int, default=30)
    p.add_argument("--size", default="480x270", help="video WxH")
    p.add_argument("--max-pixels", type=int, default=224 * 224, help="per-frame pixel cap of visual budgets")
    p.add_argument("--family", default="qwen2_5_vl")
    p.add_argument("--model", default=None, help="checkpoint dir (default: the tiny one of --family)")
    p.add_argument("--load-format", default=None, help="e.g. dummy: random weights from the config")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--engine-core", default="auto", choices=["auto", "process", "in_process"],
                   help="where vLLM's engine core runs (engine.engine_core)")
    p.add_argument("--max-model-len", type=int, default=8192, help="engine context (64 frames at 448x448: 16384)")
    p.add_argument("--naive-batch", type=int, default=8)
    p.add_argument("--max-videos-in-flight", type=int, default=4)
    p.add_argument("--rss-sizes", default="", help="comma list of dataset sizes (videos) for the RSS sweep")
    p.add_argument("--start-up", action=argparse.BooleanOptionalAction, default=True,
                   help="time cold and warm start-up of a whole `framesweep run` (default: on)")
    p.add_argument("--output-json", type=Path, default=None)


def _spec(args: argparse.Namespace, out: Path, n_videos: int) -> Any:
    from engine.config import parse_spec

    return parse_spec(_spec_dict(args, out, n_videos))


def _spec_dict(args: argparse.Namespace, out: Path, n_videos: int) -> dict[str, Any]:
    w, h = (int(x) for x in args.size.split("x"))
    kinds = ["flash_count", "first_colour", "static_shape"][: args.questions]
    extra = {"load_format": args.load_format} if args.load_format else {}
    return {
        "sweep_id": "bench",
        "models": [{"id": "m", "family": args.family, "path": args.model or f"tiny:{args.family}",
                    "engine": {"max_model_len": args.max_model_len, "dtype": args.dtype, "extra": extra,
                               "engine_core": args.engine_core}}],
        "dataset": {"name": "synthetic", "n_videos": n_videos, "seconds": args.seconds, "fps": args.fps,
                    "width": w, "height": h, "questions": kinds},
        "budgets": [{"frames": int(b), "max_pixels": args.max_pixels} if int(b) else {"frames": 0}
                    for b in args.budgets.split(",")],
        "decode": {"max_videos_in_flight": args.max_videos_in_flight},
        "store": {"out_dir": str(out), "commit_interval_s": 5.0},
    }


def _with_start_up(args: argparse.Namespace, work: Path, spec: Any, items: list[Any],
                   rss_specs: dict[int, Any]) -> dict[str, Any]:
    """Cold, then warm: launch -> first committed row of a whole `framesweep run` (see the module doc); then
    every strategy on the engine that `engines up` started for the warm run (this process joins its cluster)."""
    from _startup import engines_up, private_cache, timed_run, write_spec_toml

    d = _spec_dict(args, work / "start", args.videos)
    d["store"]["commit_interval_s"] = 0.5
    start_spec = write_spec_toml(d, work / "start.toml")
    with private_cache() as env:
        cold = timed_run(start_spec, work / "start-cold", env)
        engines_up(start_spec, env)
        warm = timed_run(start_spec, work / "start-warm", env)
        with mock.patch.dict(os.environ, FRAMESWEEP_CACHE=env["FRAMESWEEP_CACHE"]):  # this process joins there
            out = asyncio.run(_all(args, spec, items, rss_specs))
    return out | {"cold_start_s": cold["first_row_s"], "warm_start_s": warm["first_row_s"],
                  "cold_run_s": cold["process_s"], "warm_run_s": warm["process_s"]}


def _views(spec: Any, items: list[Any]) -> tuple[list[tuple[Any, Any, Any]], float]:
    """Union-decode every video once (timed) and return (item, budget, MediaView | None) for every job."""
    from engine.frames.decode import DecodeRequest, decode_video, get_decoder
    from engine.frames.plan import plan_budget, union_indices
    from engine.frames.resize import size_for
    from engine.frames.view import MediaView

    by_video: dict[str, list[Any]] = {}
    for it in items:
        by_video.setdefault(it.video_id, []).append(it)
    jobs, t = [], 0.0
    for vid, its in by_video.items():
        t0 = time.perf_counter()
        info = get_decoder("pyav").probe(its[0].video_path)
        plans = {b.budget_id: plan_budget(b, info.n_frames, info.fps) for b in spec.budgets}
        decoded = decode_video(DecodeRequest(its[0].video_path, union_indices(plans.values())))
        t += time.perf_counter() - t0
        for b in spec.budgets_in_cost_order():
            idx = plans[b.budget_id].indices
            size = size_for(info.width, info.height, b)
            view = None if b.is_text_only else MediaView(decoded.view(idx, size), idx, info.fps, info.n_frames,
                                                         f"{vid}:{b.budget_id}", "pyav")
            jobs += [(it, b, view) for it in its]
    return jobs, t


async def _raw_and_naive(args: argparse.Namespace, spec: Any, items: list[Any], backend: Any) -> dict[str, Any]:
    from engine.backends.families import get_family
    from engine.frames.decode import DecodeRequest, decode_video, get_decoder
    from engine.frames.plan import plan_budget
    from engine.frames.resize import size_for
    from engine.frames.view import MediaView

    fam = get_family(args.family)
    jobs, decode_only = _views(spec, items)
    reqs = [fam.build(f"r{i}", it, v, "letter", None, 1) for i, (it, b, v) in enumerate(jobs)]
    await backend.actor.reset_caches.remote()
    t0 = time.perf_counter()
    res = await backend.generate(reqs)
    raw_call = time.perf_counter() - t0
    assert all(r.ok for r in res), [r.error for r in res if not r.ok][:3]
    raw = sum(r.engine_s for r in res)  # inside the actor, around the one LLM.generate call
    # naive: per job, decode its own frames; generate in fixed batches; alternate
    await backend.actor.reset_caches.remote()
    t0 = time.perf_counter()
    for start in range(0, len(jobs), args.naive_batch):
        batch = []
        for i, (it, b, _) in enumerate(jobs[start:start + args.naive_batch]):
            view = None
            if not b.is_text_only:
                info = get_decoder("pyav").probe(it.video_path)
                idx = plan_budget(b, info.n_frames, info.fps).indices
                d = decode_video(DecodeRequest(it.video_path, np.unique(idx)))
                size = size_for(info.width, info.height, b)
                view = MediaView(d.view(idx, size), idx, info.fps, info.n_frames, f"naive{start + i}", "pyav")
            batch.append(fam.build(f"n{start + i}", it, view, "letter", None, 1))
        await backend.generate(batch)
    naive = time.perf_counter() - t0
    return {"raw_engine_s": raw, "raw_call_s": raw_call, "naive_s": naive, "decode_only_s": decode_only,
            "jobs": len(jobs), "prompt_tokens": int(sum(r.prompt_tokens or 0 for r in res))}


class _RSS:
    """Peak resident memory of this (driver) process, sampled while a run goes."""

    def __init__(self) -> None:
        import psutil

        self.proc, self.peak, self._stop = psutil.Process(), 0, threading.Event()

    def __enter__(self) -> Self:
        def loop() -> None:
            while not self._stop.is_set():
                self.peak = max(self.peak, self.proc.memory_info().rss)
                time.sleep(0.05)

        self._t = threading.Thread(target=loop, daemon=True)
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()


async def _framesweep(spec: Any, backend: Any) -> tuple[float, float, int]:
    from engine.sweep import Sweep

    await backend.actor.reset_caches.remote()
    with _RSS() as rss:
        t0 = time.perf_counter()
        summary = await Sweep(spec, backends={"m": backend}).run()
        dt = time.perf_counter() - t0
    assert summary.jobs_failed == 0
    return dt, rss.peak / 2**20, summary.jobs_ok


def _items(spec: Any) -> list[Any]:
    from engine.datasets import load_items

    return [it for ds in spec.dataset_specs() for it in load_items(ds)[1]]


def main(args: argparse.Namespace) -> dict[str, Any]:
    import engine  # noqa: F401  (torchvision import hook)
    from engine.backends.model_ids import resolve_model_path

    if args.quick:
        args.videos, args.budgets, args.seconds = 3, "0,4,8,16,32", 10.0
    work = Path(tempfile.mkdtemp(prefix="fs-bench-"))
    try:
        spec = _spec(args, work / "fs", args.videos)
        items = _items(spec)  # writes the videos outside the clocks
        sizes = [int(s) for s in args.rss_sizes.split(",") if s]
        rss_specs = {size: _spec(args, work / f"rss{size}", size) for size in sizes}
        for s in rss_specs.values():
            _items(s)
        resolve_model_path(spec.models[0].path)  # a tiny checkpoint is built outside the clocks
        if args.start_up:
            out = _with_start_up(args, work, spec, items, rss_specs)
        else:
            out = asyncio.run(_all(args, spec, items, rss_specs)) | {"cold_start_s": float("nan"),
                                                                     "warm_start_s": float("nan")}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"jobs={out['jobs']} raw={out['raw_engine_s']:.2f}s framesweep={out['framesweep_s']:.2f}s "
          f"naive={out['naive_s']:.2f}s decode_only={out['decode_only_s']:.2f}s "
          f"fs/raw={out['ratio_framesweep_over_raw']:.2f} fs/(decode+raw)={out['ratio_framesweep_over_decode_plus_raw']:.2f} "
          f"naive/fs={out['ratio_naive_over_framesweep']:.2f} peak_rss={out['peak_rss_mb']:.0f}MB "
          f"cold_start={out['cold_start_s']:.1f}s warm_start={out['warm_start_s']:.1f}s total={out['total_s']:.0f}s")
    if args.output_json:
        args.output_json.write_text(json.dumps({k: out[k] for k in KEYS} | out, indent=2))
    return out


async def _all(args: argparse.Namespace, spec: Any, items: list[Any], rss_specs: dict[int, Any]) -> dict[str, Any]:
    """Every strategy on one engine actor, started as a run starts it (a live warm engine of the same settings
    is reused) and warmed up once; its caches emptied before each strategy."""
    import ray

    from engine.backends.families import get_family
    from engine.runtime.cluster import ensure_ray
    from engine.sweep import start_backends

    t_all = time.perf_counter()
    ensure_ray(object_store_mb=1024)
    fam = get_family(args.family)
    backend = (await start_backends(spec))["m"]
    try:
        await backend.generate([fam.build("warm", items[0], None, "letter", None, 1)])
        out = await _raw_and_naive(args, spec, items, backend)
        fs_s, peak, n = await _framesweep(spec, backend)
        assert n == out["jobs"]
        out.update(framesweep_s=fs_s, peak_rss_mb=peak, engine_reused=bool(getattr(backend, "reused", False)))
        out["ratio_framesweep_over_raw"] = fs_s / out["raw_engine_s"]
        out["ratio_naive_over_framesweep"] = out["naive_s"] / fs_s
        out["ratio_framesweep_over_decode_plus_raw"] = fs_s / (out["decode_only_s"] + out["raw_engine_s"])
        if rss_specs:
            out["peak_rss_mb_by_videos"] = {str(k): (await _framesweep(s, backend))[1] for k, s in rss_specs.items()}
    finally:
        await backend.close()
        ray.shutdown()  # before `engines down` stops a cluster this process joined
    out["total_s"] = time.perf_counter() - t_all
    return out


if __name__ == "__main__":
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_cli_args(parser)
    main(parser.parse_args())
    sys.exit(0)
