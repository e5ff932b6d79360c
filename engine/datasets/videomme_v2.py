"""Video-MME v2: 8-option questions (A-H) in groups of 4 per video, scored per group.

Each group is a `relevance` group (score from how many of its 4 answers are right) or
a `logic` group (score from how far along its chain the answers stay right, mapped by the
group's structure: `chain_steps`); see `engine.datasets.scoring_rules.videomme_v2_group_scores`.
Items carry `group_id` (the video) and, in `extra`, `position` (1-4, from the
question_id suffix), `group_type`, `group_structure` (whitespace removed), `level` and
`group_size` (4); rows record the group's size, type and structure, so the group scores
need nothing but the rows. `limit` keeps the first N questions and the rest of any group they
start (never part of a group).
"""

from __future__ import annotations

import json
from collections import defaultdict
from functools import partial
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from engine.datasets._base import BaseAdapter, whole_groups
from engine.datasets._mcq import lettered_options
from engine.datasets._paths import check_root, find_media, resolve_under
from engine.datasets._tables import Kind, collect_rows, need, optional, read_parquet
from engine.datasets.errors import Problems, RowError
from engine.datasets.registry import register_adapter
from engine.datasets.spec import VIDEO_EXTS, FileDatasetSpec
from engine.items import Item, option_letters
from engine.scoring import VIDEOMME_V2_PREFIXES, extract_letter_videomme

__all__ = ["LOGIC_STEPS", "LOGIC_STRUCTURES", "VideoMMEv2", "VideoMMEv2Spec", "build_prompt", "chain_steps",
           "extract_letter_v2"]


class VideoMMEv2Spec(FileDatasetSpec):
    """Video-MME v2: test.parquet (8 options A-H, questions in groups of 4) and its videos."""

    name: Literal["videomme_v2"] = Field(description="Adapter name.")
    annotations: Path = Field(description="test.parquet (or a folder of parquet shards).")
    media_root: Path = Field(description="Folder holding the videos named by the `video` / `video_id` column.")
    video_exts: list[str] = Field(
        default_factory=lambda: list(VIDEO_EXTS), min_length=1,
        description="Extensions tried in order when the video column has none.",
    )


VERSION = "videomme-v2.fs1"
LOGIC_STRUCTURES = ("[1,2,3,4]", "[1,[2,3],4]", "[[1,2],3,4]")
GROUP_SIZE = 4
COLUMNS: dict[str, Kind] = {
    "question_id": "str", "question": "str", "options": "str", "answer": "str",
    "group_type": "str", "group_structure": "str", "level": "int|str",
}
OPTIONAL_COLUMNS: dict[str, Kind] = {"second_head": "str", "third_head": "str", "video": "str", "video_id": "str"}


def _flat(x: Any) -> list[Any]:
    return [z for y in x for z in _flat(y)] if isinstance(x, list) else [x]


def chain_steps(structure: str) -> tuple[int, ...]:
    """The step of a logic group's chain each question stands at, by position 1-4 (`structure` as rows hold it).

    A top-level entry of the structure is one step; the questions of an inner list are parallel, one step
    (``[1,[2,3],4]`` -> (0, 1, 1, 2); ``[[1,2],3,4]`` -> (0, 0, 1, 2)). The logic score's k is the number of
    right answers on the steps the chain reaches, a step reached when every earlier step is wholly right; k is
    then mapped by the structure (``{1: 100/12, 2: 400/12, 3: 700/12, 4: 100}`` for ``[1,[2,3],4]``).

    This is the official rule, read from `cal_logic` in the Video-MME-v2 repository's
    `evaluation/test_video_mme_v2.py`: k is the leading run of right answers in position order, plus one
    where a parallel question continues the chain: under ``[1,[2,3],4]`` when the run is exactly question 1
    and question 3 is right; under ``[[1,2],3,4]`` when question 1 is wrong and question 2 is right. Those are
    the cases where the steps above differ from the plain leading run: answers (1, 0, 1, x) under
    ``[1,[2,3],4]`` give k = 2 (400/12 = 33.33, where the plain run gives 1: 100/12 = 8.33), and the chain
    stops there (x does not count: step [2,3] is not wholly right); (0, 1, x, y) under ``[[1,2],3,4]`` give
    k = 1 (10, not 0). Every other answer pattern of the three structures gives the plain run.

    An answer no letter is read from is wrong here. The official script marks it -1, which its chain reads as
    right (``if val``) and its relevance count as minus one; that slip is not copied.
    """
    parsed = json.loads(structure)
    step = {q: i for i, entry in enumerate(parsed) for q in _flat(entry)}
    return tuple(step[q] for q in sorted(step))


LOGIC_STEPS: dict[str, tuple[int, ...]] = {s: chain_steps(s) for s in LOGIC_STRUCTURES}
"""Each logic structure's chain step per position 1-4 (`chain_steps`)."""


def build_prompt(question: str, options_text: str, n_options: int) -> str:
    """Video-MME's prompt, widened to the item's letters (A-H)."""
    letters = option_letters(n_options)
    listed = ", ".join(letters[:-1]) + f", or {letters[-1]}"
    return (
        "Select the best answer to the following multiple-choice question based on the video. "
        f"Respond with only the letter ({listed}) of the correct option.\n"
        + question + "\n" + options_text.strip("\n") + "\nThe best answer is:"
    )


def extract_letter_v2(response: str, letters: str = "ABCDEFGH") -> str:
    """Video-MME's official extraction over A-H, also stripping "Final Answer:", "Answer:", "Option:"."""
    return extract_letter_videomme(response, letters, prefixes=VIDEOMME_V2_PREFIXES)


def _structure(text: str) -> str:
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        raise RowError(f"group_structure: not a list like [1, [2, 3], 4]: {text!r}") from None

    if not isinstance(parsed, list) or sorted(_flat(parsed)) != [1, 2, 3, 4]:
        raise RowError(f"group_structure: expected positions 1-4 once each, got {text!r}")
    return json.dumps(parsed, separators=(",", ":"))


@register_adapter("videomme_v2")
class VideoMMEv2(BaseAdapter):
    """Video-MME v2 adapter."""

    name = "videomme_v2"
    version = VERSION

    def __init__(self, spec: VideoMMEv2Spec) -> None:
        super().__init__(spec)
        self.spec: VideoMMEv2Spec = spec

    def extract(self, response: str, item: Item | None = None) -> str:
        return extract_letter_v2(response, "".join(item.letters) if item else "ABCDEFGH")

    def _load(self, problems: Problems) -> list[Item]:
        problems.extend(check_root(self.spec.media_root, "media_root"))
        if problems.fatal:
            return []
        items: list[Item] = []
        for source, df in read_parquet(self.spec.annotations, COLUMNS, problems, OPTIONAL_COLUMNS):
            if "video" not in df.columns and "video_id" not in df.columns:
                problems.add(source, None, "missing column 'video' (or 'video_id')", fatal=True)
                continue
            col = "video" if "video" in df.columns else "video_id"
            rows = collect_rows(source, enumerate(df.iter_rows(named=True)), partial(self._row, source, col), problems)
            items += self._check_groups(source, rows, problems)
        return items

    def _limit(self, items: list[Item], limit: int) -> list[Item]:
        return whole_groups(items, limit)

    def _video_path(self, video: str, source: Path, i: int, qid: str) -> Path:
        if Path(video).suffix in self.spec.video_exts:
            return resolve_under(self.spec.media_root, video, source=source, row=i, item_id=qid)
        return find_media(self.spec.media_root, video, self.spec.video_exts, source=source, row=i, item_id=qid)

    def _row(self, source: Path, video_col: str, i: int, rec: dict[str, Any]) -> Item:
        qid = need(rec, "question_id")
        video = str(need(rec, video_col))
        options_text = need(rec, "options")
        options = lettered_options([ln for ln in options_text.split("\n") if ln.strip()], max_options=8)
        answer = need(rec, "answer").strip()
        if answer not in option_letters(len(options)):
            raise RowError(f"answer: expected one of the option letters, got {answer!r}")
        group_type = need(rec, "group_type")
        if group_type not in ("relevance", "logic"):
            raise RowError(f"group_type: expected relevance or logic, got {group_type!r}")
        structure = _structure(need(rec, "group_structure"))
        if group_type == "logic" and structure not in LOGIC_STRUCTURES:
            raise RowError(f"group_structure {structure} has no logic score map (known: {', '.join(LOGIC_STRUCTURES)})")
        suffix = qid.rsplit("-", 1)[-1]
        if not suffix.isdigit() or not 1 <= int(suffix) <= 4:
            raise RowError(f"question_id {qid!r}: expected '<video>-<1..4>' (the position in its group)")
        level = need(rec, "level", "int|str")
        question = need(rec, "question")
        return Item(
            dataset=self.name, dataset_version=self.version, item_id=qid, video_id=Path(video).stem,
            video_path=self._video_path(video, source, i, qid), question=question, options=options, answer=answer,
            kind="mcq", task_type=optional(rec, "third_head"), category=optional(rec, "second_head"),
            prompt=build_prompt(question, options_text, len(options)), group_id=Path(video).stem,
            extra={"position": int(suffix), "group_type": group_type, "group_structure": structure,
                   "level": int(level) if str(level).isdigit() else level, "row": i, "group_size": GROUP_SIZE},
        )

    def _check_groups(self, source: Path, items: list[Item], problems: Problems) -> list[Item]:
        """Keep complete, consistent groups of 4 (positions 1-4, one type and structure)."""
        groups: dict[str, list[Item]] = defaultdict(list)
        for it in items:
            groups[it.group_id or ""].append(it)
        keep = []
        for gid, members in groups.items():
            positions = sorted(m.extra["position"] for m in members)
            kinds = {(m.extra["group_type"], m.extra["group_structure"]) for m in members}
            reason = None
            if positions != [1, 2, 3, 4]:
                reason = f"group {gid}: expected questions at positions 1-4, got {positions}"
            elif len(kinds) > 1:
                reason = f"group {gid}: its questions disagree on group_type / group_structure: {sorted(kinds)}"
            if reason:
                problems.add(source, members[0].extra["row"], reason, item_id=members[0].item_id)
            else:
                keep += members
        return keep
