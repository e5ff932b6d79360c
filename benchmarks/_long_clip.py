"""A long generated video for the long-video benchmark: 1280x720, 30 fps, H.264 with B-frames, a keyframe
every 8 s (no scene-cut keyframes), as common encodes of long benchmark videos are.

The picture pans over a smooth-noise texture (wrapping around), with a moving box and a colour shift
every 5 s, so every P- and B-frame carries real residual and motion, as footage does. Written once,
atomically, into the cache dir (`bench/`): 20 minutes take several minutes to encode on two cores.

    python benchmarks/_long_clip.py --minutes 20
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from engine.demo.videos import write_h264
from engine.runtime.paths import cache_dir

__all__ = ["ensure_long_clip", "long_clip_options"]

PAN_PX_PER_FRAME = 6


def long_clip_options(fps: int, keyframe_s: float) -> dict[str, str]:
    """libx264's options: 3 B-frames, a keyframe every `keyframe_s` (scene cuts add none), CRF 23."""
    keyint = max(1, round(fps * keyframe_s))
    return {"crf": "23", "preset": "veryfast", "bf": "3", "g": str(keyint), "keyint_min": str(keyint),
            "sc_threshold": "0"}


def _frames(n: int, fps: int, width: int, height: int) -> Iterator[np.ndarray]:
    import cv2

    rng = np.random.default_rng(0)
    tex_w = 4 * width
    small = rng.integers(0, 256, (height // 8 + 2, tex_w // 8 + 2, 3), dtype=np.uint8)
    tex = cv2.resize(small, (tex_w + width, height + 16), interpolation=cv2.INTER_CUBIC)[:height]
    tex[:, tex_w:] = tex[:, :width]  # wraps around seamlessly
    for t in range(n):
        x0 = (t * PAN_PX_PER_FRAME) % tex_w
        frame = np.ascontiguousarray(tex[:, x0:x0 + width])
        cx = (t * 7) % (width - 48)
        cy = height // 3 + int(60 * np.sin(t / fps))
        frame[cy:cy + 48, cx:cx + 48] = (255, 255, 255)
        frame[:, :, (t // (5 * fps)) % 3] //= 2  # a colour shift every 5 s
        yield frame


def ensure_long_clip(root: Path, minutes: float, width: int = 1280, height: int = 720, fps: int = 30,
                     keyframe_s: float = 8.0) -> Path:
    """The clip's path, written first when missing (the name holds every parameter)."""
    path = root / f"long-{minutes:g}min-{width}x{height}-{fps}fps-k{keyframe_s:g}s-bf3.mp4"
    if not path.exists():
        root.mkdir(parents=True, exist_ok=True)
        n = round(minutes * 60 * fps)
        write_h264(path, _frames(n, fps, width, height), fps, width, height,
                   options=long_clip_options(fps, keyframe_s))
    return path


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=20.0)
    p.add_argument("--video-dir", type=Path, default=None)
    a = p.parse_args()
    print(ensure_long_clip(a.video_dir or cache_dir() / "bench", a.minutes))
