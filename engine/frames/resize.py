"""Frame sizes: a budget's resolution rule and the one resize filter used everywhere."""

from __future__ import annotations

import cv2
import numpy as np

__all__ = ["resize_frame", "size_for", "target_size"]


def size_for(width: int, height: int, budget: object) -> tuple[int, int]:
    """(w, h) a budget (`BudgetLike`) sends for a `width` x `height` video: `target_size` of its settings."""
    return target_size(width, height, getattr(budget, "max_pixels", None), getattr(budget, "short_side", None),
                       getattr(budget, "min_pixels", None), exact_pixels=getattr(budget, "exact_pixels", None))


def target_size(width: int, height: int, max_pixels: int | None, short_side: int | None,
                min_pixels: int | None = None, *, exact_pixels: int | None = None) -> tuple[int, int]:
    """(w, h) after applying a budget's resolution rule, aspect kept, even sizes.

    `max_pixels` / `short_side` only ever shrink a frame (a smaller video keeps its size);
    `min_pixels` only ever enlarges one (to at least that many pixels, as Qwen-VL processors'
    `min_pixels` does), so tokens per frame can be matched to another harness. `exact_pixels`
    (alone) shrinks or enlarges every frame to about that many pixels, each side rounded to the
    nearest even number, so an iso-compute allocation sends its pixels whatever the video's size.
    """
    if exact_pixels is not None:
        s = (exact_pixels / (width * height)) ** 0.5
        return max(2, round(width * s / 2) * 2), max(2, round(height * s / 2) * 2)
    scale = 1.0
    if max_pixels is not None and width * height > max_pixels:
        scale = (max_pixels / (width * height)) ** 0.5
    if short_side is not None and min(width, height) > short_side:
        scale = short_side / min(width, height)
    size = (width, height) if scale >= 1.0 else (max(2, int(width * scale) // 2 * 2),
                                                 max(2, int(height * scale) // 2 * 2))
    if min_pixels is not None and size[0] * size[1] < min_pixels:
        up = (min_pixels / (width * height)) ** 0.5
        size = (int(np.ceil(width * up / 2) * 2), int(np.ceil(height * up / 2) * 2))
    return size


def resize_frame(frame: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Resize one (H, W, 3) frame to (w, h): area filter down (PIL-bicubic-like quality at ~2x the
    speed: 205 vs 118 frames/s measured), cubic up."""
    down = size[0] * size[1] <= frame.shape[0] * frame.shape[1]
    return cv2.resize(frame, size, interpolation=cv2.INTER_AREA if down else cv2.INTER_CUBIC)
