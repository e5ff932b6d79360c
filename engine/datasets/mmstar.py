"""MMStar val (Lin-Chen/MMStar): 1,500 image questions, options inside the question text.

Prompt: the question + lmms-eval's post-prompt; answer read with MMStar's `exact_match`
rule (first character, or the one after "(", "option ", "the answer is ").
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

from engine.config.datasets import MMStarSpec
from engine.datasets._image_table import ImageTableAdapter
from engine.datasets._tables import Kind, need
from engine.datasets.errors import RowError
from engine.datasets.registry import register_adapter
from engine.items import Item, option_letters

__all__ = ["MMStar", "extract_letter_mmstar", "split_options"]

VERSION = "mmstar-val.fs1"
POST_PROMPT = "\nAnswer with the option's letter from the given choices directly"
_LABEL = re.compile(r"(?:^|,\s*|\n\s*)([A-F]):\s*")


def split_options(question: str) -> tuple[str, ...]:
    """Option texts of "...Options: A: x, B: y, C: z, D: w" (labels must run A, B, C, ...)."""
    _, sep, tail = question.partition("Options:")
    if not sep:
        return ()
    marks = list(_LABEL.finditer(tail.strip()))
    tail = tail.strip()
    if [m[1] for m in marks] != option_letters(len(marks)) or len(marks) < 2:
        return ()
    ends = [m.start() for m in marks[1:]] + [len(tail)]
    return tuple(tail[m.end():e].strip() for m, e in zip(marks, ends, strict=True))


def extract_letter_mmstar(response: str, letters: str = "ABCDEF") -> str:
    """The letter MMStar's `exact_match` accepts: the first character, or the one after a leading
    "(", "option " or "the answer is " (lowercased; quirks kept: "Based on ..." reads as B)."""
    p = response.lower().strip().replace("\n", " ")
    for prefix in ("", "(", "option ", "the answer is "):
        if p.startswith(prefix) and len(p) > len(prefix) and p[len(prefix)].upper() in letters:
            return p[len(prefix)].upper()
    return ""


@register_adapter("mmstar")
class MMStar(ImageTableAdapter):
    """MMStar adapter."""

    name = "mmstar"
    version = VERSION
    COLUMNS: ClassVar[dict[str, Kind]] = {"index": "int|str", "question": "str", "image": "image", "answer": "str",
                                "category": "str", "l2_category": "str"}
    OPTIONAL_COLUMNS: ClassVar[dict[str, Kind]] = {"meta_info": "any"}

    def __init__(self, spec: MMStarSpec) -> None:
        super().__init__(spec)
        self.spec: MMStarSpec = spec

    def extract(self, response: str, item: Item | None = None) -> str:
        return extract_letter_mmstar(response, "".join(item.letters) if item else "ABCDEF")

    def _row(self, source: Path, i: int, rec: dict[str, Any]) -> Item:
        item_id = str(need(rec, "index", "int|str"))
        question = need(rec, "question").strip()
        answer = need(rec, "answer").strip().upper()
        options = split_options(question) or tuple(option_letters(4))
        if answer not in option_letters(len(options)):
            raise RowError(f"answer: expected an option letter, got {answer!r}")
        media_id, path = self._image(rec, source, i, item_id)
        return self._item(item_id=item_id, video_id=media_id, video_path=path, question=question, options=options,
                          answer=answer, kind="mcq", task_type=need(rec, "l2_category"),
                          category=need(rec, "category"), prompt=question + POST_PROMPT)
