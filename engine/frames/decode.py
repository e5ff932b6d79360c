"""The one way to decode: `decode_video(request, cache)`, one pass per video, then pure per-budget views.

A `DecodeRequest` (`engine.frames.base`) names one pass: the union of every budget's indices at the
largest size any budget needs (`DecodeRequest.at_sizes`, the one decode-size rule, from `sizes_needed`),
downscaled while decoding, and the frames budgets need at smaller sizes (`also`), converted in the same
pass. `decode_video` gives a `DecodedVideo` (`engine.frames.video`), through the on-disk frame cache when
one is given (the cached pipeline, `engine.frames.cache`) else from the file (raw); the pipeline
(`engine.sweep.decoding`), the decode actors (`engine.frames.actors`) and the benchmarks all call it.
`DecodedVideo.view` then selects one budget's frames with no I/O. Decoders are registered by name
(`DECODERS`): `pyav` and `decord`. This module re-exports what callers need.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

import numpy as np

from engine.frames.base import (
    DECODERS,
    BudgetLike,
    DecodeError,
    Decoder,
    DecodeRequest,
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
    "DecodeRequest",
    "DecodedVideo",
    "Decoder",
    "FrameBatch",
    "FrameSource",
    "PyAVDecoder",
    "SourceTooLargeError",
    "VideoInfo",
    "check_source_size",
    "decode_video",
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


def sizes_needed(info: VideoInfo,
                 planned: Iterable[tuple[BudgetLike, np.ndarray]]) -> dict[tuple[int, int], np.ndarray]:
    """{(w, h): sorted unique indices} each size's budgets need, from (budget, its planned indices)."""
    acc: dict[tuple[int, int], list[np.ndarray]] = {}
    for b, idx in planned:
        if not b.is_text_only and len(idx):
            acc.setdefault(size_for(info.width, info.height, b), []).append(idx)
    return {s: np.unique(np.concatenate(parts)) for s, parts in acc.items()}


class FrameSource(Protocol):
    """Where decoded frames may come from instead of the file: the on-disk frame cache (`FrameCache`)."""

    def get_or_decode(self, request: DecodeRequest) -> DecodedVideo: ...


def decode_video(request: DecodeRequest, cache: FrameSource | None = None) -> DecodedVideo:
    """A video's frames for one decode request: from the frame cache when one is given (the cached pipeline:
    it decodes what it lacks through this function, without a cache), else decoded from the file in one pass.

    Raises:
        DecodeError: the file is missing, unreadable, has no video stream, or no asked frame decodes.
    """
    if cache is not None:
        return cache.get_or_decode(request)
    return _decode_pass(request)


def _decode_pass(request: DecodeRequest) -> DecodedVideo:
    """Decode the request's frames in one pass: the raw pipeline, and the frame cache's misses."""
    path = request.path
    dec = get_decoder(request.decoder)
    with _calls_lock:
        DECODE_CALLS[str(path)] += 1
    t0 = time.perf_counter()
    if not path.exists():
        raise DecodeError(f"{path}: file not found")
    batch = dec.decode_frames(request)
    if batch.missing.size:
        log.warning("%s: %d planned frames do not exist or do not decode (real frames: %d); "
                    "they are recorded as missing, never replaced", path, batch.missing.size, batch.info.n_frames)
    # where the frames are: a few numbers travel
    return DecodedVideo.from_batch(request, batch, time.perf_counter() - t0, stats=frame_stats(batch.frames, batch.info))


from engine.frames import decode_decord as _decord  # noqa: F401  (registers "decord")
from engine.frames.decode_pyav import PyAVDecoder  # registers "pyav"
