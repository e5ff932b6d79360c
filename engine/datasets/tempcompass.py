"""TempCompass (lmms-lab/TempCompass): multi-choice, yes_no and caption_matching configs.

Each config is a folder of parquet shards with `video_id, question, answer, dim`; the
options are lines of the question ("A. ..." or "Caption A: ..."). Prompts add the
official post-prompts; answers are read with the official hand-crafted rules (the
official evaluation then asks an LLM about responses those rules cannot match: here
they are empty, i.e. wrong). The captioning config needs an LLM judge and is left out.
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import Any

from engine.config.datasets import TempCompassSpec
from engine.datasets._base import BaseAdapter, Occurrences
from engine.datasets._mcq import yes_no_answer
from engine.datasets._paths import check_root, find_media
from engine.datasets._tables import Kind, collect_rows, need, read_parquet
from engine.datasets.errors import Problems, RowError
from engine.datasets.registry import register_adapter
from engine.items import Item, option_letters

__all__ = ["POST_PROMPTS", "TempCompass", "extract_caption_matching", "extract_multi_choice", "extract_yes_no"]

VERSION = "tempcompass.fs1"
POST_PROMPTS = {
    "multi-choice": "\nPlease directly give the best option:",
    "yes_no": "\nPlease answer yes or no:",
    "caption_matching": "\nPlease directly give the best option:",
}
COLUMNS: dict[str, Kind] = {"video_id": "str", "question": "str", "answer": "str", "dim": "str"}
_MC_LINE = re.compile(r"^([A-Z])\.\s*(.*)$")
_CM_LINE = re.compile(r"^((?:Caption|Sentence|Option|Video)\s+([A-Z0-9]+)):\s*(.*)$")


def extract_multi_choice(response: str, item: Item) -> str:
    """lmms-eval's TempCompass multi-choice rules: the full answer, a bare letter, or "X." / "X)" first."""
    letters = item.letters
    if response == item.extra.get("answer_text"):
        return item.answer or ""
    if response in letters:
        return response
    for letter in letters:
        if response.startswith((f"{letter}.", f"{letter})")):
            return letter
    return ""


def extract_yes_no(response: str, item: Item | None = None) -> str:
    """TempCompass `extract_pred`: "yes" / "no" when the lowercased response starts with it."""
    low = response.lower()
    return "yes" if low.startswith("yes") else "no" if low.startswith("no") else ""


def extract_caption_matching(response: str, item: Item) -> str:
    """TempCompass `eval_rule`: the response equals an option line, its sentence, or its label."""
    out = response.lower()
    pred = ""
    labels: list[str] = item.extra["labels"]
    for letter, label, sent in zip(item.letters, labels, item.options, strict=True):
        full, sent_l, label_l = f"{label}: {sent}".lower(), sent.lower(), label.lower()
        short = label_l.split(" ", 1)[-1]
        if out in (full, sent_l) or (") " in out and sent_l == out.split(") ", 1)[1]):
            pred = letter
        if out in (label_l, short) or out.replace(".", "") in (label_l, short):
            pred = letter
    return pred


def _options(config: str, question: str, answer: str) -> tuple[str, tuple[str, ...], list[str], str]:
    """(question line, option texts, option labels, answer letter) from a question with option lines."""
    head, *lines = [ln.strip() for ln in question.split("\n") if ln.strip()]
    pattern = _MC_LINE if config == "multi-choice" else _CM_LINE
    matches = [pattern.match(ln) for ln in lines]
    if len(lines) < 2 or not all(matches):
        raise RowError(f"question: expected option lines after the first line ({pattern.pattern}), got {lines!r}")
    if config == "multi-choice":
        labels = [m[1] for m in matches if m]
        texts = tuple(m[2] for m in matches if m)
        if labels != option_letters(len(labels)):
            raise RowError(f"question: options labelled {labels}, expected A, B, C, ...")
        key = answer.split(".", 1)[0].strip()
    else:
        labels = [m[1] for m in matches if m]
        texts = tuple(m[3] for m in matches if m)
        key = answer.split(":", 1)[0].strip()
    if key not in labels:
        raise RowError(f"answer {answer[:60]!r} names none of the options {labels}")
    return head, texts, labels, option_letters(len(labels))[labels.index(key)]


@register_adapter("tempcompass")
class TempCompass(BaseAdapter):
    """TempCompass adapter."""

    name = "tempcompass"
    version = VERSION

    def __init__(self, spec: TempCompassSpec) -> None:
        super().__init__(spec)
        self.spec: TempCompassSpec = spec

    def extract(self, response: str, item: Item | None = None) -> str:
        config = item.task_type if item is not None else "yes_no"
        if config == "yes_no" or item is None:
            return extract_yes_no(response)
        if config == "multi-choice":
            return extract_multi_choice(response, item)
        return extract_caption_matching(response, item)

    def _load(self, problems: Problems) -> list[Item]:
        problems.extend(check_root(self.spec.media_root, "media_root"))
        if problems.fatal:
            return []
        items: list[Item] = []
        for config in self.spec.configs:
            ids = Occurrences()
            for source, df in read_parquet(Path(self.spec.annotation_root) / config, COLUMNS, problems):
                items += collect_rows(source, enumerate(df.iter_rows(named=True)),
                                      partial(self._row, config, source, ids), problems)
        return items

    def _row(self, config: str, source: Path, ids: Occurrences, i: int, rec: dict[str, Any]) -> Item:
        vid, dim = need(rec, "video_id"), need(rec, "dim")
        item_id = ids.next(f"{config}/{vid}/{dim}")
        path = find_media(self.spec.media_root, vid, [".mp4"], source=source, row=i, item_id=item_id)
        question, answer = need(rec, "question"), need(rec, "answer")
        common: dict[str, Any] = {
            "dataset": self.name, "dataset_version": self.version, "item_id": item_id, "video_id": vid,
            "video_path": path, "task_type": config, "category": dim, "prompt": question + POST_PROMPTS[config],
        }
        if config == "yes_no":
            return Item(**common, question=question, answer=yes_no_answer(answer), kind="yesno")
        head, texts, labels, letter = _options(config, question, answer)
        return Item(**common, question=head, options=texts, answer=letter, kind="mcq",
                    extra={"answer_text": answer, "labels": labels})
