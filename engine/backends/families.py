"""The model families, registered by name: how each packs a budget's frames and a question.

Every family puts the media first and the question after it, sends no media for
text-only budgets, and builds the same prompt two ways: a raw prompt string for
the in-process engine and OpenAI chat messages for the HTTP backend (whose
server applies the model's chat template to the same effect).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.backends.base import ANSWER_CHOICES, IMAGE_URL_SLOT, VIDEO_URL_SLOT, EngineRequest
from engine.backends.prompts import PromptFamily, question_text, scoring_mode, system_message, video_metadata
from engine.frames.view import MediaView
from engine.items import Generation, Item
from engine.registry import Registry

__all__ = ["FAMILIES", "InternVL", "Llava15", "LlavaNextVideo", "Qwen3VL", "Qwen25VL", "get_family", "register_family"]

FAMILIES: Registry[Callable[[], PromptFamily]] = Registry("model family")
"""Family name -> its factory (usually the class)."""


def register_family(name: str) -> Callable[[Callable[[], PromptFamily]], Callable[[], PromptFamily]]:
    """Register a family factory under `name` (a name registered twice is an error)."""
    return FAMILIES.decorator(name)


def get_family(name: str) -> PromptFamily:
    """A new family by name; an unknown name fails listing the known ones."""
    return FAMILIES.get(name)()


def _chat_messages(sys_msg: str, media_parts: list[dict[str, Any]], text: str,
                   prefix: str | None) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    user: Any = [*media_parts, {"type": "text", "text": text}] if media_parts else text
    messages = ([{"role": "system", "content": sys_msg}] if sys_msg else []) + [{"role": "user", "content": user}]
    if not prefix:
        return messages, None
    messages.append({"role": "assistant", "content": prefix})
    return messages, {"continue_final_message": True, "add_generation_prompt": False}


def _request(request_id: str, item: Item, media: MediaView | None, mode: str, max_tokens: int,
             **fields: Any) -> EngineRequest:
    scored = scoring_mode(item, mode)
    choices = item.extra.get(ANSWER_CHOICES) if scored == "generate" else None
    # the benchmark's own generation settings (an lmms-eval task's) shape its generated answers only
    gen = item.generation if scored == "generate" and item.generation is not None else Generation()
    return EngineRequest(
        request_id=request_id,
        letters=item.letters if item.kind == "mcq" else [],
        mode=scored,  # type: ignore[arg-type]
        max_tokens=gen.max_new_tokens or max_tokens,
        stop=list(gen.stop) or None,
        temperature=gen.temperature,
        video_key=media.source if media is not None else None,
        choices=list(choices) if choices else None,
        **fields,
    )


def _one_media(media: MediaView | None, image: bool,
               video_fields: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The chat part and request fields of one video (or one image) placeholder."""
    if media is None:
        return [], {}
    if image:
        return ([{"type": "image_url", "image_url": {"url": IMAGE_URL_SLOT.format(0)}}],
                {"images": [media.frames[0]], "image_uuids": [media.uuid]})
    return ([{"type": "video_url", "video_url": {"url": VIDEO_URL_SLOT}}],
            {"video": media.frames, "media_uuid": media.uuid, "jpeg_frames": media.jpeg_frames, **video_fields})


def _finish(request_id: str, item: Item, media: MediaView | None, mode: str, max_tokens: int, prompt: str,
            sys_msg: str, parts: list[dict[str, Any]], text: str, prefix: str,
            fields: dict[str, Any]) -> EngineRequest:
    messages, chat_extra = _chat_messages(sys_msg, parts, text, prefix)
    return _request(request_id, item, media, mode, max_tokens, prompt=prompt, messages=messages,
                    chat_extra=chat_extra, **fields)


class _QwenVL:
    """Qwen2.5-VL / Qwen3-VL: ChatML with `<|vision_start|><|video_pad|><|vision_end|>` before the question.

    Frames are sampled by framesweep, so the processor gets the video metadata
    (`do_sample_frames=False`, the real fps and frame indices), from which it
    derives the real sampling fps for its time positions.
    """

    name = "qwen"
    default_system = "You are a helpful assistant."

    def engine_kwargs(self, max_frames: int | None) -> dict[str, Any]:
        return {"limit_mm_per_prompt": {"video": 1, "image": 1}}

    def mm_kwargs(self, media: MediaView) -> dict[str, Any] | None:
        return None

    def build(self, request_id: str, item: Item, media: MediaView | None, mode: str, system: str | None,
              max_tokens: int) -> EngineRequest:
        sys_msg = system_message(item, system, self.default_system)
        text, prefix = question_text(item), item.response_prefix or ""
        image = media is not None and item.media_kind == "image"
        pad = "" if media is None else "<|image_pad|>" if image else "<|video_pad|>"
        vision = f"<|vision_start|>{pad}<|vision_end|>" if pad else ""
        prompt = (f"<|im_start|>system\n{sys_msg}<|im_end|>\n<|im_start|>user\n{vision}{text}<|im_end|>\n"
                  f"<|im_start|>assistant\n{prefix}")
        extra = {"video_meta": video_metadata(media), "mm_processor_kwargs": self.mm_kwargs(media)} if media else {}
        parts, fields = _one_media(media, image, extra)
        return _finish(request_id, item, media, mode, max_tokens, prompt, sys_msg, parts, text, prefix, fields)


@register_family("qwen2_5_vl")
class Qwen25VL(_QwenVL):
    name = "qwen2_5_vl"


@register_family("qwen3_vl")
class Qwen3VL(_QwenVL):
    """Qwen3-VL: as Qwen2.5-VL, with the resolution held fixed across budgets.

    Its video processor caps the pixels of the whole clip (`size.longest_edge`), so
    more frames would silently mean smaller frames; framesweep raises the cap to what
    it sent so every budget sees frames at the resolution the row records.
    """

    name = "qwen3_vl"
    patch = 32  # patch 16 x merge 2: sizes are rounded to this

    def mm_kwargs(self, media: MediaView) -> dict[str, Any] | None:
        n, h, w = media.frames.shape[:3]
        r = self.patch
        pixels = max(n, 2) * (-(-h // r) * r) * (-(-w // r) * r)
        return {"size": {"shortest_edge": 64 * 64, "longest_edge": max(pixels, 786_432)}}


@register_family("llava_next_video")
class LlavaNextVideo:
    """LLaVA-NeXT-Video: `USER: <video>\\n{question} ASSISTANT:`."""

    name = "llava_next_video"
    default_system = ""

    def engine_kwargs(self, max_frames: int | None) -> dict[str, Any]:
        return {"limit_mm_per_prompt": {"video": 1, "image": 1}}

    def build(self, request_id: str, item: Item, media: MediaView | None, mode: str, system: str | None,
              max_tokens: int) -> EngineRequest:
        sys_msg = system_message(item, system, self.default_system)
        text, prefix = question_text(item), item.response_prefix or ""
        image = media is not None and item.media_kind == "image"
        tag = "" if media is None else "<image>\n" if image else "<video>\n"
        prompt = f"{sys_msg + ' ' if sys_msg else ''}USER: {tag}{text} ASSISTANT:{prefix}"
        parts, fields = _one_media(media, image, {"video_meta": None})
        return _finish(request_id, item, media, mode, max_tokens, prompt, sys_msg, parts, text, prefix, fields)


@register_family("llava_1_5")
class Llava15:
    """LLaVA-1.5 (llava-hf layout): `USER: <image>\n{question} ASSISTANT:`; a video is sent as several images.

    The model reads single images only, so a budget's frames go in as that many `<image>`
    tags in frame order. The images per prompt are capped by the model's `max_frames`
    (budgets above it are skipped for the model), else `DEFAULT_MAX_IMAGES`: each image
    costs 576 tokens of LLaVA-1.5's 4,096-token context.
    """

    name = "llava_1_5"
    default_system = ""
    DEFAULT_MAX_IMAGES = 6

    def engine_kwargs(self, max_frames: int | None) -> dict[str, Any]:
        return {"limit_mm_per_prompt": {"image": max_frames or self.DEFAULT_MAX_IMAGES, "video": 0}}

    def build(self, request_id: str, item: Item, media: MediaView | None, mode: str, system: str | None,
              max_tokens: int) -> EngineRequest:
        sys_msg = system_message(item, system, self.default_system)
        text, prefix = question_text(item), item.response_prefix or ""
        image = media is not None and item.media_kind == "image"
        frames = [] if media is None else [media.frames[0]] if image else list(media.frames)
        tags = "".join("<image>\n" for _ in frames)
        prompt = f"{sys_msg + ' ' if sys_msg else ''}USER: {tags}{text} ASSISTANT:{prefix}"
        parts = [{"type": "image_url", "image_url": {"url": IMAGE_URL_SLOT.format(i)}} for i in range(len(frames))]
        fields: dict[str, Any] = {}
        if media is not None:
            h, w = frames[0].shape[:2]
            fields = {"images": frames,
                      "image_uuids": [media.frame_uuid(i, w, h) for i in media.indices[: len(frames)]]}
        return _finish(request_id, item, media, mode, max_tokens, prompt, sys_msg, parts, text, prefix, fields)


class InternVL:
    """InternVL3 / InternVL3.5: one 448x448 tile per frame, `Frame{i}: <image>` lines before the question."""

    name = "internvl"
    default_system = ("你是书生·万象，英文名是InternVL，是由上海人工智能实验室、清华大学及多家合作单位联合开发的"
                      "多模态大语言模型。")

    def engine_kwargs(self, max_frames: int | None) -> dict[str, Any]:
        return {"limit_mm_per_prompt": {"image": max_frames or 64, "video": 0}}

    def build(self, request_id: str, item: Item, media: MediaView | None, mode: str, system: str | None,
              max_tokens: int) -> EngineRequest:
        sys_msg = system_message(item, system, self.default_system)
        text, prefix = question_text(item), item.response_prefix or ""
        image = media is not None and item.media_kind == "image"
        frames = [] if media is None else [media.frames[0]] if image else list(media.frames)
        lines = "<image>\n" if image else "".join(f"Frame{i + 1}: <image>\n" for i in range(len(frames)))
        prompt = (f"<|im_start|>system\n{sys_msg}<|im_end|>\n<|im_start|>user\n{lines if frames else ''}{text}"
                  f"<|im_end|>\n<|im_start|>assistant\n{prefix}")
        parts: list[dict[str, Any]] = []
        for i in range(len(frames)):
            if not image:
                parts.append({"type": "text", "text": f"Frame{i + 1}: "})
            parts.append({"type": "image_url", "image_url": {"url": IMAGE_URL_SLOT.format(i)}})
        fields: dict[str, Any] = {}
        if media is not None:
            h, w = frames[0].shape[:2]
            uuids = [media.frame_uuid(i, w, h) for i in media.indices[: len(frames)]]
            # Video frames: one tile each (no dynamic tiling), as InternVL evaluates video.
            fields = {"images": frames, "image_uuids": uuids,
                      "mm_processor_kwargs": None if image else {"max_dynamic_patch": 1}}
        return _finish(request_id, item, media, mode, max_tokens, prompt, sys_msg, parts, text, prefix, fields)


@register_family("internvl3")
class InternVL3(InternVL):
    name = "internvl3"


@register_family("internvl3_5")
class InternVL35(InternVL):
    name = "internvl3_5"
