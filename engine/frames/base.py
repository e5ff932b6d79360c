"""What every decoder shares: video facts, the decoded batch, errors and the registry.

A decoder is registered by name and implements `Decoder`: `probe` (cheap facts,
counting the real frames) and `decode_frames` (one forward pass over a
`DecodeRequest`'s sorted unique frame indices, optionally downscaled while decoding).
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
    "DecodeRequest",
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


Size = tuple[int, int]


def _sorted_unique(indices: object) -> np.ndarray:
    return np.unique(np.asarray(indices, dtype=np.int64).ravel())


@dataclass(frozen=True, eq=False)
class DecodeRequest:
    """One decode pass of one video: which frames, by which decoder, at which sizes.

    Every way into the decoders takes one (`engine.frames.decode.decode_video`, the frame cache, the
    decode actors, `Decoder.decode_frames`). Its fields are normalised on creation: `indices` and each
    of `also`'s are sorted unique int64, sizes are int pairs; a negative index is refused.

    Attributes:
        path: The video file.
        indices: Frame indices to decode at `size` (the union of every budget's at that size).
        decoder: A registered decoder name.
        size: (w, h) to decode at (downscaled while decoding); None: the stored size.
        also: {(w, h): indices} frames that budgets need at smaller sizes: a decoder that can (pyav)
            converts them from the decoded picture in the same pass, so a frame at a size never depends
            on the other sizes of the sweep; else views resize them.
    """

    path: Path
    indices: np.ndarray
    decoder: str = "pyav"
    size: Size | None = None
    also: Mapping[Size, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        put = functools.partial(object.__setattr__, self)
        put("path", Path(self.path))
        put("indices", _sorted_unique(self.indices))
        put("size", None if self.size is None else (int(self.size[0]), int(self.size[1])))
        put("also", {(int(s[0]), int(s[1])): _sorted_unique(ix) for s, ix in (self.also or {}).items()})
        if any(ix.size and ix[0] < 0 for ix in (self.indices, *self.also.values())):
            raise ValueError(f"{self.path}: negative frame index")

    @classmethod
    def at_sizes(cls, path: Path | str, decoder: str, info: VideoInfo, need: Mapping[Size, np.ndarray]) -> DecodeRequest:
        """The one decode-size rule: `need` ({(w, h): indices}, e.g. `sizes_needed`) decoded in one pass at the
        largest size any budget needs (`size` None when that is the stored size), the smaller sizes converted in
        the same pass (`also`)."""
        if not need:
            raise ValueError(f"{path}: nothing to decode")
        main = max(need, key=lambda s: (s[0] * s[1], s))
        size = None if tuple(main) == (info.width, info.height) else main
        return cls(Path(path), need[main], decoder, size, {s: ix for s, ix in need.items() if s != main})

    def frames_at(self, stored: Size) -> dict[Size, np.ndarray]:
        """{(w, h): indices} every frame this request asks for at each size (`stored`: the video's size)."""
        main = self.size or (int(stored[0]), int(stored[1]))
        out = {s: ix for s, ix in self.also.items() if s != main}
        out[main] = np.union1d(self.indices, self.also.get(main, np.empty(0, np.int64)))
        return out


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

    def decode_frames(self, request: DecodeRequest) -> FrameBatch:
        """Decode the request's `indices` in one forward pass, at its `size` (w, h) when given; a decoder
        that can also converts the frames in `also` to those sizes in the same pass (`FrameBatch.extra`).
        The request's `decoder` names this decoder (the caller chose it by that name)."""
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
