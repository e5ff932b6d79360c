"""Long videos: the union decode beside the decode floor, per-budget decoding, decord and the frame cache.

Video-MME's long split is 30-60 minute videos. On one generated clip (`_long_clip.py`: 20 minutes,
1280x720, 30 fps, H.264 with 3 B-frames, a keyframe every 8 s; written once into the cache dir),
budgets 16/32/64/128/256 uniform are served six ways, side by side in one process, frames at --size:

    union       framesweep: one pass over the union of every budget's frames (seeks over whole GOPs
                nobody needs, skips unreferenced frames nobody needs)
    floor       the least decoding those frames take: for each GOP holding a needed frame, seek to its
                keyframe (a seek is never more frames than decoding through) and decode up to its last
                needed frame, unreferenced frames nobody needs skipped, needed frames converted as union
                converts them
    naive       per budget, a plain decode loop: every frame in order up to the budget's last one, its
                frames converted (what a harness that decodes one budget at a time does)
    per_budget  framesweep's own decoder once per budget (seeks and skips, nothing shared across budgets)
    get_batch   decord's `VideoReader.get_batch` per budget, one thread (what lmms-eval does)
    cached      every frame read from a warm on-disk frame cache (JPEG), the cached pipeline's read
    actors      the union cut into GOP-aligned parts decoded by 1 and 2 decode actors (1 CPU each):
                parallel efficiency = time with 1 / (2 x time with 2); with 1, against the same parts
                decoded in this process

Each is timed with perf_counter and process CPU time (best of --repeats interleaved rounds: on a shared
machine CPU time moves less than wall time); pictures decoded are counted where the decoder tells
(pyav; decord does not say). A pipeline that decodes per job (each question of a budget again, as
lmms-eval does per sample) does `--questions` times the per-budget work: `*_per_job_*` ratios. Fixed
JSON keys: `long_union_vs_floor` (goal <= 1.2), `long_naive_vs_union` and `long_getbatch_vs_union`
(per budget; goal >= 4), `cached_vs_raw` (union over cached; goal >= 10). `span_*`: frames from a
GOP's keyframe to its last needed frame, summed (the decode work any GOP-respecting decoder must do,
from the index alone). --quick: a 1-minute 640x360 clip, one round. --smoke: a 30 s 320x180 clip, one round,
frames out at 160x90, to check the script end to end in seconds (its figures are not the benchmark's).

    python benchmarks/long_video.py --output-json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _long_clip import ensure_long_clip

from engine.config import BudgetPoint
from engine.frames.buffers import FRAME_BUFFERS
from engine.frames.cache import FrameCache
from engine.frames.decode import DecodeRequest, decode_video
from engine.frames.decode_pyav import PyAVDecoder, _Converter, _frames
from engine.frames.index import StreamIndex, stream_index
from engine.frames.plan import plan_budget, union_indices
from engine.runtime.paths import cache_dir

GRID = (16, 32, 64, 128, 256)
KEYS = ("long_union_vs_floor", "long_naive_vs_union", "long_getbatch_vs_union", "cached_vs_raw")


def add_cli_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--minutes", type=float, default=20.0, help="length of the generated clip")
    parser.add_argument("--size", default="640x360", help="WxH every strategy hands frames out at")
    parser.add_argument("--quick", action="store_true", help="a 1-minute 640x360 clip, one round")
    parser.add_argument("--smoke", action="store_true",
                        help="a 30 s 320x180 clip, one round, frames out at 160x90: checks the script end to end")
    parser.add_argument("--repeats", type=int, default=2, help="rounds; the best time of each is kept")
    parser.add_argument("--questions", type=int, default=3, help="questions per video, for the per-job ratios")
    parser.add_argument("--no-actors", action="store_true", help="skip the decode actors (no Ray)")
    parser.add_argument("--actors-only", action="store_true", help="only the decode actors (under Ray's lock)")
    parser.add_argument("--video-dir", type=Path, default=None, help="where the clip is written (default: cache)")
    parser.add_argument("--output-json", type=Path, default=None, help="write the results here")
    return parser


def floor_decode(path: Path, needed: np.ndarray, size: tuple[int, int]) -> dict[str, int]:
    """The floor: per GOP holding a needed frame, seek to its keyframe and decode to its last needed frame."""
    import av

    index = stream_index(path)
    conv = _Converter(index.info, size)
    out = FRAME_BUFFERS.empty((needed.size, size[1], size[0], 3))  # recycled memory, as the union's
    slot = {int(i): k for k, i in enumerate(needed.tolist())}
    gops: dict[int, list[int]] = {}
    for i in needed.tolist():
        gops.setdefault(index.keyframe_before(i), []).append(i)
    pictures = seeks = 0
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        s.thread_type = "SLICE"
        for key, members in sorted(gops.items()):
            want, last = set(members), members[-1]
            c.seek(int(index.pts[key]), backward=True, any_frame=False, stream=s)
            seeks += 1
            for f in _frames(c, s, path, _unneeded(index, want)):
                pictures += 1
                i = index.index_of(f.pts)
                if i in want:
                    conv.into(f, out[slot[i]])
                if i is not None and i >= last:
                    break
    return {"pictures": pictures, "seeks": seeks}


def _unneeded(index: StreamIndex, want: set[int]) -> Callable[[int], bool]:
    def unneeded(pts: int) -> bool:
        return index.index_of(pts) not in want
    return unneeded


def union_decode(path: Path, needed: np.ndarray, size: tuple[int, int]) -> dict[str, int]:
    dec = PyAVDecoder()
    batch = dec.decode_frames(DecodeRequest(path, needed, size=size))
    return {"pictures": dec.last_frames_out, "seeks": dec.last_seeks, "frames": int(batch.indices.size)}


def per_budget_decode(path: Path, plans: dict[int, np.ndarray], size: tuple[int, int]) -> dict[str, int]:
    got = [union_decode(path, ix, size) for ix in plans.values()]
    return {k: sum(g[k] for g in got) for k in ("pictures", "seeks", "frames")}


def naive_decode(path: Path, plans: dict[int, np.ndarray], size: tuple[int, int]) -> dict[str, int]:
    """Per budget, every frame decoded in order up to the budget's last one; its frames converted."""
    import av

    index = stream_index(path)
    pictures = frames = 0
    for ix in plans.values():
        want, last = set(ix.tolist()), int(ix[-1])
        conv = _Converter(index.info, size)
        with av.open(str(path)) as c:
            s = c.streams.video[0]
            s.thread_type = "SLICE"
            for f in c.decode(s):
                pictures += 1
                i = index.index_of(f.pts)
                if i in want:
                    conv.new(f)
                    frames += 1
                if i is not None and i >= last:
                    break
    return {"pictures": pictures, "frames": frames}


def spans(index: StreamIndex, needed: np.ndarray) -> int:
    """Frames from each GOP's keyframe to its last needed frame, summed: what a decoder that seeks to
    keyframes must decode at least (before skipping unreferenced frames)."""
    last: dict[int, int] = {}
    for i in needed.tolist():
        last[index.keyframe_before(i)] = i
    return sum(i - k + 1 for k, i in last.items())


def get_batch(path: Path, plans: dict[int, np.ndarray], size: tuple[int, int]) -> dict[str, int]:
    """decord as lmms-eval calls it: a reader per budget, one thread, `get_batch` of the budget's indices."""
    import decord

    frames = 0
    for ix in plans.values():
        vr = decord.VideoReader(str(path), ctx=decord.cpu(0), num_threads=1, width=size[0], height=size[1])
        frames += int(vr.get_batch([int(i) for i in ix]).asnumpy().shape[0])
        del vr
    return {"frames": frames}


def _timed(fn: Callable[[], dict[str, int]]) -> tuple[float, float, dict[str, int]]:
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - t0, time.process_time() - c0, out


def _gop_parts(index: StreamIndex, needed: np.ndarray, n: int) -> list[np.ndarray]:
    """`needed` cut into `n` runs of whole GOPs (a part starts at a keyframe), about equal in frames."""
    keys = np.asarray([index.keyframe_before(int(i)) for i in needed])
    cuts = np.quantile(needed, np.linspace(0, 1, n + 1)[1:-1]) if n > 1 else []
    edges = sorted({int(index.keyframe_before(int(c))) for c in cuts})
    parts = np.split(needed, np.searchsorted(keys, edges, side="left"))
    return [p for p in parts if p.size]


async def _actors_time(path: Path, parts: list[np.ndarray], size: tuple[int, int], n: int) -> float:
    from engine.frames.actors import DecodePool

    pool = DecodePool(n, cpus=1.0)
    await pool.start()
    try:
        # not timed: each actor's first decode imports PyAV and indexes the video (once per process)
        warm = await asyncio.gather(*(pool.decode(DecodeRequest(path, p[:1], "pyav", size)) for p in parts[:n]))
        for g in warm:
            if g is not None:
                g.release()
        t0 = time.perf_counter()
        got = await asyncio.gather(*(pool.decode(DecodeRequest(path, p, "pyav", size)) for p in parts))
        seconds = time.perf_counter() - t0
        for g in got:
            if g is not None:
                g.release()
        return seconds
    finally:
        await pool.close()


def actors(path: Path, needed: np.ndarray, size: tuple[int, int], parts: int = 4) -> dict[str, Any]:
    """Decode actors on 1 and 2 CPUs over the union cut into GOP-aligned parts; their parallel efficiency."""
    import ray

    from engine.runtime.cluster import ensure_ray

    chunks = _gop_parts(stream_index(path), needed, parts)
    local_s, _, _ = _timed(lambda: {"n": sum(union_decode(path, c, size)["frames"] for c in chunks)})
    ensure_ray(num_cpus=2, object_store_mb=1024)
    try:
        one = asyncio.run(_actors_time(path, chunks, size, 1))
        two = asyncio.run(_actors_time(path, chunks, size, 2))
    finally:
        ray.shutdown()
    return {"parts": len(chunks), "local_s": local_s, "actors_1_s": one, "actors_2_s": two,
            "efficiency_1": local_s / one, "efficiency_2": one / (2 * two)}


def compare(path: Path, size: tuple[int, int], rounds: int, questions: int, cache_root: Path) -> dict[str, Any]:
    """The six strategies, interleaved over `rounds` rounds; their times, pictures and ratios."""
    index = stream_index(path)
    info = index.info
    plans = {n: plan_budget(BudgetPoint(frames=n), info.n_frames, info.fps).indices for n in GRID}
    union = union_indices([plan_budget(BudgetPoint(frames=n), info.n_frames, info.fps) for n in GRID])
    cache = FrameCache(cache_root, "jpeg")
    decode_video(DecodeRequest(path, union, "pyav", size), cache)  # warm (not timed)
    strategies: dict[str, Callable[[], dict[str, int]]] = {
        "union": lambda: union_decode(path, union, size),
        "floor": lambda: floor_decode(path, union, size),
        "naive": lambda: naive_decode(path, plans, size),
        "per_budget": lambda: per_budget_decode(path, plans, size),
        "get_batch": lambda: get_batch(path, plans, size),
        "cached": lambda: {"frames": int(decode_video(DecodeRequest(path, union, "pyav", size), cache).indices.size)},
    }
    wall: dict[str, float] = dict.fromkeys(strategies, float("inf"))
    cpu = dict(wall)
    counts: dict[str, dict[str, int]] = {}
    for _ in range(rounds):
        for name, fn in strategies.items():
            w, c, counts[name] = _timed(fn)
            wall[name], cpu[name] = min(wall[name], w), min(cpu[name], c)
    q = questions
    return {
        "long_union_vs_floor": wall["union"] / wall["floor"],
        "long_naive_vs_union": wall["naive"] / wall["union"],
        "long_getbatch_vs_union": wall["get_batch"] / wall["union"],
        "cached_vs_raw": wall["union"] / wall["cached"],
        "long_per_budget_vs_union": wall["per_budget"] / wall["union"],
        "long_per_job_vs_union": q * wall["per_budget"] / wall["union"],
        "long_getbatch_per_job_vs_union": q * wall["get_batch"] / wall["union"],
        "cpu_ratios": {"union_vs_floor": cpu["union"] / cpu["floor"], "naive_vs_union": cpu["naive"] / cpu["union"],
                       "getbatch_vs_union": cpu["get_batch"] / cpu["union"],
                       "per_budget_vs_union": cpu["per_budget"] / cpu["union"],
                       "raw_vs_cached": cpu["union"] / cpu["cached"]},
        **{f"{k}_s": v for k, v in wall.items()}, **{f"{k}_cpu_s": v for k, v in cpu.items()},
        "pictures_decoded": {k: c.get("pictures") for k, c in counts.items()},
        "seeks": {k: c.get("seeks") for k, c in counts.items()},
        "span_union": spans(index, union), "span_per_budget": sum(spans(index, ix) for ix in plans.values()),
        "frames_needed": int(union.size), "frames_requested": int(sum(ix.size for ix in plans.values())),
        "questions": q, "rounds": rounds,
    }


def _summary(out: dict[str, Any]) -> str:
    t = out
    return (f"long_video {t['video']}: union {t['union_s']:.2f}s ({t['pictures_decoded']['union']} pictures), "
            f"floor {t['floor_s']:.2f}s ({t['pictures_decoded']['floor']}), naive {t['naive_s']:.2f}s, per-budget "
            f"{t['per_budget_s']:.2f}s, get_batch {t['get_batch_s']:.2f}s, cached {t['cached_s']:.2f}s; union/floor "
            f"{t['long_union_vs_floor']:.2f}x, naive/union {t['long_naive_vs_union']:.1f}x, get_batch/union "
            f"{t['long_getbatch_vs_union']:.1f}x, per-budget/union {t['long_per_budget_vs_union']:.1f}x, "
            f"raw/cached {t['cached_vs_raw']:.1f}x")


def main(args: argparse.Namespace) -> dict[str, Any]:
    root = args.video_dir or cache_dir() / "bench"
    minutes, shape = (0.5, (320, 180)) if args.smoke else (1.0, (640, 360)) if args.quick else (args.minutes, (1280, 720))
    w, h = (160, 90) if args.smoke else (int(x) for x in args.size.lower().split("x"))
    path = ensure_long_clip(root, minutes, *shape)
    info = stream_index(path).info
    out: dict[str, Any] = {}
    if not args.actors_only:
        out.update(compare(path, (w, h), 1 if args.quick or args.smoke else args.repeats, args.questions, root / "frame-cache"))
    out.update(video=path.name, n_frames=info.n_frames, keyframes=int(stream_index(path).keyframes.size),
               width=info.width, height=info.height, size=[w, h], grid=list(GRID))
    if not args.actors_only:
        print(_summary(out))
    if not args.no_actors:
        plan = [plan_budget(BudgetPoint(frames=n), info.n_frames, info.fps) for n in GRID]
        a = out["actors"] = actors(path, union_indices(plan), (w, h))
        print(f"  decode actors over {a['parts']} GOP-aligned parts: 1 actor {a['actors_1_s']:.2f}s "
              f"(in-process {a['local_s']:.2f}s, efficiency {a['efficiency_1']:.2f}), 2 actors {a['actors_2_s']:.2f}s "
              f"(parallel efficiency {a['efficiency_2']:.2f})")
    if args.output_json:
        args.output_json.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main(add_cli_args(argparse.ArgumentParser(description=__doc__.splitlines()[0])).parse_args())
