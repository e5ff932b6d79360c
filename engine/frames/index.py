"""A video's frame index, built by demuxing without decoding (cheap), shared by every decoder.

Demuxing reads every packet header of the video stream: that counts the frames
that really exist (a container's declared count can lie, e.g. a truncated file
whose header lists frames its data no longer holds), gives each frame's pts in
presentation order (so a decoded frame's pts names its index, also after a seek
and with B-frames or variable frame rate), and marks the keyframes (where a seek
can land). One frame is decoded to read the display rotation and to prove the
stream decodes at all. Indexes are kept per (path, size, mtime).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from pathlib import Path

import numpy as np

from engine.frames.base import DecodeError, VideoInfo, file_key

__all__ = ["StreamIndex", "stream_index"]

log = logging.getLogger(__name__)

_CACHE: OrderedDict[tuple[str, int, int], StreamIndex] = OrderedDict()
_CACHE_SIZE = 64
_lock = threading.Lock()


@dataclass(frozen=True)
class StreamIndex:
    """Every real frame of a video stream, in presentation order.

    Attributes:
        pts: (T,) int64 presentation timestamps in `time_base` units, ascending.
        keyframes: Sorted presentation indices of keyframes (seek targets).
        time_base: Seconds per pts unit.
        info: The video's facts (real frame count, fps, displayed size, rotation).
    """

    pts: np.ndarray
    keyframes: np.ndarray
    time_base: Fraction
    info: VideoInfo

    @cached_property
    def _by_pts(self) -> dict[int, int]:
        return {p: i for i, p in enumerate(self.pts.tolist())}

    def index_of(self, pts: int | None) -> int | None:
        """The presentation index of a frame with this pts (None if no real frame has it)."""
        return None if pts is None else self._by_pts.get(pts)

    def keyframe_before(self, index: int) -> int:
        """The last keyframe at or before `index` (0 when none is marked)."""
        k = int(np.searchsorted(self.keyframes, index, side="right")) - 1
        return int(self.keyframes[k]) if k >= 0 else 0

    def timestamps(self, indices: np.ndarray) -> np.ndarray:
        """Seconds from the first frame for each index."""
        if not self.pts.size:
            return np.zeros(len(indices))
        return (self.pts[indices] - self.pts[0]).astype(np.float64) * float(self.time_base)


def _rotation(degrees: float) -> int:
    r = round(degrees / 90.0) * 90 % 360
    return {0: 0, 90: 90, 180: 180, 270: -90}[r]


def _build(path: Path) -> StreamIndex:
    import av

    with av.open(str(path)) as c:
        if not c.streams.video:
            raise DecodeError(f"{path}: no video stream")
        s = c.streams.video[0]
        declared = int(s.frames or 0) or None
        pts: list[int] = []
        key: list[bool] = []
        first = None
        for pk in c.demux(s):
            if pk.size == 0 or pk.is_corrupt or pk.is_discard:
                continue
            p = pk.pts if pk.pts is not None else pk.dts
            if p is None:
                continue
            pts.append(int(p))
            key.append(bool(pk.is_keyframe))
            if first is None:
                try:
                    frames = pk.decode()
                except av.FFmpegError as err:
                    log.debug("%s: packet at pts %s does not decode: %s", path, p, err)
                    continue
                first = frames[0] if frames else None
        if first is None:  # frames still in the decoder's delay line
            try:
                first = next(iter(s.codec_context.decode(None)), None)
            except av.FFmpegError:
                first = None
        time_base = s.time_base or Fraction(1, 90000)
        avg = float(s.average_rate or s.guessed_rate or 0)
    if not pts or first is None:
        raise DecodeError(f"{path}: no frame of the video stream could be decoded")
    order = np.argsort(np.asarray(pts, dtype=np.int64), kind="stable")
    pts_arr = np.asarray(pts, dtype=np.int64)[order]
    keyframes = np.flatnonzero(np.asarray(key, dtype=bool)[order]).astype(np.int64)
    rotation = _rotation(first.rotation or 0)
    w, h = (first.height, first.width) if rotation in (90, -90) else (first.width, first.height)
    n = int(pts_arr.size)
    diffs = np.diff(pts_arr)
    # a one-unit jitter is rounding (33/34 ms at 1/1000 s), not a variable rate
    vfr = bool(diffs.size > 1 and (diffs.max() - diffs.min()) > 0.1 * float(np.median(diffs)) + 1)
    if not avg and n > 1:
        avg = (n - 1) / (float(pts_arr[-1] - pts_arr[0]) * float(time_base))
    info = VideoInfo(n, avg or 25.0, int(w), int(h), rotation, declared, vfr)
    if info.count_lies:
        log.warning("%s: the container declares %s frames, %d really exist", path, declared, n)
    return StreamIndex(pts_arr, keyframes, Fraction(time_base), info)


def stream_index(path: Path | str) -> StreamIndex:
    """The frame index of `path` (built once per path, size and mtime); `DecodeError` if unreadable."""
    p = Path(path)
    key = file_key(p)
    with _lock:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    try:
        index = _build(p)
    except DecodeError:
        raise
    except Exception as err:  # av.error.* and OSError: keep the decoder's own message
        raise DecodeError(f"{p}: {type(err).__name__}: {err}") from err
    with _lock:
        _CACHE[key] = index
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return index

