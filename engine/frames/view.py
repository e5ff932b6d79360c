"""MediaView: one budget's frames of one video, as a request carries them to a model; FrameRef: those frames
still in Ray's object store, named by reference (the driver never holds them)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FrameRef", "MediaView", "RepeatedFrames", "media_fingerprint", "media_uuid"]


def media_fingerprint(path: str | Path | None, *parts: object) -> str:
    """A short digest of what a media item's frames are made of: the source file's identity (resolved
    path, size, modification time) and `parts` (e.g. the decoder, the frame indices, the output size)."""
    h = hashlib.blake2b(digest_size=6)
    if path is not None:
        try:
            st = os.stat(path)
            h.update(f"{Path(path).resolve()}|{st.st_size}|{st.st_mtime_ns}".encode())
        except OSError:
            h.update(str(path).encode())
    for p in parts:
        h.update(b"|")
        h.update(p.tobytes() if isinstance(p, np.ndarray) else repr(p).encode())
    return h.hexdigest()


def media_uuid(video_id: str, budget_id: str, *, image: bool = False, clip: tuple[float, float] | None = None,
               namespace: str | None = None, content: str | None = None, frames: str | None = None) -> str:
    """The one name of a media item: `video:budget` (`video:image` for a still, `@a-b` for a clip).

    vLLM keys its multimodal caches (processor, encoder outputs, prefix blocks) by this id, so two
    different frame sets must never share it and the same frames always do. A budget id names the
    frames, policy, resolution and pipeline within one sweep; `content` (`media_fingerprint` of the
    file, decoder and pipeline, as ``~digest`` after the video id) tells apart what a name cannot:
    another file under the same dataset and video id, as two sweeps sharing a warm engine may have;
    `frames` (`media_fingerprint` of the frame indices and size, as ``~digest`` after the budget id)
    tells apart two frame sets one budget id names in two sweeps. The video part (`MediaView.source`)
    stays one name for every budget of a video, under which frames are shared (per-frame ids, the
    HTTP backend's JPEG encodings). `namespace` (``ns/`` prefix) keeps runs that must not share cache
    entries apart, e.g. the policies a cascade timing compares.
    """
    prefix = f"{namespace}/" if namespace else ""
    if content:
        video_id = f"{video_id}~{content}"
    frames_part = f"~{frames}" if frames else ""
    if image:
        return f"{prefix}{video_id}:image{frames_part}"
    uuid = f"{prefix}{video_id}:{budget_id}{frames_part}"
    if clip is not None:
        uuid += f"@{clip[0]:g}-{clip[1]:g}"
    return uuid


@dataclass(frozen=True, eq=False)
class FrameRef:
    """One budget's frames (or one frame) of a video decoded by a decode actor, named by reference.

    The frames stay in Ray's object store on the decode actor's node; a request carries this instead
    of the pixels and the engine resolves it where it runs (`engine.frames.remote.FrameResolver`).
    Every budget and question of a video names the same objects (`parts`), so a node holds one copy
    of the video's frames whatever asks for them. Shaped like the array it stands for (`shape`,
    `len`, one frame by index, iteration over frames), so a model family packs it as it packs frames.

    Attributes:
        parts: Object refs of the decoded video's parts (one per decode pass; adaptive rounds add parts).
        indices: Frame indices, in order (one for a single frame).
        size: (w, h) of the frames.
        node_id: The Ray node holding the first part (None: unknown).
        single: One frame, shaped (H, W, 3), rather than a stack (N, H, W, 3).
    """

    parts: tuple[Any, ...]
    indices: np.ndarray
    size: tuple[int, int]
    node_id: str | None = None
    single: bool = False

    @property
    def shape(self) -> tuple[int, ...]:
        w, h = self.size
        return (h, w, 3) if self.single else (len(self.indices), h, w, 3)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.uint8)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape))

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, k: int) -> FrameRef:
        """Frame `k` of the stack, as a single-frame reference."""
        if self.single or not isinstance(k, (int, np.integer)):
            raise TypeError("a FrameRef stack gives one frame by integer index")
        n = len(self.indices)
        if not -n <= k < n:
            raise IndexError(f"frame {k} of {n}")
        k = int(k) % n
        return FrameRef(self.parts, self.indices[k:k + 1], self.size, self.node_id, single=True)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return (self[k] for k in range(len(self.indices)))


class RepeatedFrames:
    """One budget's frames where frames repeat (a video shorter than its budget): each distinct frame held once and
    shown at every position that repeats it, never copied per position.

    Shaped like the (N, H, W, 3) array it stands for (`shape`, `dtype`, `len`, one frame by integer index,
    iteration over frames, `np.asarray`), so a model family packs it as it packs frames and the HTTP backend encodes
    each distinct frame once. An engine that needs one contiguous array (vLLM's processor) gets it from
    `np.asarray`: made on the first ask and kept, so the questions and models sharing this view share that copy.

    Attributes:
        frames: The distinct frames, each (H, W, 3) and read-only (views of what the decoded video holds).
        order: For each position, which of `frames` it shows.
    """

    __slots__ = ("_dense", "frames", "order")

    def __init__(self, frames: Sequence[np.ndarray], order: np.ndarray) -> None:
        self.frames = tuple(frames)
        self.order = np.asarray(order, dtype=np.intp)
        if not self.frames or self.order.ndim != 1 or self.order.min(initial=0) < 0 or \
                self.order.max(initial=0) >= len(self.frames):
            raise ValueError(f"RepeatedFrames: order {self.order.tolist()[:10]} does not index {len(self.frames)} frames")
        self._dense: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self.order), *self.frames[0].shape)

    @property
    def dtype(self) -> np.dtype:
        return self.frames[0].dtype

    @property
    def ndim(self) -> int:
        return 1 + self.frames[0].ndim

    @property
    def nbytes(self) -> int:
        """Bytes of the array this stands for (what a copy per position would hold)."""
        return len(self.order) * int(self.frames[0].nbytes)

    @property
    def held_bytes(self) -> int:
        """Bytes this holds beyond the frames it names: its contiguous copy, once an engine asked for one."""
        return 0 if self._dense is None else int(self._dense.nbytes)

    def __len__(self) -> int:
        return len(self.order)

    def __getitem__(self, k: int) -> np.ndarray:
        """Frame `k` (the distinct frame it repeats, not a copy)."""
        if not isinstance(k, (int, np.integer)):
            raise TypeError("RepeatedFrames gives one frame by integer index (np.asarray for the whole array)")
        return self.frames[self.order[k]]

    def __iter__(self) -> Iterator[np.ndarray]:
        return (self.frames[j] for j in self.order.tolist())

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if copy is False:
            raise ValueError("RepeatedFrames cannot be one array without a copy")
        if self._dense is None:
            dense = np.stack([self.frames[j] for j in self.order.tolist()])
            dense.setflags(write=False)
            self._dense = dense
        return self._dense if dtype is None or np.dtype(dtype) == self._dense.dtype else self._dense.astype(dtype)

    def __getstate__(self) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
        return self.frames, self.order  # the distinct frames travel, never the copy

    def __setstate__(self, state: tuple[tuple[np.ndarray, ...], np.ndarray]) -> None:
        self.frames, self.order = state
        self._dense = None


@dataclass(frozen=True)
class MediaView:
    """One budget's frames of one video, with what the model needs to know about them."""

    frames: np.ndarray | RepeatedFrames | FrameRef
    """(N, H, W, 3) uint8 RGB (`RepeatedFrames` where frames repeat), or a reference to them (resolved by the
    engine)."""
    indices: np.ndarray
    video_fps: float
    total_frames: int
    uuid: str
    backend: str
    jpeg_frames: list[bytes] | None = None

    @property
    def source(self) -> str:
        """The uuid's media part (namespace, dataset and video, without the budget): the name of one video's
        frames, shared by every budget, so per-frame ids (`frame_uuid`) can be shared across budgets."""
        return self.uuid.rsplit(":", 1)[0]

    def frame_uuid(self, index: int, width: int, height: int) -> str:
        """The id of one frame at one size (image-per-frame families key vLLM's cache by it)."""
        return f"{self.source}:{int(index)}:{width}x{height}"

    @property
    def duration(self) -> float:
        return self.total_frames / self.video_fps if self.video_fps else 0.0
