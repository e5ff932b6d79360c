"""Write the tiny media files under tests/assets/ (committed; rerun only to change them).

Every video frame carries its own index as 8 black/white blocks in a top band
(bit b of the index is block b, 12 px wide), so a test can read back which frame
it got (`frame_code` in the tests under tests/frames/). Files:

    tiny.mp4          96x64, 48 frames, 24 fps, H.264 with B-frames, keyframe every 8 frames
    short.mp4         96x64, 6 frames (fewer than most budgets)
    rotated.mp4       stored 64x96 portrait with a display matrix turning it 90 deg clockwise:
                      displayed upright as 96x64 (as phones record)
    vfr.mp4           96x64, 24 frames at irregular intervals (20 ms and 90 ms)
    lying_count.mp4   moov-first copy of a 48-frame video cut in the middle: the header still
                      declares 48 frames, fewer really exist
    truncated.mp4     tiny.mp4 cut at 60% (the index, written last, is lost: unreadable)
    random.mp4        4 KiB of random bytes
    empty.mp4         0 bytes
    audio_only.mp4    0.5 s of AAC audio, no video stream
    assets.json       the facts the tests check (frame counts, timestamps, sizes)

Usage: python tools/make_test_assets.py [--out tests/assets]
"""

from __future__ import annotations

import argparse
import json
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

W, H, FPS = 96, 64, 24
BAND = 16


def coded_frame(i: int, width: int = W, height: int = H) -> np.ndarray:
    """An RGB frame showing index `i` in binary in its top band, over a moving gradient with noise."""
    rng = np.random.default_rng(i)
    yy, xx = np.mgrid[0:height, 0:width]
    a = np.empty((height, width, 3), np.uint8)
    a[..., 0] = (xx * 2 + i * 6) % 256
    a[..., 1] = (yy * 3 + i * 4) % 256
    a[..., 2] = 128
    body = a[BAND:].astype(np.int16) + rng.integers(-12, 12, a[BAND:].shape)
    a[BAND:] = np.clip(body, 0, 255).astype(np.uint8)
    for b in range(8):
        a[:BAND, b * 12:(b + 1) * 12] = 255 if (i >> b) & 1 else 0
    return a


def encode(path: Path, frames: list[np.ndarray], *, pts_ms: list[int] | None = None, rotation: int = 0,
           faststart: bool = False) -> None:
    """H.264 (libx264, one thread so the bytes are reproducible) in MP4."""
    opts = {"movflags": "faststart"} if faststart else {}
    with av.open(str(path), "w", options=opts) as c:
        s = c.add_stream("libx264", rate=FPS)
        s.height, s.width = frames[0].shape[:2]
        s.pix_fmt = "yuv420p"
        s.options = {"g": "8", "bf": "2", "crf": "23", "preset": "veryfast", "threads": "1"}
        if pts_ms is not None:
            s.codec_context.time_base = Fraction(1, 1000)
        if rotation:
            s.set_display_rotation(rotation)
        for k, arr in enumerate(frames):
            f = av.VideoFrame.from_ndarray(arr, format="rgb24")
            if pts_ms is not None:
                f.pts, f.time_base = pts_ms[k], Fraction(1, 1000)
            for pk in s.encode(f):
                c.mux(pk)
        for pk in s.encode():
            c.mux(pk)


def audio_only(path: Path) -> None:
    with av.open(str(path), "w") as c:
        s = c.add_stream("aac", rate=16000)
        s.layout = "mono"
        t = np.arange(8000) / 16000
        samples = (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)[None, :]
        for k in range(0, samples.shape[1], 1024):
            frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(samples[:, k:k + 1024]), format="fltp",
                                               layout="mono")
            frame.sample_rate, frame.pts = 16000, k
            for pk in s.encode(frame):
                c.mux(pk)
        for pk in s.encode():
            c.mux(pk)


def real_frames(path: Path) -> int:
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        return sum(1 for pk in c.demux(s) if pk.size and not pk.is_corrupt)


def main(out: Path) -> dict[str, object]:
    out.mkdir(parents=True, exist_ok=True)
    facts: dict[str, object] = {"width": W, "height": H, "fps": FPS}
    encode(out / "tiny.mp4", [coded_frame(i) for i in range(48)])
    encode(out / "short.mp4", [coded_frame(i) for i in range(6)])
    # Stored turned 90 deg counter-clockwise; the display matrix turns it back (-90 = 90 clockwise).
    encode(out / "rotated.mp4", [np.ascontiguousarray(np.rot90(coded_frame(i), 1)) for i in range(16)], rotation=-90)
    pts = [int(x) for x in np.cumsum([0] + [90 if k % 3 == 0 else 20 for k in range(23)])]
    encode(out / "vfr.mp4", [coded_frame(i) for i in range(24)], pts_ms=pts)
    full = out / ".lying_full.mp4"
    encode(full, [coded_frame(i) for i in range(48)], faststart=True)
    data = full.read_bytes()
    (out / "lying_count.mp4").write_bytes(data[: len(data) // 2])
    full.unlink()
    tiny = (out / "tiny.mp4").read_bytes()
    (out / "truncated.mp4").write_bytes(tiny[: int(len(tiny) * 0.6)])
    (out / "random.mp4").write_bytes(np.random.default_rng(7).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    (out / "empty.mp4").write_bytes(b"")
    audio_only(out / "audio_only.mp4")
    facts.update({
        "tiny_frames": 48, "short_frames": 6, "rotated_frames": 16, "vfr_frames": 24,
        "vfr_pts_ms": pts, "lying_declared": 48, "lying_real": real_frames(out / "lying_count.mp4"),
    })
    (out / "assets.json").write_text(json.dumps(facts, indent=1) + "\n")
    return facts


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "tests" / "assets")
    args = ap.parse_args()
    facts = main(args.out)
    for p in sorted(args.out.iterdir()):
        print(f"{p.name:18s} {p.stat().st_size:7d} bytes")
    print(json.dumps(facts))
