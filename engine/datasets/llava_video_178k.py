"""LLaVA-Video-178K-style fine-tuning data, read as instructions only (for the hybrid-frame predictor).

Each file is a JSON list of ``{"id", "video", "conversations": [{"from": "human" | "gpt",
"value": ...}, ...]}`` (other keys, such as ``data_source``, are kept in ``extra``). The
instruction is the first human turn (or every human turn, joined), with the ``<image>``
placeholders the training format puts before it stripped. There are no answers and
nothing is scored: items are ``open`` with answer None, and `score` leaves `correct`
null and the score NaN. `framesweep predict` asks the predictor model for each
instruction's frame count and writes the manifest the fine-tuning run reads.

Item ids are ``<file stem>/<id>`` (the same video id appears in several files, e.g. its
caption and its QA); a repeat within one file gets ``#1``, ``#2``, ... The video id is the
``video`` path as written, resolved under the media root (escapes rejected).
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import Any

from engine.config.datasets import LlavaVideo178KSpec
from engine.datasets._base import BaseAdapter, ItemScore
from engine.datasets._paths import check_root, resolve_under
from engine.datasets._tables import collect_rows, json_list, need
from engine.datasets.errors import Problems, RowError
from engine.datasets.registry import register_adapter
from engine.items import Item

__all__ = ["LlavaVideo178K", "instruction_of"]

VERSION = "llava_video_178k.fs1"
HUMAN = ("human", "user")
_PLACEHOLDER = re.compile(r"[ \t]*<(?:image|video)>[ \t]*\n?")


def instruction_of(conversations: Any, mode: str = "first") -> str:
    """The instruction of one sample: its first human turn (or all of them, joined), placeholders stripped."""
    if not isinstance(conversations, list) or not conversations:
        raise RowError("conversations: expected a non-empty list of {from, value} turns")
    turns = []
    for k, turn in enumerate(conversations):
        if not isinstance(turn, dict) or not isinstance(turn.get("from"), str) or not isinstance(
                turn.get("value"), str):
            raise RowError(f"conversations[{k}]: expected {{from: str, value: str}}")
        if turn["from"].lower() in HUMAN:
            turns.append(_PLACEHOLDER.sub("", turn["value"]).strip())
    turns = [t for t in turns if t]
    if not turns:
        raise RowError("conversations: no human turn with text")
    return turns[0] if mode == "first" else "\n".join(turns)


@register_adapter("llava_video_178k")
class LlavaVideo178K(BaseAdapter):
    """Instruction-only adapter for LLaVA-Video-178K-style JSON (no answers, no scoring)."""

    name = "llava_video_178k"
    version = VERSION
    has_answers = False
    """The sweep cannot score these items: `framesweep predict` only asks for frame counts."""

    def __init__(self, spec: LlavaVideo178KSpec) -> None:
        super().__init__(spec)
        self.spec: LlavaVideo178KSpec = spec

    def score(self, item: Item, response: str) -> ItemScore:
        return ItemScore(response.strip() or None, None, float("nan"))

    def _files(self) -> list[Path]:
        root = Path(self.spec.annotations)
        return sorted(root.rglob("*.json")) if root.is_dir() else [root]

    def _load(self, problems: Problems) -> list[Item]:
        problems.extend(check_root(self.spec.media_root, "media_root"))
        files = self._files()
        if not files:
            problems.add(self.spec.annotations, None, "no .json files under this folder", fatal=True)
        if problems.fatal:
            return []
        items: list[Item] = []
        for source in files:
            seen: dict[str, int] = {}
            items += collect_rows(source, json_list(source, problems), partial(self._row, source, seen), problems)
        return items

    def _row(self, source: Path, seen: dict[str, int], i: int, rec: dict[str, Any]) -> Item:
        sample = need(rec, "id", "int|str")
        video = need(rec, "video")
        instruction = instruction_of(rec.get("conversations"), self.spec.instruction)
        key = f"{source.stem}/{sample}"
        n = seen.get(key, 0)
        seen[key] = n + 1
        item_id = key if n == 0 else f"{key}#{n}"
        path = resolve_under(self.spec.media_root, video, source=source, row=i, item_id=item_id)
        extra = {k: v for k, v in rec.items() if k not in ("id", "video", "conversations")
                 and isinstance(v, str | int | float | bool)}
        return Item(dataset=self.name, dataset_version=self.version, item_id=item_id, video_id=video,
                    video_path=path, question=instruction, answer=None, kind="open", prompt=instruction,
                    task_type="instruction", category=rec.get("data_source") if isinstance(
                        rec.get("data_source"), str) else None,
                    extra={"sample_id": str(sample), "file": source.name, **extra})
