"""What every decoder shares: video facts, the decoded batch, errors and the registry.

A decoder is registered by name and implements `Decoder`: `probe` (cheap facts,
counting the real frames) and `decode_frames` (one forward pass over sorted
unique frame indices, optionally downscaled while decoding).
"""

from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from engine.registry import Registry

__all__ = [
    "DECODERS",
    "BudgetLike",
    "DecodeError",
    "Decoder",
    "FrameBatch",
    "SourceTooLargeError",
    "VideoInfo",
    "decoder_version",
    "get_decoder",
    "is_media_fault",
    "register_decoder",
]


class BudgetLike(Protocol):
    """What the media plane reads of a budget (the spec's `BudgetPoint` is one; frames never import the spec)."""

    @property
    def frames(self) -> int: ...
    @property
    def policy(self) -> str: ...
    @property
    def seed(self) -> int: ...
    @property
    def max_pixels(self) -> int | None: ...
    @property
    def short_side(self) -> int | None: ...
    @property
    def min_pixels(self) -> int | None: ...
    @property
    def is_text_only(self) -> bool: ...


class DecodeError(RuntimeError):
    """A video that cannot be decoded (missing, corrupt, truncated, no video stream, frames too large): the
    media's own fault, so decoding the same file again fails the same way."""


class SourceTooLargeError(DecodeError):
    """A video (or image) whose stored frames are larger than `[decode] max_source_pixels`: refused before any
    frame is decoded."""


# OS errors that say the file itself is the problem, not the machine (unlike EIO, ENOMEM or a stale handle)
_MEDIA_OS_ERRORS = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)


def is_media_fault(err: BaseException) -> bool:
    """Whether a failure to read media is the media's own (missing, unreadable, undecodable, too large): it fails
    again on a rerun until the file is fixed. False for the machine's (an I/O error, memory, a dead worker)."""
    return isinstance(err, (DecodeError, *_MEDIA_OS_ERRORS))


@dataclass(frozen=True)
class VideoInfo:
    """Facts about a video's first video stream, as displayed (rotation applied).

    Attributes:
        n_frames: Frames that really exist (counted by demuxing, not read from the header).
        fps: Average frame rate (frames per second); for variable frame rate, `n_frames / duration`.
        width: Displayed width (after rotation).
        height: Displayed height (after rotation).
        rotation: Counter-clockwise degrees the stored frames are turned to display upright
            (FFmpeg's display matrix, as `VideoFrame.rotation` reports it); 0, 90, -90 or 180.
        declared_frames: The frame count the container claims; differs from `n_frames` when it lies.
        vfr: True when the frame intervals vary (timestamps, not `index / fps`, tell time).
    """

    n_frames: int
    fps: float
    width: int
    height: int
    rotation: int = 0
    declared_frames: int | None = None
    vfr: bool = False

    @property
    def duration(self) -> float:
        return self.n_frames / self.fps if self.fps else 0.0

    @property
    def count_lies(self) -> bool:
        """True when the container's frame count is not the real one."""
        return self.declared_frames is not None and self.declared_frames != self.n_frames


@dataclass
class FrameBatch:
    """What one decode pass produced.

    Attributes:
        indices: Sorted unique frame indices that were decoded (a subset of those asked for).
        frames: (K, H, W, 3) uint8 RGB, upright, in `indices` order.
        timestamps: (K,) seconds from the first frame.
        info: The video's facts.
        missing: Indices asked for that do not exist or could not be decoded (never faked).
        extra: Frames also converted to other sizes in the same pass: {(w, h): {index: frame}}.
        times: Seconds from the first frame of every decoded frame (also those only in `extra`).
    """

    indices: np.ndarray
    frames: np.ndarray
    timestamps: np.ndarray
    info: VideoInfo
    missing: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    extra: dict[tuple[int, int], dict[int, np.ndarray]] = field(default_factory=dict)
    times: dict[int, float] = field(default_factory=dict)


class Decoder(Protocol):
    """One decoding backend (registered by name)."""

    name: str
    package: str
    """The Python distribution that decodes (e.g. "av"): rows record it with its version."""

    def probe(self, path: Path) -> VideoInfo:
        """The video's facts; raises `DecodeError` for unreadable media."""
        ...

    def decode_frames(self, path: Path, indices: np.ndarray, size: tuple[int, int] | None = None,
                      also: Mapping[tuple[int, int], np.ndarray] | None = None) -> FrameBatch:
        """Decode sorted unique `indices` in one forward pass, at `size` (w, h) when given; a decoder
        that can also converts the frames in `also` to those sizes in the same pass (`FrameBatch.extra`)."""
        ...


DECODERS: Registry[Callable[[], Decoder]] = Registry("decoder")
"""Decoder name -> its factory (usually the class)."""


def file_key(path: Path | str) -> tuple[str, int, int]:
    """(resolved path, size, mtime_ns): what identifies a file's current content for the caches."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as err:
        raise DecodeError(f"{p}: {type(err).__name__}: {err}") from err
    return (str(p.resolve()), st.st_size, st.st_mtime_ns)


def register_decoder(name: str) -> Callable[[Callable[[], Decoder]], Callable[[], Decoder]]:
    """Register a decoder factory (usually the class) under `name`; a name registered twice is an error."""
    return DECODERS.decorator(name)


@functools.cache
def decoder_version(name: str) -> str:
    """The decoding package of decoder `name` and its installed version, e.g. "av 14.2.0"."""
    package = get_decoder(name).package
    try:
        return f"{package} {importlib.metadata.version(package)}"
    except importlib.metadata.PackageNotFoundError:
        return f"{package} (version unknown)"


def get_decoder(name: str) -> Decoder:
    """A new decoder by name; an unknown name fails listing the known ones."""
    return DECODERS.get(name)()
