"""Video-MMMU (lmms-lab/VideoMMMU): knowledge acquisition from lecture videos, in three tracks.

Released as one parquet config per track, ``Perception/``, ``Comprehension/`` and
``Adaptation/`` (shards under each), with ``id, question, options (list), answer,
question_type`` (``multiple-choice`` with a letter answer, or ``open`` with a numeric or
short text answer; other columns are ignored). Ids read ``<split>_<Subject>_<n>``; the
video is ``<id>.mp4`` in its discipline's folder (the unzipped archives: Art, Business,
Engineering, Humanities, Medicine, Science) or directly under the media root. The three
tracks ask about the same videos, so their questions share one decode.

Prompts are lmms-eval's defaults (Perception and Comprehension: the question, the
options and "Please ignore the Quiz question in last frame of the video."; Adaptation:
the "watch and learn" pre-prompt). Scoring is the official MMMU rule lmms-eval applies:
`parse_multi_choice_response` for letters, and for open answers `parse_open_response`
with numbers matched as floats rounded to 2 decimals (`eval_open`), text by containment.
Open items therefore carry a right/wrong verdict (``correct``) like multiple-choice ones.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from engine.config.datasets import VideoMMMUSpec
from engine.datasets._base import BaseAdapter, ItemScore
from engine.datasets._mcq import check_option_count
from engine.datasets._paths import check_root, resolve_under
from engine.datasets._tables import Kind, collect_rows, need, read_parquet
from engine.datasets.errors import Problems, RowError
from engine.datasets.registry import register_adapter
from engine.items import Item, option_letters

__all__ = ["DISCIPLINES", "VideoMMMU", "eval_open", "parse_multi_choice_response", "parse_open_response",
           "video_mmmu_prompt"]

VERSION = "video_mmmu.fs1"
COLUMNS: dict[str, Kind] = {"id": "str", "question": "str", "options": "list[str]", "answer": "str",
                            "question_type": "str"}
DISCIPLINES: dict[str, tuple[str, ...]] = {
    "Art": ("Art", "Art_Theory", "Design", "Music"),
    "Science": ("Biology", "Chemistry", "Geography", "Math", "Physics"),
    "Humanities": ("History", "Literature", "Sociology", "Psychology"),
    "Engineering": ("Agriculture", "Architecture_and_Engineering", "Computer_Science", "Electronics",
                    "Energy_and_Power", "Materials", "Mechanical_Engineering"),
    "Medicine": ("Basic_Medical_Science", "Clinical_Medicine", "Diagnostics_and_Laboratory_Medicine", "Pharmacy",
                 "Public_Health"),
    "Business": ("Accounting", "Economics", "Finance", "Manage", "Marketing"),
}
_DISCIPLINE_OF = {s: d for d, subjects in DISCIPLINES.items() for s in subjects}
PRE_PROMPT = "You should watch and learn the video content. Then apply what you learned to "
PERCEPTION_AND_COMPREHENSION_PROMPT = "\nPlease ignore the Quiz question in last frame of the video."
MCQ_PROMPT = "answer the following multi-choice question. The image for this question is at the end of the video.\n"
OPEN_ENDED_PROMPT = ("answer the following open-ended question. The image for this question is at the end of the "
                     "video.\n")
_ID = re.compile(r"^[^_]+_(.+)_\d+$")


def _lettered(options: Sequence[str]) -> str:
    """lmms-eval's `parse_options`: options as given when already lettered "A.", else lettered here."""
    letters = option_letters(len(options))
    if all(o.startswith(f"{lt}.") for o, lt in zip(options, letters, strict=True)):
        return "\n".join(options)
    return "\n".join(f"{lt}. {o}" for lt, o in zip(letters, options, strict=True))


def video_mmmu_prompt(track: str, question: str, options: Sequence[str], mcq: bool) -> str:
    """The lmms-eval default prompt of a Video-MMMU question in its track."""
    if track != "Adaptation":
        return f"{question}\n{_lettered(options)}{PERCEPTION_AND_COMPREHENSION_PROMPT}"
    if mcq:
        return f"{PRE_PROMPT}{MCQ_PROMPT}{question}\n{_lettered(options)}"
    return f"{PRE_PROMPT}{OPEN_ENDED_PROMPT}{question}"


def parse_multi_choice_response(response: str, options: Sequence[str]) -> str:
    """MMMU's `parse_multi_choice_response` (as lmms-eval runs it for Video-MMMU); "" when nothing matches."""
    if response == "":
        return ""
    letters = option_letters(len(options))
    index2ans = dict(zip(letters, options, strict=True))
    for char in (",", ".", "!", "?", ";", ":", "'"):
        response = response.strip(char)
    response = f" {response} "
    period = [c for c in letters if f"{c}." in response]
    colon = [c for c in letters if f"{c}:" in response]
    candidates, form = period + colon, ("." if period else ":" if colon else None)
    if not candidates:
        candidates, form = [c for c in letters if f"({c})" in response], "()"
    if not candidates:
        candidates, form = [c for c in letters if f"{c} " in response], " "
    by_content = False
    if not candidates and len(response.split()) > 5:
        candidates = [c for c, ans in index2ans.items() if ans.lower() in response.lower()]
        by_content = True
    if not candidates:
        return ""
    if len(candidates) == 1:
        return candidates[0]
    if by_content:
        starts = [response.lower().rfind(index2ans[c].lower()) for c in candidates]
    elif form == "()":
        starts = [response.rfind(f"({c})") for c in candidates]
    elif form == " ":
        starts = [response.rfind(f" {c} ") for c in candidates]
    else:
        starts = [response.rfind(f"{c}{form}") for c in candidates]
    return candidates[max(range(len(candidates)), key=lambda j: starts[j])]  # the last one (first of ties)


def _extract_numbers(text: str) -> list[str]:
    commas = re.findall(r"-?\b\d{1,3}(?:,\d{3})+\b", text)
    scientific = re.findall(r"-?\d+(?:\.\d+)?[eE][+-]?\d+", text)
    simple = re.findall(r"-?(?:\d+\.\d+|\.\d+|\d+\b)(?![eE][+-]?\d+)(?![,\d])", text)
    return commas + scientific + simple


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True


def _normalize(text: str) -> list[str | float]:
    """MMMU's `normalize_str`: a number becomes a float rounded to 2 decimals; text is lowercased (a single
    character padded with a space on either side, so it cannot match inside a word)."""
    text = text.strip()
    if _is_number(text):
        return [round(float(text.replace(",", "")), 2)]
    text = text.lower()
    return [" " + text, text + " "] if len(text) == 1 else [text]


_KEY_INDICATORS = ("could be ", "so ", "is ", "thus ", "therefore ", "final ", "answer ", "result ", "are ",
                   "in total ", "total ", "identify ", "recognize ", "calculated as ", "counted as ",
                   "measured as ", "observed as ", "concluded as ", "found to be ", "equals ", "determined to be ",
                   "number of ", "value is ", "adds up to ", "have ", "has ")


def _key_subresponses(response: str) -> list[str]:
    response = response.strip().strip(".").lower()
    parts = re.split(r"\.\s(?=[A-Z])|\n", response)
    keys = []
    for i, part in enumerate(parts):
        indicators = (*_KEY_INDICATORS, "=") if i == len(parts) - 1 else _KEY_INDICATORS
        shortest: str | None = None
        for ind in indicators:
            if ind in part:
                tail = part.split(ind)[-1].strip()
                # as the source has it: an empty tail so far is replaced by the next one, whatever its length
                if not shortest or len(tail) < len(shortest):
                    shortest = tail
        if shortest and shortest.strip() not in (":", ",", ".", "!", "?", ";", "'"):
            keys.append(shortest)
    return keys or [response]


def parse_open_response(response: str) -> list[str | float]:
    """MMMU's `parse_open_response`: the key phrases after "is", "=", "total", ... and every number in
    them, normalised; [] for an empty response."""
    if response == "":
        return []
    keys = _key_subresponses(response)
    found: list[str] = [*keys, *(n for k in keys for n in _extract_numbers(k))]
    out: list[str | float] = []
    for text in found:
        for v in _normalize(text):
            if v not in out:
                out.append(v)
    return out


def eval_open(gold: str | Sequence[str], preds: Sequence[str | float]) -> bool:
    """MMMU's `eval_open`: a predicted number equal to a gold number, or a gold text inside a predicted text."""
    golds = [v for g in ([gold] if isinstance(gold, str) else gold) for v in _normalize(g)]
    for p in preds:
        if isinstance(p, str):
            if any(isinstance(g, str) and g in p for g in golds):
                return True
        elif p in golds:
            return True
    return False


def _gold(answer: str) -> str | list[str]:
    """An open answer; a list literal ("['3', 'three']") is several acceptable answers."""
    text = answer.strip()
    if text.startswith("[") and text.endswith("]"):
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return text
        if isinstance(value, list) and value and all(isinstance(v, str | int | float) for v in value):
            return [str(v) for v in value]
    return text


@register_adapter("video_mmmu")
class VideoMMMU(BaseAdapter):
    """Video-MMMU adapter."""

    name = "video_mmmu"
    version = VERSION

    def __init__(self, spec: VideoMMMUSpec) -> None:
        super().__init__(spec)
        self.spec: VideoMMMUSpec = spec

    def extract(self, response: str, item: Item | None = None) -> str:
        if item is not None and item.kind == "mcq":
            return parse_multi_choice_response(response, item.extra.get("raw_options") or item.options)
        return response.strip()

    def score(self, item: Item, response: str) -> ItemScore:
        if item.kind == "mcq":
            pred = self.extract(response, item)
            correct = pred == item.answer
            return ItemScore(pred or None, correct, float(correct))
        preds = parse_open_response(response)
        correct = eval_open(_gold(item.answer or ""), preds)
        shown = "; ".join(f"{p:g}" if isinstance(p, float) else p.strip() for p in preds)
        return ItemScore(shown or None, correct, float(correct))

    def _load(self, problems: Problems) -> list[Item]:
        problems.extend(check_root(self.spec.media_root, "media_root"))
        if problems.fatal:
            return []
        items: list[Item] = []
        for track in self.spec.tracks:
            for source, df in read_parquet(Path(self.spec.annotation_root) / track, COLUMNS, problems):
                items += collect_rows(source, enumerate(df.iter_rows(named=True)),
                                      partial(self._row, track, source), problems)
        return items

    def _video(self, vid: str, discipline: str | None, source: Path, i: int, item_id: str) -> Path:
        names = ([f"{discipline}/{vid}.mp4"] if discipline else []) + [f"{vid}.mp4"]
        paths = [resolve_under(self.spec.media_root, n, source=source, row=i, item_id=item_id) for n in names]
        return next((p for p in paths if p.exists()), paths[0])

    def _row(self, track: str, source: Path, i: int, rec: dict[str, Any]) -> Item:
        vid = need(rec, "id").strip()
        m = _ID.match(vid)
        if m is None:
            raise RowError(f"id: expected <split>_<Subject>_<n>, got {vid[:60]!r}")
        subject = m[1]
        item_id = f"{track}/{vid}"
        qtype = need(rec, "question_type").strip()
        raw = [str(o) for o in need(rec, "options", "list[str]")]
        answer = need(rec, "answer").strip()
        mcq = qtype == "multiple-choice"
        if mcq:
            check_option_count(raw)
            if answer not in option_letters(len(raw)):
                raise RowError(f"answer: expected an option letter A-{option_letters(len(raw))[-1]}, "
                               f"got {answer[:40]!r}")
        elif not answer:
            raise RowError("answer: empty")
        question = need(rec, "question")
        texts = tuple(re.sub(r"^[A-Z]\.\s*", "", o).strip() for o in raw) if mcq else ()
        discipline = _DISCIPLINE_OF.get(subject)
        return Item(
            dataset=self.name, dataset_version=self.version, item_id=item_id, video_id=vid,
            video_path=self._video(vid, discipline, source, i, item_id), question=question, options=texts,
            answer=answer, references=() if mcq else (answer,), kind="mcq" if mcq else "open", task_type=track,
            category=subject, prompt=video_mmmu_prompt(track, question, raw, mcq),
            extra={"discipline": discipline, "question_type": qtype, "raw_options": raw},
        )
