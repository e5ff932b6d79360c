"""`HeldVideo`: a decoded video as the pipeline holds it, wherever its pixels are.

Two kinds implement it, and the steps after decoding (`engine.sweep.decoding`, `engine.sweep.requests`, the
scheduler) ask only this protocol, never which kind a video is:

- `DecodedVideo` (`engine.frames.video`): the pixels in this process (decoded here, no decode actor);
- `RemoteVideo` (`engine.frames.remote`): the pixels in Ray's object store on a decode actor's node, the facts
  here (kilobytes).

What a step may ask: the video's facts (`info`, `decoder`, `pipeline`, `decode_s`, `stats`), which node holds its
pixels (`node_id`, None: this process), which frames it holds at a size (`covered`), one budget's frames
(`budget`: by reference where the pixels are in the store and the engine reads references, else pixels),
the frames of a later decode pass of the same video (`absorb`: a video of the same kind), the frame bytes it
brought into this process from elsewhere (`fetched_bytes`), and its release (`release`).

One pipeline holds one kind: with decode actors every video is a `RemoteVideo` (one decoded here because no actor
was left is put in the store, `RemoteVideo.put`), without them every video is a `DecodedVideo`. So a later
round's frames always join the earlier ones' by their own kind, and no pixels in the store are fetched into the
driver to join them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, Self

import numpy as np

from engine.frames.base import VideoInfo
from engine.frames.stats import VideoStats
from engine.frames.view import FrameRef, RepeatedFrames

__all__ = ["BudgetFrames", "HeldVideo", "Size"]

Size = tuple[int, int]

BudgetFrames = tuple["np.ndarray | RepeatedFrames | FrameRef", "list[bytes] | None"]
"""One budget's frames as a request carries them, and their JPEG bytes where the frame cache holds every one."""


class HeldVideo(Protocol):
    """A decoded video as the pipeline holds it (see the module docstring)."""

    @property
    def path(self) -> Path: ...

    @property
    def decoder(self) -> str: ...

    @property
    def info(self) -> VideoInfo: ...

    @property
    def decode_s(self) -> float: ...

    @property
    def pipeline(self) -> str: ...

    @property
    def stats(self) -> VideoStats | None:
        """The low-level statistics of its largest decode pass (a few numbers, no pixels), None if not computed."""
        ...

    @property
    def node_id(self) -> str | None:
        """The Ray node whose object store holds its pixels; None when they are in this process."""
        ...

    @property
    def fetched_bytes(self) -> int:
        """Frame bytes it brought into this process from the object store (0 for pixels decoded here: whoever
        decoded them counted them)."""
        ...

    @property
    def memo(self) -> dict[object, object]:
        """Values the later steps derive from this video (each budget's media), emptied when frames join or go."""
        ...

    def covered(self, size: Size) -> np.ndarray:
        """Indices it holds at `size` (w, h)."""
        ...

    def budget(self, indices: np.ndarray, size: Size, *, by_ref: bool) -> BudgetFrames:
        """One budget's frames (`indices` at `size`): a `FrameRef` when `by_ref` and the pixels are in the object
        store, else the pixels (a shared read-only view) and, from the frame cache, their JPEG bytes.

        Raises:
            DecodeError: a frame of `indices` does not exist or did not decode.
        """
        ...

    def absorb(self, other: Self) -> None:
        """Take in a later decode pass of the same video, of the same kind."""
        ...

    def release(self) -> None:
        """Let its frames go (the video is done, or its frames were lost)."""
        ...
