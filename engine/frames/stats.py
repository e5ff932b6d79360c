"""Low-level statistics of a video, from the frames one decode pass already holds (no second pass).

`frame_stats` reads the decoded frames of one pass (the union of the sweep's budgets, in index
order) and returns a few numbers, so they can travel with the decoded video's facts from a decode
actor to the driver without its pixels. Each frame is reduced to the luma (ITU-R BT.601 weights,
0.299 R + 0.587 G + 0.114 B, in [0, 1]) of a grid of its pixels, every k-th pixel in each direction
with k the smallest step leaving at most `STATS_SIDE` on the long side (sampled, not averaged: a
strided view costs nothing, where an area filter costs about as much as decoding; and a sampled
pixel keeps the contrast and motion an average would blur), then:

- ``brightness``: the mean luma over the frames;
- ``contrast``: the mean over the frames of each frame's luma standard deviation (RMS contrast);
- ``motion_energy``: the mean over consecutive decoded frames of their mean absolute luma
  difference (consecutive *decoded* frames: their spacing is the sweep's sampling, not the video's
  frame rate);
- ``scene_cuts``: consecutive decoded frames whose difference exceeds `CUT_THRESHOLD`;
- ``static_share``: the share of consecutive decoded frames whose difference is below
  `STATIC_THRESHOLD` (how static the video is);
- ``duration_s``, ``fps``, ``width``, ``height`` (displayed) and ``n_frames`` from the video's facts;
  ``frames_used``: how many decoded frames the statistics read.

With fewer than two frames the pairwise statistics are None.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from engine.frames.base import VideoInfo

__all__ = ["CUT_THRESHOLD", "STATIC_THRESHOLD", "STATS_SIDE", "VideoStats", "frame_stats", "luma"]

STATS_SIDE = 64
"""Pixels sampled along a frame's long side for the statistics: enough for brightness and motion, cheap."""
CUT_THRESHOLD = 0.15
"""Mean absolute luma difference (of full scale) above which two consecutive decoded frames count as a cut."""
STATIC_THRESHOLD = 0.01
"""Mean absolute luma difference below which two consecutive decoded frames count as static."""
_WEIGHTS = np.asarray([0.299, 0.587, 0.114], dtype=np.float32) / 255.0


@dataclass(frozen=True)
class VideoStats:
    """One video's low-level statistics (see the module docstring)."""

    duration_s: float
    fps: float
    width: int
    height: int
    n_frames: int
    frames_used: int
    brightness: float | None
    contrast: float | None
    motion_energy: float | None
    scene_cuts: int | None
    static_share: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def luma(frames: np.ndarray) -> np.ndarray:
    """float32 luma in [0, 1] of (..., H, W, 3) RGB frames, sampled every k-th pixel (at most `STATS_SIDE`
    along the long side): (..., ceil(H / k), ceil(W / k))."""
    h, w = frames.shape[-3:-1]
    k = max(1, -(-max(h, w) // STATS_SIDE))
    return frames[..., ::k, ::k, :].astype(np.float32) @ _WEIGHTS


def frame_stats(frames: np.ndarray, info: VideoInfo) -> VideoStats:
    """The statistics of one decode pass's frames ((K, H, W, 3) uint8 RGB in index order) of a video."""
    n = int(frames.shape[0]) if frames.ndim == 4 else 0
    small = luma(frames) if n else np.empty((0, 1, 1), np.float32)
    brightness = float(small.mean(dtype=np.float64)) if n else None
    contrast = float(small.std(axis=(1, 2), dtype=np.float64).mean()) if n else None
    diffs = np.abs(np.diff(small, axis=0)).mean(axis=(1, 2), dtype=np.float64)
    pairs = diffs.size > 0
    return VideoStats(
        duration_s=float(info.duration), fps=float(info.fps), width=int(info.width), height=int(info.height),
        n_frames=int(info.n_frames), frames_used=n, brightness=brightness, contrast=contrast,
        motion_energy=float(diffs.mean()) if pairs else None,
        scene_cuts=int((diffs > CUT_THRESHOLD).sum()) if pairs else None,
        static_share=float((diffs < STATIC_THRESHOLD).mean()) if pairs else None,
    )
