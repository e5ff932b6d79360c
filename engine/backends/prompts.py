"""Per-model-family prompt and media packing (a registry by family name).

The video always comes first and the question after it, so every question over
the same video and budget shares the prompt prefix (vLLM prefix caching and the
encoder cache can hit). Text-only budgets send no media at all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from engine.backends.base import VIDEO_URL_SLOT, EngineRequest
from engine.items import Item

__all__ = ["FAMILIES", "MediaView", "PromptFamily", "get_family", "prompt_hash"]


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
    def duration(self) -> float:
        return self.total_frames / self.video_fps if self.video_fps else 0.0

    @property
    def sampling_fps(self) -> float:
        """The rate the sent frames were sampled at (frames per second of video)."""
        return len(self.indices) / self.duration if self.duration else self.video_fps


class PromptFamily(Protocol):
    name: str

    def build(self, request_id: str, item: Item, media: MediaView | None, mode: str, system: str | None,
              max_tokens: int) -> EngineRequest: ...


FAMILIES: dict[str, Callable[[], PromptFamily]] = {}


def register_family(name: str) -> Callable[[Callable[[], PromptFamily]], Callable[[], PromptFamily]]:
    def deco(factory: Callable[[], PromptFamily]) -> Callable[[], PromptFamily]:
        FAMILIES[name] = factory
        return factory

    return deco


def get_family(name: str) -> PromptFamily:
    try:
        return FAMILIES[name]()
    except KeyError:
        raise KeyError(f"unknown model family {name!r}; known: {', '.join(sorted(FAMILIES))}") from None


def prompt_hash(prompt: str, uuid: str | None) -> str:
    """A short hash of what was sent (prompt text and media identity)."""
    return hashlib.sha256(f"{prompt}\x00{uuid or ''}".encode()).hexdigest()[:16]


def question_text(item: Item) -> str:
    """The adapter's official prompt, or question + lettered options."""
    if item.prompt:
        return item.prompt
    opts = "\n".join(f"{lt}. {o}" for lt, o in zip(item.letters, item.options))
    return f"{item.question}\n{opts}" if opts else item.question


@register_family("qwen2_5_vl")
class Qwen25VL:
    """Qwen2.5-VL: ChatML with `<|vision_start|><|video_pad|><|vision_end|>` before the question.

    Frames are sampled by framesweep, so the processor gets the video metadata
    (`do_sample_frames=False`, the real fps and frame indices), from which it derives
    the real sampling fps for its time positions.
    """

    name = "qwen2_5_vl"
    default_system = "You are a helpful assistant."

    def build(self, request_id: str, item: Item, media: MediaView | None, mode: str, system: str | None,
              max_tokens: int) -> EngineRequest:
        sys_msg = system if system is not None else self.default_system
        vision = "<|vision_start|><|video_pad|><|vision_end|>" if media is not None else ""
        text = question_text(item)
        prompt = (
            f"<|im_start|>system\n{sys_msg}<|im_end|>\n<|im_start|>user\n{vision}"
            f"{text}<|im_end|>\n<|im_start|>assistant\n"
        )
        user: Any = text
        if media is not None:
            user = [{"type": "video_url", "video_url": {"url": VIDEO_URL_SLOT}}, {"type": "text", "text": text}]
        messages = [{"role": "system", "content": sys_msg}, {"role": "user", "content": user}]
        meta: dict[str, Any] | None = None
        kwargs: dict[str, Any] | None = None
        if media is not None:
            meta = {
                "fps": media.video_fps,
                "duration": media.duration,
                "total_num_frames": media.total_frames,
                "frames_indices": [int(i) for i in media.indices],
                "video_backend": media.backend,
                "do_sample_frames": False,
            }
        return EngineRequest(
            request_id=request_id,
            prompt=prompt,
            video=media.frames if media is not None else None,
            video_meta=meta,
            media_uuid=media.uuid if media is not None else None,
            letters=item.letters if item.kind == "mcq" else [],
            mode="letter" if (mode == "letter" and item.kind == "mcq") else "generate",
            max_tokens=max_tokens,
            mm_processor_kwargs=kwargs,
            messages=messages,
            video_key=item.video_id if media is not None else None,
            jpeg_frames=media.jpeg_frames if media is not None else None,
        )
