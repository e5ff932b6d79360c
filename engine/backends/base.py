"""The one backend interface: an async `generate` over engine requests.

The vLLM Ray actor (and its replica pools) and the OpenAI-compatible HTTP client
implement it, so the scheduler never knows which serves it. A request's frames are
pixels or, for a backend that `takes_frame_refs` (an engine in the Ray cluster),
references to them in Ray's object store (`engine.frames.view.FrameRef`), resolved
where the engine runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from engine.frames.view import FrameRef, RepeatedFrames

__all__ = ["ANSWER_CHOICES", "IMAGE_URL_SLOT", "VIDEO_URL_SLOT", "Backend", "BackendBase", "EngineRequest",
           "EngineResult", "frames_node"]

VIDEO_URL_SLOT = "<framesweep:video>"
IMAGE_URL_SLOT = "<framesweep:image:{}>"
ANSWER_CHOICES = "answer_choices"
"""The `Item.extra` key of the strings a generated answer must be one of (`EngineRequest.choices`)."""


@dataclass
class EngineRequest:
    """One prompt for the engine: text, optional video with its metadata, and how to score it."""

    request_id: str
    prompt: str
    video: np.ndarray | RepeatedFrames | FrameRef | None = None
    video_meta: dict[str, Any] | None = None
    media_uuid: str | None = None
    letters: list[str] = field(default_factory=list)
    """Option letters; with `mode="letter"` the first token is constrained to them."""
    mode: Literal["letter", "generate"] = "letter"
    max_tokens: int = 16
    stop: list[str] | None = None
    """Generate mode: strings that end the answer (left out of the text); None: none."""
    temperature: float = 0.0
    """Generate mode: sampling temperature (0: greedy); letter mode always reads the greedy distribution."""
    mm_processor_kwargs: dict[str, Any] | None = None
    messages: list[dict[str, Any]] | None = None
    """The same prompt as OpenAI chat messages; a video part's url is `VIDEO_URL_SLOT`, filled by the HTTP backend."""
    video_key: str | None = None
    """Identity of the video the frames come from (frame encodings are cached per video, index and size)."""
    jpeg_frames: list[bytes] | None = None
    """Already-encoded JPEG frames (the cached pipeline's), sent as they are instead of re-encoding `video`."""
    images: list[np.ndarray] | list[FrameRef] | None = None
    """Frames sent as separate images (InternVL's `Frame{i}: <image>` packing, or an image item)."""
    image_uuids: list[str] | None = None
    chat_extra: dict[str, Any] | None = None
    """Extra chat-request fields (e.g. continue_final_message for a response prefix)."""
    choices: list[str] | None = None
    """Generate mode: the answer is exactly one of these strings (vLLM's structured outputs, `choice`); a server
    without structured outputs answers freely, and the caller parses the text."""


@dataclass
class EngineResult:
    """What the engine returned for one request (or why it failed)."""

    request_id: str
    text: str = ""
    letter_logprobs: dict[str, float] = field(default_factory=dict)
    """Log-probabilities of the option letters at the first answer token (letters not returned are absent)."""
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    mean_logprob: float | None = None
    token_letters: list[tuple[str, dict[str, float]]] | None = None
    """Generate mode: per generated token, its text and the option letters' log-probabilities among
    the tokens returned at that position (see `engine.scoring.letter_logprobs`)."""
    engine_s: float | None = None
    worker: str | None = None
    engine_version: str | None = None
    error_type: str | None = None
    error: str | None = None
    frame_bytes_pulled: int = 0
    """Bytes of frames the engine's node pulled from another node to answer this request (and the requests
    of its call that share them): the data plane's cost between nodes."""

    @property
    def ok(self) -> bool:
        return self.error_type is None


def frames_node(requests: Sequence[EngineRequest]) -> str | None:
    """The Ray node holding most of `requests`' frames by reference (None: no reference to place by)."""
    count: dict[str, int] = {}
    for r in requests:
        for f in (r.video, *(r.images or ())):
            if isinstance(f, FrameRef) and f.node_id is not None:
                count[f.node_id] = count.get(f.node_id, 0) + 1
    return max(count, key=lambda n: count[n]) if count else None


class Backend(Protocol):
    """Anything that answers engine requests asynchronously: every method the pipeline calls."""

    name: str
    info: dict[str, Any]
    """Facts from `start` (engine version, worker, replicas); recorded in the run summary."""

    @property
    def replicas(self) -> Sequence[Backend]:
        """The engines behind this backend, one per replica: itself for a single engine or server, the
        pool's members for an engine pool."""
        ...

    @property
    def reused(self) -> bool:
        """True when `start` joined a live warm engine instead of starting one (`close` leaves it running);
        False for anything else, a pool included (its `replicas` say which of them were reused)."""
        ...

    @property
    def concurrency(self) -> int:
        """Engine calls worth having in flight at once (one per replica)."""
        ...

    @property
    def takes_frame_refs(self) -> bool:
        """True when requests may carry frames by reference (`FrameRef`, resolved where the engine runs: an
        engine in the Ray cluster); False when they must carry pixels (the pipeline fetches them first)."""
        ...

    async def start(self) -> dict[str, Any]:
        """Start (or connect to) the engine; returns facts such as the engine version."""
        ...

    async def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        """Answer every request; per-request failures come back as results with an error."""
        ...

    async def recover(self) -> None:
        """After `generate` raised (a dead engine): bring the engine back, or raise if it cannot be."""
        ...

    async def reset_caches(self) -> int:
        """Empty the engine's prefix and multimodal caches (timed runs start cold); returns how many
        resets the engine has done (0 where there is nothing to reset)."""
        ...

    async def close(self) -> None: ...


class BackendBase:
    """Defaults for the optional parts of `Backend`: one call at a time, nothing to start, recover, reset or
    close, a single engine (`replicas` is itself) that no run reused."""

    name = "backend"
    info: dict[str, Any] = {}  # noqa: RUF012 - replaced, never mutated, by `start`
    reused = False
    _replicas: Sequence[Any] | None = None

    @property
    def replicas(self) -> Sequence[Any]:
        """Itself, unless a subclass sets its replicas (an engine pool)."""
        return [self] if self._replicas is None else self._replicas

    @replicas.setter
    def replicas(self, value: Sequence[Any]) -> None:
        self._replicas = value

    @property
    def concurrency(self) -> int:
        return 1

    @property
    def takes_frame_refs(self) -> bool:
        return False

    async def start(self) -> dict[str, Any]:
        return dict(self.info)

    async def recover(self) -> None:
        return None

    async def reset_caches(self) -> int:
        return 0

    async def close(self) -> None:
        return None
