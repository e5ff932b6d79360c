"""Decoders (registered by name) and union decoding: one pass per video.

`decode_union` returns a `DecodedVideo` holding the union of every budget's
indices; `DecodedVideo.view` then selects one budget's frames with no I/O, and
`DecodedVideo.resized` resizes each decoded frame at most once per resolution.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
from PIL import Image

__all__ = [
    "DECODERS",
    "DECODE_CALLS",
    "DecodeError",
    "DecodedVideo",
    "Decoder",
    "VideoInfo",
    "decode_union",
    "get_decoder",
    "target_size",
]

log = logging.getLogger(__name__)

DECODE_CALLS: Counter[str] = Counter()
"""Decode passes per video path in this process (tests check each video is decoded once)."""
_calls_lock = threading.Lock()


class DecodeError(RuntimeError):
    """A video that cannot be decoded (missing, corrupt, truncated, no video stream)."""


@dataclass(frozen=True)
class VideoInfo:
    n_frames: int
    fps: float
    width: int
    height: int

    @property
    def duration(self) -> float:
        return self.n_frames / self.fps if self.fps else 0.0


class Decoder(Protocol):
    name: str

    def probe(self, path: Path) -> VideoInfo: ...

    def decode(self, path: Path, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray, VideoInfo]:
        """Frames (K, H, W, 3) uint8 RGB and timestamps (K,) for sorted unique `indices`."""
        ...


DECODERS: dict[str, Callable[[], Decoder]] = {}


def register_decoder(name: str) -> Callable[[Callable[[], Decoder]], Callable[[], Decoder]]:
    def deco(factory: Callable[[], Decoder]) -> Callable[[], Decoder]:
        DECODERS[name] = factory
        return factory

    return deco


def get_decoder(name: str) -> Decoder:
    try:
        return DECODERS[name]()
    except KeyError:
        raise KeyError(f"unknown decoder {name!r}; known: {', '.join(sorted(DECODERS))}") from None


@register_decoder("pyav")
class PyAVDecoder:
    """PyAV (FFmpeg): one sequential pass from the first frame to the last needed one."""

    name = "pyav"

    def probe(self, path: Path) -> VideoInfo:
        import av

        try:
            with av.open(str(path)) as c:
                if not c.streams.video:
                    raise DecodeError(f"{path}: no video stream")
                s = c.streams.video[0]
                fps = float(s.average_rate or s.guessed_rate or 0) or 25.0
                n = int(s.frames or 0)
                if n <= 0 and s.duration is not None and s.time_base is not None:
                    n = int(round(float(s.duration * s.time_base) * fps))
                if n <= 0 and c.duration:
                    n = int(round(c.duration / 1_000_000 * fps))
                return VideoInfo(n, fps, s.codec_context.width, s.codec_context.height)
        except DecodeError:
            raise
        except Exception as err:  # av.error.* and OSError: the decoder's own message
            raise DecodeError(f"{path}: {type(err).__name__}: {err}") from err

    def decode(self, path: Path, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray, VideoInfo]:
        import av

        info = self.probe(path)
        wanted = set(int(i) for i in indices)
        last = int(indices.max()) if indices.size else -1
        frames: list[np.ndarray] = []
        stamps: list[float] = []
        got: list[int] = []
        try:
            with av.open(str(path)) as c:
                stream = c.streams.video[0]
                stream.thread_type = "AUTO"
                for i, frame in enumerate(c.decode(stream)):
                    if i in wanted:
                        frames.append(frame.to_ndarray(format="rgb24"))
                        stamps.append(float(frame.time) if frame.time is not None else i / info.fps)
                        got.append(i)
                    if i >= last:
                        break
        except Exception as err:
            raise DecodeError(f"{path}: {type(err).__name__}: {err}") from err
        if not frames:
            raise DecodeError(f"{path}: no frames could be decoded")
        if len(got) < len(wanted):
            # The container over-stated its frame count: reuse the last real frame and say so.
            log.warning("%s: %d of %d planned frames do not exist; using the last decoded frame", path,
                        len(wanted) - len(got), len(wanted))
            while len(frames) < len(wanted):
                frames.append(frames[-1])
                stamps.append(stamps[-1])
        return np.stack(frames), np.asarray(stamps), info


def target_size(width: int, height: int, max_pixels: int | None, short_side: int | None) -> tuple[int, int]:
    """(w, h) after applying a budget's resolution rule, aspect kept, never upscaled, even sizes."""
    scale = 1.0
    if max_pixels is not None and width * height > max_pixels:
        scale = (max_pixels / (width * height)) ** 0.5
    if short_side is not None and min(width, height) > short_side:
        scale = short_side / min(width, height)
    if scale >= 1.0:
        return width, height
    return max(2, int(width * scale) // 2 * 2), max(2, int(height * scale) // 2 * 2)


@dataclass
class DecodedVideo:
    """The union of a video's planned frames, decoded once."""

    path: Path
    decoder: str
    indices: np.ndarray
    frames: np.ndarray
    timestamps: np.ndarray
    info: VideoInfo
    decode_s: float
    _resized: dict[tuple[int, int], np.ndarray] = field(default_factory=dict, repr=False)

    def _rows(self, indices: np.ndarray) -> np.ndarray:
        rows = np.searchsorted(self.indices, indices)
        if rows.size and (rows.max() >= self.indices.size or not np.array_equal(self.indices[rows], indices)):
            raise KeyError("view asks for frames that were not decoded")
        return rows

    def view(self, indices: np.ndarray, size: tuple[int, int] | None = None) -> np.ndarray:
        """One budget's frames (N, H, W, 3) in `indices` order; resized frames come from a per-size cache."""
        rows = self._rows(indices)
        if size is None or size == (self.frames.shape[2], self.frames.shape[1]):
            return self.frames[rows]
        if size not in self._resized:
            self._resized[size] = np.stack(
                [np.asarray(Image.fromarray(f).resize(size, Image.Resampling.BICUBIC)) for f in self.frames]
            )
        return self._resized[size][rows]

    @property
    def nbytes(self) -> int:
        return int(self.frames.nbytes + sum(a.nbytes for a in self._resized.values()))


def decode_union(path: Path, indices: np.ndarray, decoder: str = "pyav") -> DecodedVideo:
    """Decode the sorted unique `indices` of one video in one pass."""
    import time

    dec = get_decoder(decoder)
    with _calls_lock:
        DECODE_CALLS[str(path)] += 1
    t0 = time.perf_counter()
    if not Path(path).exists():
        raise DecodeError(f"{path}: file not found")
    frames, stamps, info = dec.decode(Path(path), indices)
    return DecodedVideo(Path(path), decoder, np.asarray(indices), frames, stamps, info, time.perf_counter() - t0)


from engine.frames import decode_decord as _decord  # noqa: E402,F401  (registers "decord" when importable)
