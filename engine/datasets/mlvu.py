"""MLVU dev (JUNJIE99/MLVU): MLVU/json/<task>.json, videos in MLVU/video/<task>/.

Seven multiple-choice tasks (the answer is the option *text*; the letter is its index)
with the official prompt, system message and answer start ("Best Option: ("), checked
by the official rule (the character before the first ")"); two generation tasks
(sub-scene captioning, summary) scored with token-F1 against the reference (the
official evaluation uses an LLM judge). Video basenames repeat across task folders,
so item ids are ``<task>/<video>#<k>`` (k: the video's k-th question in that file).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from engine.config.datasets import MLVUSpec
from engine.datasets._base import BaseAdapter, Occurrences
from engine.datasets._mcq import answer_letter, check_option_count, paren_block
from engine.datasets._paths import check_root, resolve_under
from engine.datasets._tables import collect_rows, json_list, need, optional
from engine.datasets.errors import Problems
from engine.datasets.registry import register_adapter
from engine.items import Item

__all__ = ["GENERATION_TASKS", "MLVU", "extract_letter_mlvu"]

VERSION = "mlvu-dev.fs1"
GENERATION_TASKS = ("8_sub_scene", "9_summary")
MC_SYSTEM = (
    "Carefully watch this video and pay attention to every detail. "
    "Based on your observations, select the best option that accurately addresses the question."
)
OPEN_SYSTEM = (
    "Carefully watch this video and pay attention to every detail. "
    "Based on your observations, answer the given questions."
)
MC_SUFFIX = "\nOnly give the best option."
ANSWER_START = "Best Option: ("


def extract_letter_mlvu(response: str, letters: str = "ABCDEFGH") -> str:
    """MLVU's `check_ans`: the character just before the first ")", else the whole response.

    The response is what follows the answer start "Best Option: (" (e.g. "B) red"); no
    stripping, as in the official check, so " B" is not "B".
    """
    pred = response
    if ")" in pred:
        i = pred.index(")")
        pred = pred[i - 1:i] if i > 0 else ""
    return pred if len(pred) == 1 and pred in letters else ""


@register_adapter("mlvu")
class MLVU(BaseAdapter):
    """MLVU dev adapter."""

    name = "mlvu"
    version = VERSION

    def __init__(self, spec: MLVUSpec) -> None:
        super().__init__(spec)
        self.spec: MLVUSpec = spec

    def extract(self, response: str, item: Item | None = None) -> str:
        if item is not None and item.kind == "open":
            return response.strip()
        return extract_letter_mlvu(response, "".join(item.letters) if item else "ABCDEFGH")

    def _load(self, problems: Problems) -> list[Item]:
        problems.extend(check_root(self.spec.media_root, "media_root"))
        if problems.fatal:
            return []
        items: list[Item] = []
        for task in self.spec.tasks:
            source = Path(self.spec.annotation_dir) / f"{task}.json"
            ids = Occurrences()
            items += collect_rows(source, iter(json_list(source, problems)), partial(self._row, task, source, ids),
                                  problems)
        return items

    def _row(self, task: str, source: Path, ids: Occurrences, i: int, rec: dict[str, Any]) -> Item:
        video = need(rec, "video")
        item_id = ids.next(f"{task}/{video}")
        path = resolve_under(self.spec.media_root, f"{task}/{video}", source=source, row=i, item_id=item_id)
        question = need(rec, "question")
        answer = need(rec, "answer")
        qtype = need(rec, "question_type")
        duration = optional(rec, "duration", "num")
        common: dict[str, Any] = {
            "dataset": self.name, "dataset_version": self.version, "item_id": item_id,
            "video_id": f"{task}/{video}", "video_path": path, "question": question, "task_type": qtype,
            "category": task,
        }
        if task in GENERATION_TASKS:
            points = list(optional(rec, "scoring_points", "list[str]", []))
            refs = (answer, *points) if self.spec.subplot_references == "answer_and_scoring_points" else (answer,)
            return Item(**common, answer=answer, references=refs, kind="open", prompt=question,
                        system_prompt=OPEN_SYSTEM, extra={"duration_s": duration, "scoring_points": points})
        candidates = list(need(rec, "candidates", "list[str]"))
        check_option_count(candidates, "candidates")
        return Item(**common, options=tuple(candidates), answer=answer_letter(answer, candidates), kind="mcq",
                    prompt=paren_block(question, candidates) + MC_SUFFIX, system_prompt=MC_SYSTEM,
                    response_prefix=ANSWER_START, extra={"duration_s": duration, "answer_text": answer})
