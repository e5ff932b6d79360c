"""Frames that stay where they were decoded: the driver's handle on them and the engine's way to read them.

A decode actor (`engine.frames.actors`) returns, for one decode pass, a `DecodedPart` (the video's
facts without pixels, kilobytes, which the driver reads) and a reference to the `DecodedVideo` itself,
which the actor put in Ray's object store on its node. The driver holds that reference and never reads it:
`RemoteVideo` plans with the facts and hands every budget a `FrameRef` (`engine.frames.view`) naming
the same objects. `FrameResolver` runs in the engine's process: it reads a video's objects once per
engine call (zero-copy from its own node's store; pulled once to the node otherwise) and takes each
budget's view there.

Both kinds of decoded video answer the pipeline through one protocol (`engine.frames.held.HeldVideo`). A video
decoded in the driver while a decode pool is in use (no actor was left) is put in the store (`RemoteVideo.put`),
so a later round's frames join by reference and the store's pixels never enter the driver to meet them.

Frame bytes that cross a boundary are counted: into the driver (`RemoteVideo.fetched_bytes`: a video
fetched for a backend that needs pixels in the driver, or an object Ray kept in the driver's own memory
instead of a node's store) and between nodes (`FrameResolver.pulled_bytes`: objects the engine's node did
not hold when it asked, by Ray's own record of their locations).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.frames.base import VideoInfo
from engine.frames.held import BudgetFrames
from engine.frames.stats import VideoStats
from engine.frames.video import DecodedVideo
from engine.frames.view import FrameRef

__all__ = ["FRAMES_LOST", "DecodedPart", "FrameResolver", "FramesLostError", "RemoteVideo"]

log = logging.getLogger(__name__)

Size = tuple[int, int]

FRAMES_LOST = "FramesLostError"
"""The `error_type` of a result whose frames were gone from the object store (their node or owner died)."""


class FramesLostError(RuntimeError):
    """The frames a request names are gone from Ray's object store (the node holding them died): decode again."""


@dataclass(frozen=True)
class DecodedPart:
    """What a decode actor tells the driver about one decode pass; the pixels stay in the object store.

    Attributes:
        facts: The decoded video without pixels (`DecodedVideo.facts`).
        held: {(w, h): indices} of the frames the pass holds at each size.
        nbytes: Bytes of the pixels left in the object store.
        node_id: The Ray node whose store holds them.
        worker: The decode actor (host:pid).
    """

    facts: DecodedVideo
    held: dict[Size, np.ndarray]
    nbytes: int
    node_id: str | None
    worker: str


def _object_locations(refs: list[Any]) -> dict[Any, dict[str, Any]]:
    """Ray's record of where each object is ({} where it cannot say)."""
    try:
        from ray.experimental import get_object_locations

        return dict(get_object_locations(refs, timeout_ms=10_000))
    except Exception as err:  # noqa: BLE001 - a measurement only: the frames are read anyway
        log.debug("object locations unavailable: %s", err)
        return {}


class RemoteVideo:
    """The driver's handle on a video decoded by a decode actor: its facts here, its frames in the object store.

    It answers the pipeline's protocol (`engine.frames.held.HeldVideo`) as a `DecodedVideo` does, and gives each
    budget a `FrameRef` (`frames`) instead of pixels. `fetch` brings the pixels into this process (for a backend
    that must encode them here); it is counted in `fetched_bytes`.
    """

    def __init__(self, part: DecodedPart, ref: Any, on_release: Callable[[], None] | None = None) -> None:
        self.facts = part.facts
        self.node_id = part.node_id
        self.nbytes = part.nbytes
        self.workers = [part.worker]
        self._parts: list[Any] = [ref]
        self._held = dict(part.held)
        self._on_release = [on_release] if on_release is not None else []
        self._local: DecodedVideo | None = None
        self.fetched_bytes = self._inlined([ref])
        """Frame bytes that entered this process: fetched (`fetch`) or kept inline by Ray."""
        self.memo: dict[object, object] = {}
        """As `DecodedVideo.memo`: values the later steps derive from this video, emptied when parts join or go."""

    @classmethod
    def put(cls, video: DecodedVideo, worker: str) -> RemoteVideo:
        """`video`, decoded in this process, put in the object store of this process's node: the handle a decode
        actor would have given (its pixels then travel to an engine by reference, and a later round's frames join
        them by reference). Needs Ray."""
        import ray

        node_id = ray.get_runtime_context().get_node_id()
        part = DecodedPart(video.facts(), video.held(), video.nbytes, node_id, worker)
        return cls(part, ray.put(video))

    @staticmethod
    def _inlined(refs: list[Any]) -> int:
        """Bytes of `refs` that Ray keeps in this process's memory instead of a node's store (a small return
        value is; a put object never is): they entered the driver."""
        return sum(int(loc.get("object_size") or 0) for loc in _object_locations(refs).values()
                   if not loc.get("node_ids"))

    @property
    def path(self) -> Path:
        return self.facts.path

    @property
    def decoder(self) -> str:
        return self.facts.decoder

    @property
    def info(self) -> VideoInfo:
        return self.facts.info

    @property
    def decode_s(self) -> float:
        return self.facts.decode_s

    @property
    def pipeline(self) -> str:
        return self.facts.pipeline

    @property
    def stats(self) -> VideoStats | None:
        return self.facts.stats

    def covered(self, size: Size) -> np.ndarray:
        """Indices held at `size` (w, h) by any part."""
        return self._held.get((int(size[0]), int(size[1])), np.empty(0, np.int64))

    def frames(self, indices: np.ndarray, size: Size) -> FrameRef:
        """One budget's frames by reference; DecodeError for frames that do not exist or did not decode."""
        idx = np.asarray(self.facts.check(indices), dtype=np.int64)
        key = (int(size[0]), int(size[1]))
        if np.setdiff1d(idx, self.covered(key)).size:
            raise KeyError("a view asks for frames that were not decoded")
        return FrameRef(tuple(self._parts), idx, key, self.node_id)

    def budget(self, indices: np.ndarray, size: Size, *, by_ref: bool) -> BudgetFrames:
        """One budget's frames: by reference (`frames`) when `by_ref`, else the pixels of the fetched video
        (`fetch`: counted in `fetched_bytes`)."""
        if by_ref:
            return self.frames(indices, size), None
        return self.fetch().budget(indices, size, by_ref=False)

    def absorb(self, other: RemoteVideo) -> None:
        """Take in a later decode pass of the same video (an adaptive round): one more part."""
        self.facts.absorb_facts(other.facts)
        self._parts += other._parts
        for s, ix in other._held.items():
            self._held[s] = np.union1d(self.covered(s), ix)
        self._on_release += other._on_release
        self.nbytes += other.nbytes
        self.workers += other.workers
        self.fetched_bytes += other.fetched_bytes
        self._local = None
        self.memo.clear()

    def fetch(self) -> DecodedVideo:
        """The pixels in this process (once; counted in `fetched_bytes`)."""
        if self._local is None:
            import ray

            self._local = DecodedVideo.merge(ray.get(list(self._parts)))
            self.fetched_bytes += self.nbytes
        return self._local

    def release(self) -> None:
        """Drop the references (Ray frees the objects once no engine holds them either)."""
        self.facts.release()
        self._parts.clear()
        self._local = None
        self.memo.clear()
        callbacks, self._on_release = self._on_release, []
        for done in callbacks:
            done()


class FrameResolver:
    """Reads `FrameRef`s in the engine's process, for one engine call: each video's objects once, each budget's
    view once (the questions of one budget share it).

    Args:
        node_id: The Ray node this process runs on (objects it does not hold count in `pulled_bytes`).
        timeout_s: How long to wait for a video's objects before counting them lost.
    """

    def __init__(self, node_id: str | None, timeout_s: float = 120.0) -> None:
        self.node_id = node_id
        self.timeout_s = timeout_s
        self.pulled_bytes = 0
        self._videos: dict[tuple[Any, ...], DecodedVideo] = {}

    def __call__(self, value: Any) -> Any:
        """The pixels of a `FrameRef` (an array: (N, H, W, 3), or (H, W, 3) for one frame); anything else as it is.

        Raises:
            FramesLostError: the objects are gone (their node or owner died) or did not arrive in time.
        """
        if not isinstance(value, FrameRef):
            return value
        frames = self._video(value.parts).view(value.indices, value.size, shared=True)
        return frames[0] if value.single else frames

    def _video(self, parts: tuple[Any, ...]) -> DecodedVideo:
        if parts not in self._videos:
            import ray
            from ray.exceptions import GetTimeoutError, ObjectLostError

            elsewhere = self._remote_bytes(list(parts))  # asked before the read pulls them here
            try:
                got = ray.get(list(parts), timeout=self.timeout_s)
            except (ObjectLostError, GetTimeoutError) as err:
                raise FramesLostError(f"the decoded frames are gone from the object store ({type(err).__name__}); "
                                      "decode the video again") from None
            self.pulled_bytes += elsewhere
            self._videos[parts] = DecodedVideo.merge(got)
        return self._videos[parts]

    def _remote_bytes(self, refs: list[Any]) -> int:
        """Bytes of the objects held on other nodes only (this node pulls them)."""
        if self.node_id is None:
            return 0
        return sum(int(loc.get("object_size") or 0) for loc in _object_locations(refs).values()
                   if loc.get("node_ids") and self.node_id not in loc["node_ids"])

