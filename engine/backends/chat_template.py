"""A model family's prompt beside the checkpoint's own chat template: checked once per engine start, or replaced.

Each family writes the in-process engine's raw prompt itself (`engine.backends.families`); a checkpoint ships a chat
template of its own (`chat_template.jinja`, or its tokenizer's). A checkpoint fine-tuned with another template than
its family's would be asked in a format it never saw, so before a vLLM engine starts (`engine.backends.kinds`)
`check_prompt` renders three probes both ways: the family's system message where it has one, one user turn with two
frames (as the family packs them: one video, or images) and a short question, then the generation prompt; the same
without media; and the same with a system message and an answer prefix the reply continues (an adapter's official
prompt). The checkpoint's rendering is the chat template applied by its tokenizer (`transformers`, from
the folder, offline) to the very messages the family sends an OpenAI-compatible server, media parts written as
Hugging Face processors read them (`{"type": "video"}`, `{"type": "image"}`), less the family's default system
message: a family writes its default where neither the spec nor the benchmark sets one, and the checkpoint's
template then writes its own default (or none), so a checkpoint trained with another default system line is found.

A mismatch is a `ChatTemplateMismatch` naming the family, the checkpoint and both strings. A model's
`prompt = "checkpoint_template"` skips the check and asks every request in the checkpoint's own template instead
(`CheckpointTemplate.apply`, used by `engine.sweep.requests`). A checkpoint without a chat template is only
warned about (there is nothing to compare); a checkpoint that is not on this machine (a hub id vLLM downloads) is
not checked.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np

from engine.backends.base import EngineRequest
from engine.backends.families import get_family
from engine.frames.view import MediaView
from engine.items import Item
from engine.runtime.checkpoint import model_folder

__all__ = ["PROBE", "ChatTemplateError", "ChatTemplateMismatch", "CheckpointTemplate", "check_family_prompt",
           "check_prompt", "checkpoint_template", "default_system", "first_difference", "hf_messages", "probe_requests",
           "without_default_system"]

log = logging.getLogger(__name__)

PROBE = Item(dataset="probe", dataset_version="0", item_id="probe", video_id="probe", video_path=None,
             question="Which colour is the square?", options=("red", "blue"), answer="A")
"""The probe question (the answer fingerprint's `template` digest asks the same one)."""
_PROBE_PREFIXED = dataclasses.replace(PROBE, item_id="probe-prefixed", system_prompt="Answer with a letter.",
                                      response_prefix="The answer is (")

_PROBE_MEDIA = MediaView(np.zeros((2, 28, 28, 3), np.uint8), np.arange(2), 1.0, 2, "probe:probe:f2", "pyav")
_SHOWN = 24  # characters of context either side of the first difference


class ChatTemplateError(ValueError):
    """A model's prompt and its checkpoint's chat template cannot be used together; the message names both."""


class ChatTemplateMismatch(ChatTemplateError):
    """The family's prompt is not what the checkpoint's own chat template renders for the same messages."""


def hf_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI chat messages (a family's `EngineRequest.messages`) as a chat template reads them: each media part
    (`video_url`, `image_url`) becomes a `{"type": "video"}` or `{"type": "image"}` placeholder; text is kept."""
    kinds = {"video_url": "video", "image_url": "image"}

    def part(p: dict[str, Any]) -> dict[str, Any]:
        kind = kinds.get(p.get("type", ""))
        return {"type": kind} if kind else dict(p)

    return [{**m, "content": m["content"] if isinstance(m["content"], str) else [part(p) for p in m["content"]]}
            for m in messages]


class CheckpointTemplate:
    """A checkpoint's chat template and the tokenizer that renders it (special tokens, as the template names them)."""

    def __init__(self, folder: Path, tokenizer: Any, template: str) -> None:
        self.folder = folder
        self.tokenizer = tokenizer
        self.template = template

    @classmethod
    def load(cls, folder: Path) -> CheckpointTemplate | None:
        """The chat template of a local checkpoint folder (its tokenizer's, which reads `chat_template.jinja`, else
        a processor's `chat_template.json`), None when it ships none or its tokenizer does not load without remote
        code (a warning says why). Nothing is downloaded."""
        from transformers import AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        except Exception as err:  # noqa: BLE001 - a corrupt file or remote code: any type, nothing to render with
            log.warning("the tokenizer of checkpoint %s does not load here (%s: %s): its chat template is not read",
                        folder, type(err).__name__, err)
            return None
        template = tokenizer.chat_template or _processor_template(folder)
        if isinstance(template, dict):  # named templates: the default one
            template = template.get("default")
        return cls(folder, tokenizer, template) if isinstance(template, str) and template else None

    def render(self, messages: list[dict[str, Any]], chat_extra: dict[str, Any] | None = None) -> str:
        """The prompt the template writes for OpenAI chat `messages` (`chat_extra`: a request's
        `continue_final_message` / `add_generation_prompt`; by default the generation prompt is added)."""
        extra = {"add_generation_prompt": True, "continue_final_message": False, **(chat_extra or {})}
        try:
            return str(self.tokenizer.apply_chat_template(
                hf_messages(messages), chat_template=self.template, tokenize=False,
                add_generation_prompt=bool(extra["add_generation_prompt"]),
                continue_final_message=bool(extra["continue_final_message"])))
        except Exception as err:  # a template's own errors (raise_exception, jinja's) are of any type
            raise ChatTemplateError(f"the chat template of checkpoint {self.folder} cannot render the messages "
                                    f"{messages!r} ({type(err).__name__}: {err})") from err

    def apply(self, request: EngineRequest, family_default: str = "") -> EngineRequest:
        """`request` with its prompt rendered by this template from its chat messages, less a leading system
        message that is the family's default `family_default` (the template writes its own); the media it carries
        unchanged (the template writes one placeholder per media part, as the family's prompt does)."""
        if request.messages is None:
            raise ChatTemplateError(f"request {request.request_id} carries no chat messages to render with the "
                                    f"chat template of {self.folder}")
        messages = without_default_system(request.messages, family_default)
        return dataclasses.replace(request, prompt=self.render(messages, request.chat_extra))


def _processor_template(folder: Path) -> str | None:
    path = folder / "chat_template.json"
    try:
        template = json.loads(path.read_text(encoding="utf-8")).get("chat_template")
    except (OSError, ValueError, AttributeError):
        return None
    return template if isinstance(template, str) else None


_PROBES = (("two frames", PROBE, _PROBE_MEDIA), ("text only", PROBE, None),
           ("system message and answer prefix", _PROBE_PREFIXED, _PROBE_MEDIA))


def probe_requests(family: str) -> dict[str, EngineRequest]:
    """What `family` builds for the probe question, by probe: ``two frames``, ``text only`` and ``system message
    and answer prefix`` (two frames)."""
    fam = get_family(family)
    return {what: fam.build("probe", item, media, "generate", None, 16) for what, item, media in _PROBES}


def default_system(family: str) -> str:
    """The system message `family` writes when neither the spec nor the benchmark sets one ("" for none)."""
    return str(getattr(get_family(family), "default_system", "") or "")


def without_default_system(messages: list[dict[str, Any]], default: str) -> list[dict[str, Any]]:
    """`messages` less a leading system message that is the family's `default` (the checkpoint's template then
    writes its own default, as for a user who set none); other messages unchanged."""
    first = messages[0] if messages else {}
    return messages[1:] if default and first.get("role") == "system" and first.get("content") == default \
        else messages


def first_difference(a: str, b: str) -> str:
    """Where two strings first differ: the character offset and a few characters of each around it."""
    i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    lo = max(0, i - _SHOWN)
    return (f"at character {i}: ...{a[lo:i + _SHOWN]!r}... against ...{b[lo:i + _SHOWN]!r}... (lengths {len(a)} "
            f"and {len(b)})")


def check_family_prompt(folder: Path, family: str, who: str = "") -> bool:
    """Check that `family`'s prompts are what the checkpoint in `folder` renders for the same messages.

    Returns False (a warning logged) when the checkpoint ships no chat template, True when every probe matches.

    Raises:
        ChatTemplateMismatch: a probe's prompts differ; the message names the family, the checkpoint, the probe
            and both strings.
    """
    template = _template(folder)
    if template is None:
        log.warning("%s%s ships no chat template: the prompts of family %s cannot be checked against it",
                    who, folder, family)
        return False
    requests, default = probe_requests(family), default_system(family)
    for what, item, _ in _PROBES:
        request = requests[what]
        try:
            theirs = template.apply(request, default if item.system_prompt is None else "").prompt
        except ChatTemplateError as err:
            raise ChatTemplateMismatch(f"{who}family {family} writes a prompt for messages that {err}; family "
                                       f"{request.prompt!r}") from err
        if theirs != request.prompt:
            raise ChatTemplateMismatch(
                f"{who}family {family} writes a prompt that the chat template of checkpoint {folder} does not "
                f"(probe with {what}, {first_difference(request.prompt, theirs)}): family {request.prompt!r}, "
                f"checkpoint {theirs!r}; set the model's family to the one the checkpoint was trained with, or "
                "prompt = \"checkpoint_template\" to ask every request in the checkpoint's own template")
    return True


def check_prompt(path: Path | str, family: str, prompt: str, who: str = "") -> None:
    """The check a model's engine start runs, by its `prompt` choice: ``family`` compares the family's prompts
    with the checkpoint's chat template (`check_family_prompt`); ``checkpoint_template`` needs the checkpoint to
    have one. A checkpoint not on this machine (a hub id vLLM downloads) is not checked.

    Raises:
        ChatTemplateError: see `check_family_prompt`; or ``checkpoint_template`` asked of a checkpoint without
            a template, or of one that cannot render the family's probe messages.
    """
    folder = model_folder(str(path))
    if folder is None:
        log.info("%s%s is not on this machine: its chat template is not checked", who, path)
        return
    if prompt == "family":
        check_family_prompt(folder, family, who)
        return
    template = _template(folder)
    if template is None:
        raise ChatTemplateError(f"{who}prompt = \"checkpoint_template\" but checkpoint {folder} has no chat "
                                "template that loads here (no chat_template.jinja, no chat_template in its "
                                "tokenizer_config.json, or a tokenizer that does not load); use prompt = \"family\"")
    for request in probe_requests(family).values():  # a template that cannot write the family's messages: now
        try:
            template.apply(request, default_system(family))
        except ChatTemplateError as err:
            raise ChatTemplateError(f"{who}prompt = \"checkpoint_template\" with family {family}: {err}") from err


_TEMPLATE_FILES = ("chat_template.jinja", "chat_template.json", "tokenizer_config.json")


def _template(folder: Path) -> CheckpointTemplate | None:
    """A folder's template, loaded again only when one of its template files changed (a tokenizer takes seconds
    to load)."""
    stamp = tuple((p.stat().st_mtime_ns, p.stat().st_size) if p.is_file() else None
                  for p in (folder / name for name in _TEMPLATE_FILES))
    return _loaded(folder.resolve(), stamp)


@functools.lru_cache(maxsize=8)
def _loaded(folder: Path, stamp: tuple[Any, ...]) -> CheckpointTemplate | None:
    return CheckpointTemplate.load(folder)


def checkpoint_template(path: Path | str) -> CheckpointTemplate:
    """The chat template of the checkpoint at `path` (a folder, a `tiny:` id or a cached hub id), loaded once.

    Raises:
        ChatTemplateError: the checkpoint is not on this machine or ships no chat template.
    """
    folder = model_folder(str(path))
    template = _template(folder) if folder is not None else None
    if template is None:
        raise ChatTemplateError(f"prompt = \"checkpoint_template\" needs the chat template of checkpoint {path}, "
                                "and there is none on this machine; use prompt = \"family\"")
    return template
