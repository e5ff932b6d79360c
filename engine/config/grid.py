"""Iso-compute allocations, and the pixels a budget realises on a video (the Python API beside
`[[iso_compute]]`; a spec's `[[grids]]` cross products are `engine.config.GridSpec`).

An iso-compute allocation spends one pixel budget P (frames x pixels per frame)
in different ways: few frames at high resolution or many at low resolution.
`iso_compute(9_830_400, [32, 64, 128, 256])` gives 32 frames of <= 307,200 pixels
(640x480), 64 of 153,600, 128 of 76,800 and 256 of 38,400: every point has
`frames * max_pixels == P` (exactly when P is a multiple of each frame count; else
`max_pixels = P // frames`, short of P by less than `frames` pixels).

The realised pixels of a video are a little lower: `target_size` keeps the
aspect ratio and rounds each side down to an even number (`realised_pixels`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from engine.config import BudgetPoint, IsoComputeSpec
from engine.frames.resize import size_for

__all__ = ["iso_compute", "realised_pixels"]

DEFAULT_ISO_FRAMES = (32, 64, 128)


def iso_compute(pixel_budget: int, frames: Sequence[int] = DEFAULT_ISO_FRAMES, *,
                axis: Literal["max_pixels", "exact_pixels", "short_side"] = "max_pixels", aspect: float = 16 / 9,
                policy: str = "uniform", seed: int = 0) -> list[BudgetPoint]:
    """Budget points that all spend `pixel_budget` = frames x pixels per frame.

    Args:
        pixel_budget: Total pixels across all frames of one request (e.g. 9_830_400).
        frames: Frame counts to allocate over, ascending or not.
        axis: `max_pixels` (pixel cap per frame: only shrinks), `exact_pixels` (every frame
            shrunk or enlarged to that many pixels) or `short_side` (for a video of
            aspect `aspect` = long side / short side, the short side whose frame holds
            `pixel_budget / frames` pixels, rounded down to an even number).
        aspect: Long side over short side, used only by `short_side`.
        policy: Sampling policy for every point.
        seed: Seed for every point.

    Returns:
        One `BudgetPoint` per frame count, in the order given.
    """
    if pixel_budget <= 0:
        raise ValueError("pixel_budget must be positive")
    return IsoComputeSpec(total_pixels=pixel_budget, frames=list(frames), axis=axis, aspect=aspect, policy=policy,
                          seed=seed).expand()


def realised_pixels(point: BudgetPoint, width: int, height: int) -> int:
    """Pixels a budget point actually sends for a `width` x `height` video (frames x resized area)."""
    w, h = size_for(width, height, point)
    return point.frames * w * h
