"""POPE (lmms-lab/POPE): yes/no object-hallucination questions over COCO images.

Prompt: the question + lmms-eval's post-prompt. Answers are read with the POPE
repository's rule (first sentence; "no" or "not" among its words means no, anything
else yes); precision, recall and F1 take "yes" as positive
(`engine.datasets.scoring_rules.pope_metrics`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from engine.config.datasets import POPESpec
from engine.datasets._image_table import ImageTableAdapter
from engine.datasets._mcq import yes_no_answer
from engine.datasets._tables import Kind, need
from engine.datasets.errors import RowError
from engine.datasets.registry import register_adapter
from engine.items import Item

__all__ = ["POPE", "extract_yes_no_pope"]

VERSION = "pope.fs1"
POST_PROMPT = "\nAnswer the question using a single word or phrase."


def extract_yes_no_pope(response: str, item: Item | None = None) -> str:
    """POPE's `evaluate.py`: keep the first sentence, drop commas; "No", "no" or "not" -> no, else yes."""
    text = response.split(".")[0] if "." in response else response
    words = text.replace(",", "").split(" ")
    return "no" if ("No" in words or "not" in words or "no" in words) else "yes"


@register_adapter("pope")
class POPE(ImageTableAdapter):
    """POPE adapter."""

    name = "pope"
    version = VERSION
    COLUMNS: ClassVar[dict[str, Kind]] = {
        "question_id": "int|str", "question": "str", "answer": "str", "image": "image", "category": "str",
    }

    def __init__(self, spec: POPESpec) -> None:
        super().__init__(spec)
        self.spec: POPESpec = spec

    def extract(self, response: str, item: Item | None = None) -> str:
        return extract_yes_no_pope(response)

    def _row(self, source: Path, i: int, rec: dict[str, Any]) -> Item | None:
        category = need(rec, "category")
        if category not in ("adversarial", "popular", "random"):
            raise RowError(f"category: expected adversarial, popular or random, got {category!r}")
        if category not in self.spec.categories:
            return None
        item_id = f"{category}/{need(rec, 'question_id', 'int|str')}"
        question = need(rec, "question")
        answer = yes_no_answer(need(rec, "answer"))
        media_id, path = self._image(rec, source, i, item_id)
        return self._item(item_id=item_id, video_id=media_id, video_path=path, question=question, answer=answer,
                          kind="yesno", task_type="pope", category=category, prompt=question + POST_PROMPT)
