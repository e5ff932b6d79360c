"""MME (lmms-lab/MME): two yes/no questions per image, 14 categories.

The official prompt is the question itself (it ends "Please answer yes or no.").
Answers are read with MME's `parse_pred_ans`; per category, acc and acc+ (both
questions of an image right), x100 (`engine.datasets.scoring_rules.mme_scores`).
Item ids are ``<category>/<image>#<k>``; `group_id` is the image, ``extra["group_size"]`` 2.

An image with other than two questions (a malformed or cut file) is an error naming each of
its rows (``strict = false`` skips them, counted in `problems`): acc+ over a one-question
image would just repeat acc. `limit` keeps the first N questions and the other question of an
image they start (never half an image).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, ClassVar

from engine.config.datasets import MMESpec
from engine.datasets._base import Occurrences, whole_groups
from engine.datasets._image_table import ImageTableAdapter
from engine.datasets._mcq import yes_no_answer
from engine.datasets._tables import Kind, need
from engine.datasets.errors import Problems
from engine.datasets.registry import register_adapter
from engine.items import Item

__all__ = ["COGNITION", "MME", "PERCEPTION", "QUESTIONS_PER_IMAGE", "extract_yes_no_mme"]

VERSION = "mme.fs1"
PERCEPTION = ("existence", "count", "position", "color", "posters", "celebrity", "scene", "landmark", "artwork",
              "OCR")
COGNITION = ("commonsense_reasoning", "numerical_calculation", "text_translation", "code_reasoning")
QUESTIONS_PER_IMAGE = 2


def extract_yes_no_mme(response: str, item: Item | None = None) -> str:
    """MME's `parse_pred_ans` on the lowercased response: exact yes/no, else "yes"/"no" in its first
    4 characters; "" (MME's "other", always wrong) otherwise."""
    p = response.lower()
    if p in ("yes", "no"):
        return p
    head = p[:4]
    return "yes" if "yes" in head else "no" if "no" in head else ""


@register_adapter("mme")
class MME(ImageTableAdapter):
    """MME adapter."""

    name = "mme"
    version = VERSION
    COLUMNS: ClassVar[dict[str, Kind]] = {"question_id": "str", "image": "image", "question": "str", "answer": "str",
                                "category": "str"}

    def __init__(self, spec: MMESpec) -> None:
        super().__init__(spec)
        self.spec: MMESpec = spec
        self._ids = Occurrences()
        self._where: dict[str, tuple[Path, int]] = {}

    def extract(self, response: str, item: Item | None = None) -> str:
        return extract_yes_no_mme(response)

    def _reset(self) -> None:
        # One counter for all shards: the two questions of an image may sit in different shards.
        self._ids = Occurrences()
        self._where = {}

    def _load(self, problems: Problems) -> list[Item]:
        items = super()._load(problems)
        images: dict[str, list[Item]] = defaultdict(list)
        for it in items:
            images[it.group_id or ""].append(it)
        for image, members in images.items():
            if len(members) != QUESTIONS_PER_IMAGE:
                for k, it in enumerate(members, 1):
                    source, row = self._where[it.item_id]
                    problems.add(source, row, f"image {image!r} has {len(members)} question(s), MME asks "
                                 f"{QUESTIONS_PER_IMAGE} per image (this is question {k})", item_id=it.item_id)
        return [it for it in items if len(images[it.group_id or ""]) == QUESTIONS_PER_IMAGE]

    def _limit(self, items: list[Item], limit: int) -> list[Item]:
        return whole_groups(items, limit)

    def _row(self, source: Path, i: int, rec: dict[str, Any]) -> Item:
        category, qid = need(rec, "category"), need(rec, "question_id")
        image = qid if qid.startswith(f"{category}/") else f"{category}/{qid}"
        item_id = self._ids.next(image)
        question = need(rec, "question")
        answer = yes_no_answer(need(rec, "answer"))
        media_id, path = self._image(rec, source, i, item_id)
        self._where[item_id] = (source, i)
        return self._item(item_id=item_id, video_id=media_id, video_path=path, question=question, answer=answer,
                          kind="yesno", task_type="perception" if category in PERCEPTION else "cognition",
                          category=category, prompt=question, group_id=image,
                          extra={"group_size": QUESTIONS_PER_IMAGE})
