"""MediaView: one budget's frames of one video, as a request carries them to a model."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["MediaView", "media_fingerprint", "media_uuid"]


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
               namespace: str | None = None, content: str | None = None) -> str:
    """The one name of a media item: `video:budget` (`video:image` for a still, `@a-b` for a clip).

    vLLM keys its multimodal caches (processor, encoder outputs, prefix blocks) by this id, so two
    different frame sets must never share it and the same frames always do. A budget id names the
    frames, policy, resolution and pipeline within one sweep; `content` (`media_fingerprint`, as
    ``~digest`` after the video id) tells apart what a name cannot: another file under the same
    dataset and video id, as two sweeps sharing a warm engine may have. `namespace` (``ns/`` prefix)
    keeps runs that must not share cache entries apart, e.g. the policies a cascade timing compares.
    """
    prefix = f"{namespace}/" if namespace else ""
    if content:
        video_id = f"{video_id}~{content}"
    if image:
        return f"{prefix}{video_id}:image"
    uuid = f"{prefix}{video_id}:{budget_id}"
    if clip is not None:
        uuid += f"@{clip[0]:g}-{clip[1]:g}"
    return uuid


@dataclass(frozen=True)
class MediaView:
    """One budget's frames of one video, with what the model needs to know about them."""

    frames: np.ndarray  # (N, H, W, 3) uint8 RGB
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

    @property
    def sampling_fps(self) -> float:
        """The rate the sent frames were sampled at (frames per second of video)."""
        return len(self.indices) / self.duration if self.duration else self.video_fps
