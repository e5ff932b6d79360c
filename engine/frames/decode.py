"""Union decoding: one pass per video, then pure per-budget views.

`decode_union` decodes the union of every budget's indices once, at the largest
size any budget needs (downscaled while decoding), into a `DecodedVideo`
(`engine.frames.video`); frames that budgets need at smaller sizes are converted
in the same pass (`also`, from `sizes_needed`). `DecodedVideo.view` then selects
one budget's frames with no I/O. Decoders are registered by name (`DECODERS`):
`pyav` and `decord`. This module re-exports what callers need; the pipeline enters at
`engine.frames.cache.decode_video`, which reads the frame cache or calls `decode_union`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from engine.frames.base import (
    DECODERS,
    BudgetLike,
    DecodeError,
    Decoder,
    FrameBatch,
    SourceTooLargeError,
    VideoInfo,
    decoder_version,
    get_decoder,
    register_decoder,
)
from engine.frames.resize import resize_frame, size_for, target_size
from engine.frames.stats import frame_stats
from engine.frames.video import DecodedVideo

__all__ = [
    "DECODERS",
    "DECODE_CALLS",
    "DecodeError",
    "DecodedVideo",
    "Decoder",
    "FrameBatch",
    "PyAVDecoder",
    "SourceTooLargeError",
    "VideoInfo",
    "check_source_size",
    "decode_size",
    "decode_union",
    "decoder_version",
    "get_decoder",
    "register_decoder",
    "resize_frame",
    "sizes_needed",
    "target_size",
]

log = logging.getLogger(__name__)

DECODE_CALLS: Counter[str] = Counter()
"""Decode passes per video path in this process (tests check each video is decoded once)."""
_calls_lock = threading.Lock()


def check_source_size(path: Path | str, info: VideoInfo, max_source_pixels: int | None) -> None:
    """Refuse a video whose stored frames exceed `max_source_pixels` (None: no cap), before anything is decoded.

    Whatever size the budgets send, the decoder holds whole stored frames (FFmpeg's pictures, and frames at the
    stored size for budgets without a resolution cap, once per frame a budget sends: repeats of a short video
    included), so a 10,000 x 10,000 video costs 300 MB per RGB frame.

    Raises:
        SourceTooLargeError: naming the file, its size and the setting.
    """
    pixels = info.width * info.height
    if max_source_pixels is not None and pixels > max_source_pixels:
        raise SourceTooLargeError(
            f"{path}: {info.width}x{info.height} ({pixels / 1e6:.1f} MP per frame, {pixels * 3 / 2**20:.0f} MiB as "
            f"RGB) is over [decode] max_source_pixels = {max_source_pixels}: refused before decoding (raise the "
            "setting, or null, to decode it)")


def decode_size(info: VideoInfo, budgets: Iterable[BudgetLike]) -> tuple[int, int] | None:
    """The size to decode at: the largest any visual budget needs; None when that is the stored size."""
    sizes = [size_for(info.width, info.height, b) for b in budgets if not b.is_text_only]
    if not sizes:
        return None
    best = max(sizes, key=lambda s: (s[0] * s[1], s))
    return None if best == (info.width, info.height) else best


def sizes_needed(info: VideoInfo,
                 planned: Iterable[tuple[BudgetLike, np.ndarray]]) -> dict[tuple[int, int], np.ndarray]:
    """{(w, h): sorted unique indices} each size's budgets need, from (budget, its planned indices)."""
    acc: dict[tuple[int, int], list[np.ndarray]] = {}
    for b, idx in planned:
        if not b.is_text_only and len(idx):
            acc.setdefault(size_for(info.width, info.height, b), []).append(idx)
    return {s: np.unique(np.concatenate(parts)) for s, parts in acc.items()}


def decode_union(path: Path, indices: np.ndarray, decoder: str = "pyav", size: tuple[int, int] | None = None,
                 also: Mapping[tuple[int, int], np.ndarray] | None = None) -> DecodedVideo:
    """Decode the `indices` (the union of every budget's) of one video in one pass.

    Args:
        path: The video file.
        indices: Frame indices (sorted unique, as `union_indices` gives them).
        decoder: A registered decoder name.
        size: (w, h) to decode at (downscaled while decoding; see `decode_size`); None: stored size.
        also: {(w, h): indices} frames that budgets need at smaller sizes (see `sizes_needed`); a
            decoder that can (pyav) converts them from the decoded picture in the same pass, so a
            frame at a size never depends on the other sizes of the sweep; else views resize them.

    Raises:
        DecodeError: the file is missing, unreadable, has no video stream, or no asked frame decodes.
    """
    dec = get_decoder(decoder)
    with _calls_lock:
        DECODE_CALLS[str(path)] += 1
    t0 = time.perf_counter()
    if not Path(path).exists():
        raise DecodeError(f"{path}: file not found")
    asked = np.unique(np.asarray(indices, dtype=np.int64))
    also = {(int(s[0]), int(s[1])): np.unique(np.asarray(ix, dtype=np.int64)) for s, ix in (also or {}).items()}
    if any(ix.size and ix[0] < 0 for ix in (asked, *also.values())):
        raise ValueError(f"{path}: negative frame index")
    batch = dec.decode_frames(Path(path), asked, size, also) if also else dec.decode_frames(Path(path), asked, size)
    if batch.missing.size:
        log.warning("%s: %d planned frames do not exist or do not decode (real frames: %d); "
                    "they are recorded as missing, never replaced", path, batch.missing.size, batch.info.n_frames)
    w, h = size if size is not None else (batch.info.width, batch.info.height)
    out = DecodedVideo(Path(path), decoder, batch.indices, batch.frames, batch.timestamps, batch.info,
                       time.perf_counter() - t0, missing=batch.missing, decoded_size=(int(w), int(h)),
                       stats=frame_stats(batch.frames, batch.info))  # where the frames are: a few numbers travel
    out._resized.update(batch.extra)
    out._times.update(batch.times)
    return out


from engine.frames import decode_decord as _decord  # noqa: F401  (registers "decord")
from engine.frames.decode_pyav import PyAVDecoder  # registers "pyav"
