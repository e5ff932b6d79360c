"""What every model family shares: the family protocol and the prompt helpers (the registry is in families.py).

`question_text` is the one builder of a question's text: the adapter's official prompt when it has one,
else the question and its lettered options (`option_lines`); the families (raw prompt and the HTTP
backend's chat messages alike) and the predictor's question (`engine.adaptive.predictor`) use it.

The video always comes first and the question after it, so every question over
the same video and budget shares the prompt prefix (vLLM prefix caching and the
encoder cache can hit). Text-only budgets send no media at all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, Protocol

from engine.backends.base import EngineRequest
from engine.frames.view import MediaView
from engine.items import Item, option_letters

__all__ = ["PromptFamily", "option_lines", "prompt_hash", "question_text", "scoring_mode", "system_message",
           "video_metadata"]


class PromptFamily(Protocol):
    name: str

    def build(self, request_id: str, item: Item, media: MediaView | None, mode: str, system: str | None,
              max_tokens: int) -> EngineRequest: ...

    def engine_kwargs(self, max_frames: int | None) -> dict[str, Any]:
        """vLLM engine settings this family needs (e.g. media items per prompt)."""
        ...


def prompt_hash(prompt: str, uuid: str | None) -> str:
    """A short hash of what was sent (prompt text and media identity)."""
    return hashlib.sha256(f"{prompt}\x00{uuid or ''}".encode()).hexdigest()[:16]


def option_lines(options: Sequence[str]) -> str:
    """Options one per line, lettered: ``A. first\nB. second``."""
    return "\n".join(f"{lt}. {o}" for lt, o in zip(option_letters(len(options)), options))


def question_text(item: Item) -> str:
    """The adapter's official prompt, or the question and its lettered options."""
    if item.prompt:
        return item.prompt
    opts = option_lines(item.options)
    return f"{item.question}\n{opts}" if opts else item.question


def system_message(item: Item, system: str | None, default: str) -> str:
    """The spec's system prompt, else the benchmark's official one, else the family default."""
    if system is not None:
        return system
    return item.system_prompt if item.system_prompt is not None else default


def video_metadata(media: MediaView) -> dict[str, Any]:
    """What Qwen-style processors need about frames framesweep sampled itself."""
    return {
        "fps": float(media.video_fps),
        "duration": float(media.duration),
        "total_num_frames": int(media.total_frames),
        "frames_indices": [int(i) for i in media.indices],
        "video_backend": media.backend,
        "do_sample_frames": False,
    }


def scoring_mode(item: Item, mode: str) -> str:
    return "letter" if (mode == "letter" and item.kind == "mcq") else "generate"

