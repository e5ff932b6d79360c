"""Peak memory of a sweep's driver on large-frame video: a short H.264 (3 real frames by default) at growing
frame sizes, under budgets that repeat its frames (f4, f8, f16 at the stored size), three questions each.

Each size runs `Sweep.run` end to end (probe, plan, union decode, per-budget views, requests, score, commit)
in a fresh child process against an engine that answers at once (`_Instant`: the driver's frame memory is
what is measured, not a model's), and reports that process's peak RSS, its RSS before the sweep, the rows
and their `error_kind`. `--max-source-pixels` sets `[decode] max_source_pixels` (default: the spec's
default; `0`: no cap), so the same sizes show the cap refusing a video before any frame is decoded.

The videos are real H.264 (libx264 ultrafast, written by PyAV) and are kept in --work between runs.

    python benchmarks/big_frames.py --sizes 2000,4000,6000 --output-json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.backends.base import BackendBase, EngineRequest, EngineResult

KEYS = ("sizes", "frames", "budgets", "questions", "max_source_pixels", "peak_rss_mb")


def add_cli_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--sizes", default="2000,4000", help="frame sizes, comma-separated: N (NxN) or WxH")
    parser.add_argument("--frames", type=int, default=3, help="real frames in each video")
    parser.add_argument("--budgets", default="4,8,16", help="frames per budget (stored size, uniform policy)")
    parser.add_argument("--questions", type=int, default=3, help="questions on the video")
    parser.add_argument("--max-source-pixels", type=int, default=None,
                        help="[decode] max_source_pixels for the sweep (0: no cap; default: the spec's default)")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "framesweep-big-frames",
                        help="folder for the videos (kept) and the results (replaced)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--output-json", type=Path, default=None, help="write the results here")
    return parser


def _size(text: str) -> tuple[int, int]:
    w, _, h = text.partition("x")
    return int(w), int(h or w)


def make_video(path: Path, width: int, height: int, n: int) -> Path:
    """A real H.264 of `n` frames (a grey level per frame, a bright corner): cheap to encode at any size."""
    import av

    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.part")
    with av.open(str(tmp), "w", format="mp4") as c:
        s = c.add_stream("libx264", rate=8)
        s.width, s.height, s.pix_fmt = width, height, "yuv420p"
        s.options = {"preset": "ultrafast", "crf": "35"}
        chroma = np.full((height // 2, width), 128, np.uint8)
        for i in range(n):
            luma = np.full((height, width), 40 + 60 * (i % 4), np.uint8)
            luma[: height // 4, : width // 4] = 220
            frame = av.VideoFrame.from_ndarray(np.concatenate([luma, chroma]), format="yuv420p")
            for p in s.encode(frame):
                c.mux(p)
        for p in s.encode():
            c.mux(p)
    os.replace(tmp, path)
    return path


def _video_path(work: Path, w: int, h: int, n: int) -> Path:
    return work / "videos" / f"v{w}x{h}-{n}.mp4"


def _dataset(root: Path, video: Path, questions: int) -> dict[str, Any]:
    """A Video-MME-format dataset (the test parquet, `<videoID>.mp4`) of one video and `questions` items."""
    import polars as pl

    root.mkdir(parents=True, exist_ok=True)
    rows = [{"video_id": "001", "duration": "short", "domain": "Knowledge", "sub_category": "Other",
             "url": "", "videoID": video.stem, "question_id": f"001-{q}", "task_type": "Counting Problem",
             "question": f"Question {q} about the video?", "options": ["A. One.", "B. Two.", "C. Three.", "D. Four."],
             "answer": "A"} for q in range(questions)]
    ann = root / "test.parquet"
    pl.DataFrame(rows).write_parquet(ann)
    return {"name": "videomme", "annotations": str(ann), "media_root": str(video.parent)}


class _Instant(BackendBase):
    """An engine that answers every request at once ("A", certain): only the driver's own work remains."""

    name = "instant"

    async def start(self) -> dict[str, Any]:
        return {}

    async def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        return [EngineResult(r.request_id, text="A", letter_logprobs={"A": 0.0}) for r in requests]

    async def close(self) -> None:
        pass


def _child(args: argparse.Namespace) -> dict[str, Any]:
    """One size, in this (fresh) process: the sweep, then this process's peak RSS."""
    import polars as pl

    from engine.config import parse_spec
    from engine.results import ResultsDir
    from engine.sweep import Sweep

    w, h = _size(args.child)
    root = args.work / f"{w}x{h}"
    video = _video_path(args.work, w, h, args.frames)  # written by the parent: encoding is not measured
    out = root / "out"
    decode: dict[str, Any] = {"max_videos_in_flight": 1}
    if args.max_source_pixels is not None:
        decode["max_source_pixels"] = args.max_source_pixels or None
    spec = parse_spec({
        "sweep_id": "big-frames",
        "models": [{"id": "m", "family": "qwen2_5_vl", "path": "tiny"}],
        "dataset": _dataset(root, video, args.questions),
        "budgets": [{"frames": int(b)} for b in args.budgets.split(",")],
        "decode": decode,
        "store": {"out_dir": str(out), "commit_interval_s": 60.0},
    })
    if out.exists():
        import shutil

        shutil.rmtree(out)
    before = _rss_mb()
    t0 = time.perf_counter()
    summary = asyncio.run(Sweep(spec, backends={"m": _Instant()}).run())
    seconds = time.perf_counter() - t0
    rows = ResultsDir.open(out).scan().collect()
    kind = pl.col("error_kind").fill_null("ok") if "error_kind" in rows.columns else pl.col("status")  # older rows
    kinds = rows.group_by(kind.alias("kind")).len().sort("kind")
    return {"size": f"{w}x{h}", "pixels": w * h, "peak_rss_mb": round(_peak_mb(), 1), "rss_before_mb": round(before, 1),
            "seconds": round(seconds, 2), "jobs_ok": summary.jobs_ok, "jobs_failed": summary.jobs_failed,
            "rows": dict(kinds.iter_rows()),
            "error": rows.filter(pl.col("status") == "error")["error"].head(1).to_list()}


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mb() -> float:
    """This process's own high-water RSS (VmHWM: ru_maxrss would carry the parent's over fork and exec)."""
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) / 1024


def main(args: argparse.Namespace) -> dict[str, Any]:
    if args.child:
        print(json.dumps(_child(args)))
        return {}
    runs = []
    for size in args.sizes.split(","):
        make_video(_video_path(args.work, *_size(size), args.frames), *_size(size), args.frames)
        cmd = [sys.executable, __file__, "--child", size, "--frames", str(args.frames), "--budgets", args.budgets,
               "--questions", str(args.questions), "--work", str(args.work)]
        if args.max_source_pixels is not None:
            cmd += ["--max-source-pixels", str(args.max_source_pixels)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"{size}: the sweep failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    out = {"sizes": [r["size"] for r in runs], "frames": args.frames, "budgets": args.budgets,
           "questions": args.questions, "max_source_pixels": args.max_source_pixels,
           "peak_rss_mb": {r["size"]: r["peak_rss_mb"] for r in runs}, "runs": runs}
    print(" ".join(f"{r['size']}: peak={r['peak_rss_mb']:.0f}MB (before {r['rss_before_mb']:.0f}MB) "
                   f"rows={r['rows']}" for r in runs))
    if args.output_json:
        args.output_json.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main(add_cli_args(argparse.ArgumentParser(description=__doc__.splitlines()[0])).parse_args())
