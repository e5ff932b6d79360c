"""AVSD (DSTC7 track 3): answer the next question of a dialog about a Charades video.

Input: ``{"dialogs": [{"image_id", "summary", "caption", "dialog": [{"question",
"answer"}, ...]}]}``. Each item asks the last question (or, with ``turns = "all"``,
every question) given the turns before it; the reference is that turn's answer,
or, where the file says "__UNDISCLOSED__" (the test set), the answers of the same
dialog in the separate references file. Scored with token-F1 (SQuAD v1.1, max over
references). AVSD has no official prompt for video LLMs: the one here is framesweep's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine.config.datasets import AVSDSpec
from engine.datasets._base import BaseAdapter
from engine.datasets._paths import check_root, resolve_under
from engine.datasets._tables import collect_rows, need, optional, read_json
from engine.datasets.errors import Problems, RowError
from engine.datasets.registry import register_adapter
from engine.items import Item

__all__ = ["AVSD", "UNDISCLOSED", "build_prompt"]

VERSION = "avsd-dstc7.fs1"
UNDISCLOSED = "__UNDISCLOSED__"
INSTRUCTION = "Answer the last question about the video in one sentence, given the dialog so far.\n"


def build_prompt(history: Sequence[tuple[str, str]], question: str, caption: str | None = None) -> str:
    """framesweep's AVSD prompt: instruction, optional caption, the turns so far, then the question."""
    lines = [INSTRUCTION.rstrip("\n")]
    if caption:
        lines.append(f"Caption: {caption}")
    for q, a in history:
        lines += [f"Q: {q}", f"A: {a}"]
    lines += [f"Q: {question}", "A:"]
    return "\n".join(lines)


def _dialogs(data: Any, source: Path, problems: Problems) -> list[tuple[int, Any]]:
    if data is None:
        return []
    if not isinstance(data, dict) or not isinstance(data.get("dialogs"), list):
        problems.add(source, None, 'expected an object with a "dialogs" list', fatal=True)
        return []
    return list(enumerate(data["dialogs"]))


def _turns(rec: dict[str, Any]) -> list[tuple[str, Any]]:
    turns = need(rec, "dialog", "any")
    if not isinstance(turns, list) or not turns:
        raise RowError("field 'dialog': expected a non-empty list of {question, answer}")
    out = []
    for t, turn in enumerate(turns):
        if not isinstance(turn, dict):
            raise RowError(f"dialog[{t}]: expected an object, got {type(turn).__name__}")
        try:
            out.append((need(turn, "question"), need(turn, "answer", "any")))
        except RowError as err:
            raise RowError(f"dialog[{t}]: {err.reason}") from None
    return out


@register_adapter("avsd")
class AVSD(BaseAdapter):
    """AVSD adapter."""

    name = "avsd"
    version = VERSION

    def __init__(self, spec: AVSDSpec) -> None:
        super().__init__(spec)
        self.spec: AVSDSpec = spec
        self._refs: dict[str, list[list[str]]] = {}

    def _load(self, problems: Problems) -> list[Item]:
        problems.extend(check_root(self.spec.media_root, "media_root"))
        self._refs = self._load_references(problems) if self.spec.references is not None else {}
        source = Path(self.spec.annotations)
        rows = _dialogs(read_json(source, problems), source, problems)
        if problems.fatal:
            return []
        return collect_rows(source, iter(rows), lambda i, rec: self._row(source, i, rec), problems)

    def _load_references(self, problems: Problems) -> dict[str, list[list[str]]]:
        """image_id -> per turn, the reference answers (a string or a list of strings in the file)."""
        source = Path(self.spec.references or "")
        out: dict[str, list[list[str]]] = {}

        def parse(i: int, rec: dict[str, Any]) -> None:
            answers = []
            for t, (_, a) in enumerate(_turns(rec)):
                if isinstance(a, str):
                    a = [a]
                if not isinstance(a, list) or not all(isinstance(x, str) for x in a):
                    raise RowError(f"dialog[{t}].answer: expected a string or a list of strings")
                answers.append(a)
            out[need(rec, "image_id")] = answers

        collect_rows(source, iter(_dialogs(read_json(source, problems), source, problems)), parse, problems)
        return out

    def _row(self, source: Path, i: int, rec: dict[str, Any]) -> list[Item]:
        vid = need(rec, "image_id")
        turns = _turns(rec)
        caption = optional(rec, "caption") if self.spec.use_caption else None
        path = resolve_under(self.spec.media_root, f"{vid}{self.spec.video_ext}", source=source, row=i, item_id=vid)
        chosen = range(len(turns)) if self.spec.turns == "all" else [len(turns) - 1]
        items = []
        for t in chosen:
            question, answer = turns[t]
            refs = self._references(vid, t, answer, last=t == len(turns) - 1)
            history = [(q, a if isinstance(a, str) else "") for q, a in turns[:t]]
            items.append(Item(
                dataset=self.name, dataset_version=self.version, item_id=f"{vid}/{t}", video_id=vid,
                video_path=path, question=question, answer=refs[0], references=tuple(refs), kind="dialog",
                task_type="next_answer", category=f"turn{t + 1}", prompt=build_prompt(history, question, caption),
                extra={"turn": t, "summary": optional(rec, "summary")},
            ))
        return items

    def _references(self, vid: str, t: int, answer: Any, *, last: bool) -> list[str]:
        if isinstance(answer, str) and answer != UNDISCLOSED:
            return [answer]
        refs = self._refs.get(vid, [])
        found = refs[t] if t < len(refs) else refs[-1] if last and refs else []
        if found and UNDISCLOSED not in found:
            return found
        if answer == UNDISCLOSED:
            raise RowError(f"dialog[{t}]: answer is {UNDISCLOSED} and the references file has none for {vid!r}")
        raise RowError(f"dialog[{t}].answer: expected a string, got {type(answer).__name__}")
