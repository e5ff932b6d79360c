"""What the per-video low-level statistics cost the decode pass: the union decode with them and without.

On one generated clip (`_long_clip.py`: --minutes long, --width x --height, 30 fps, H.264 with 3 B-frames,
panning texture, a moving box and colour shifts: every frame carries motion, as footage does), the union
of budgets 16/32/64/128/256 uniform is decoded in one pass (`decode_union`), at --max-pixels per frame
(the audit's 448x448) and at the stored size, alternately with the statistics computed (as a sweep does,
`engine.frames.stats.frame_stats` inside the decode call) and with them switched off, --repeats rounds
each, side by side in one process. Reported per size: the median decode seconds with and without, the
median of the rounds' with / without ratios (`with_vs_without`, goal <= 1.05: on a busy machine its noise is
larger than the statistics), the statistics' own median seconds (`stats_s`, timed alone on the decoded
frames) and their share of the decode without them (`stats_share`, the steady figure).

    python benchmarks/video_stats_cost.py --output-json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
from _long_clip import ensure_long_clip

import engine.frames.decode as decode_mod
from engine.config import BudgetPoint
from engine.frames.decode import decode_size, decode_union
from engine.frames.plan import plan_budget, union_indices
from engine.frames.stats import frame_stats
from engine.runtime.paths import cache_dir

KEYS = ("clip", "frames_decoded", "sizes")
BUDGETS = (16, 32, 64, 128, 256)


def add_cli_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--minutes", type=float, default=2.0, help="clip length")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=720)
    parser.add_argument("--max-pixels", type=int, default=200704, help="budget frame cap (448x448)")
    parser.add_argument("--repeats", type=int, default=5, help="rounds, each with and without the statistics")
    parser.add_argument("--video-dir", type=Path, default=None, help="where the clip is kept (default: cache dir)")
    parser.add_argument("--output-json", type=Path, default=None, help="write the results here")
    return parser


def _no_stats(frames: np.ndarray, info: Any) -> None:
    return None


def _time(path: Path, idx: np.ndarray, size: tuple[int, int] | None, with_stats: bool) -> float:
    decode_mod.frame_stats = frame_stats if with_stats else _no_stats  # type: ignore[assignment]
    try:
        t0 = time.perf_counter()
        video = decode_union(path, idx, "pyav", size)
        seconds = time.perf_counter() - t0
    finally:
        decode_mod.frame_stats = frame_stats  # type: ignore[assignment]
    assert (video.stats is not None) == with_stats
    video.release()
    return seconds


def _one_size(path: Path, idx: np.ndarray, size: tuple[int, int] | None, repeats: int) -> dict[str, Any]:
    on: list[float] = []
    off: list[float] = []
    for r in range(repeats):  # alternate, the first policy alternating too
        for with_stats in ((True, False) if r % 2 == 0 else (False, True)):
            (on if with_stats else off).append(_time(path, idx, size, with_stats))
    ratios = [a / b for a, b in zip(on, off, strict=True)]
    video = decode_union(path, idx, "pyav", size)
    own = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        frame_stats(video.frames, video.info)
        own.append(time.perf_counter() - t0)
    w, h = video.size
    return {"size": f"{w}x{h}", "decode_with_s": round(statistics.median(on), 4),
            "decode_without_s": round(statistics.median(off), 4),
            "with_vs_without": round(statistics.median(ratios), 4),
            "stats_s": round(statistics.median(own), 4),
            "stats_share": round(statistics.median(own) / statistics.median(off), 4)}


def main(args: argparse.Namespace) -> dict[str, Any]:
    path = ensure_long_clip(args.video_dir or cache_dir() / "bench", args.minutes, args.width, args.height)
    info = decode_mod.get_decoder("pyav").probe(path)
    budgets = [BudgetPoint(frames=n, max_pixels=args.max_pixels) for n in BUDGETS]
    idx = union_indices(plan_budget(b, info.n_frames, info.fps) for b in budgets)
    sizes = [decode_size(info, budgets), None]
    out = {"clip": f"{args.minutes:g} min {args.width}x{args.height} H.264", "frames_decoded": int(idx.size),
           "sizes": [_one_size(path, idx, s, args.repeats) for s in sizes]}
    line = "; ".join(f"{s['size']}: {s['decode_with_s']}s with vs {s['decode_without_s']}s without "
                     f"(x{s['with_vs_without']}; statistics {s['stats_s']}s = {100 * s['stats_share']:.1f}%)"
                     for s in out["sizes"])
    print(f"video statistics, {out['frames_decoded']} frames of a {out['clip']}: {line}")
    if args.output_json is not None:
        args.output_json.write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main(add_cli_args(argparse.ArgumentParser(description=__doc__.splitlines()[0])).parse_args())
