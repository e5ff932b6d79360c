"""Video-MME v1 (lmms-lab/Video-MME): the test parquet, `<videoID>.mp4` videos, optional subtitles.

Prompt and answer extraction are the official ones (`extract_characters_regex`, quirks
included); accuracy is reported with empty extractions excluded (official) and counted
wrong (`engine.datasets.scoring_rules.videomme_accuracy`).

With subtitles ("w/ subs"), each job's prompt holds the subtitles on screen at the frames
its budget sends, as lmms-eval's `videomme_doc_to_text_subtitle` does at the frame count it
samples: the pipeline asks `VideoMME.job_prompt` per job (so each budget has its own
`prompt_hash`). A text-only budget samples no frame; it gets every subtitle (the transcript
alone), which is also the item's own `prompt`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from engine.config.datasets import VideoMMESpec
from engine.datasets._base import BaseAdapter
from engine.datasets._mcq import lettered_options
from engine.datasets._paths import check_root, find_media, resolve_under
from engine.datasets._subtitles import Cue, read_srt, subtitles_at
from engine.datasets._tables import Kind, collect_rows, need, optional, read_parquet
from engine.datasets.errors import Problems, RowError
from engine.datasets.registry import register_adapter
from engine.items import Item, option_letters
from engine.scoring import extract_letter_videomme, extract_letter_videomme_strict

__all__ = ["INSTRUCTION", "VideoMME", "build_prompt", "subtitle_prompt"]

VERSION = "videomme-v1.fs1"
SUBTITLES_VERSION = "-subs-at-frames"
"""Added to the version with subtitles: each job's prompt holds the subtitles at the frames it sends (earlier
'w/ subs' rows held every subtitle at every budget, so a resume of them is refused, naming the version)."""
INSTRUCTION = (
    "Select the best answer to the following multiple-choice question based on the video. "
    "Respond with only the letter (A, B, C, or D) of the correct option.\n"
)
SUBTITLE_INSTRUCTION = (
    "Select the best answer to the following multiple-choice question based on the video and the subtitles. "
    "Respond with only the letter (A, B, C, or D) of the correct option.\n"
)
SUBTITLE_HEADER = "This video's subtitles are listed below: \n"
NO_SUBTITLES = "No subtitles available"

COLUMNS: dict[str, Kind] = {
    "duration": "str", "domain": "str", "sub_category": "str", "videoID": "str", "question_id": "str",
    "task_type": "str", "question": "str", "options": "list[str]", "answer": "str",
}
OPTIONAL_COLUMNS: dict[str, Kind] = {"video_id": "str", "url": "str"}


def build_prompt(question: str, options: Sequence[str], subtitles: Sequence[str] | None = None) -> str:
    """The official prompt; with `subtitles` (lines, possibly none), lmms-eval's 'w/ subs' prompt."""
    body = question + "\n" + "\n".join(options) + "\nThe best answer is:"
    if subtitles is None:
        return INSTRUCTION + body
    return SUBTITLE_HEADER + "\n".join(subtitles) + "\n" + SUBTITLE_INSTRUCTION + body


def subtitle_prompt(item: Item, cues: Sequence[Cue] | None, indices: Sequence[int] | np.ndarray | None,
                    fps: float | None) -> str:
    """The 'w/ subs' prompt for the frames `indices` (of a video at `fps`) a budget sends.

    As lmms-eval's `videomme_doc_to_text_subtitle`: the subtitles on screen at those frames
    (`engine.datasets._subtitles.subtitles_at`); "No subtitles available" when the video has no
    subtitle file (`cues` None). `indices` None (a text-only budget, which samples no frame): every
    subtitle, the video's whole transcript. An item without subtitles keeps its prompt.
    """
    if item.subtitle_path is None:
        return item.prompt or ""
    lines = [NO_SUBTITLES] if cues is None else subtitles_at(cues, indices, fps)
    return build_prompt(item.question, item.extra["raw_options"], lines)


@register_adapter("videomme")
class VideoMME(BaseAdapter):
    """Video-MME v1 adapter."""

    name = "videomme"

    def __init__(self, spec: VideoMMESpec) -> None:
        super().__init__(spec)
        self.spec: VideoMMESpec = spec
        self.version = VERSION + ("" if spec.extraction == "official" else "-strict") + (
            SUBTITLES_VERSION if spec.subtitles else "")
        self._cues: dict[Path, list[Cue] | None] = {}

    def extract(self, response: str, item: Item | None = None) -> str:
        """Official `extract_characters_regex` (or the strict reading, as the spec says)."""
        rule = extract_letter_videomme if self.spec.extraction == "official" else extract_letter_videomme_strict
        return rule(response, "ABCD")

    def _load(self, problems: Problems) -> list[Item]:
        problems.extend(check_root(self.spec.media_root, "media_root"))
        problems.extend(check_root(self.spec.subtitle_root, "subtitle_root"))
        if problems.fatal:
            return []
        items: list[Item] = []
        for source, df in read_parquet(self.spec.annotations, COLUMNS, problems, OPTIONAL_COLUMNS):
            items += collect_rows(source, enumerate(df.iter_rows(named=True)), partial(self._row, source), problems)
        return items

    def _subtitles(self, path: Path) -> list[Cue] | None:
        """The cues of one subtitle file, read once; None when the video has none."""
        if path not in self._cues:
            self._cues[path] = read_srt(path) if path.is_file() else None
        return self._cues[path]

    def job_prompt(self, item: Item, indices: np.ndarray, fps: float | None) -> str | None:
        """The prompt of one job: with subtitles, those on screen at the frames it sends (`subtitle_prompt`;
        a text-only job, no frames: every subtitle); None (the item's own prompt) without subtitles."""
        if item.subtitle_path is None:
            return None
        return subtitle_prompt(item, self._subtitles(item.subtitle_path), indices if len(indices) else None, fps)

    def _row(self, source: Path, i: int, rec: dict[str, Any]) -> Item | None:
        qid = need(rec, "question_id")
        duration = need(rec, "duration")
        if duration not in ("short", "medium", "long"):
            raise RowError(f"duration: expected short, medium or long, got {duration!r}")
        if duration not in self.spec.durations:
            return None
        raw_options = list(need(rec, "options", "list[str]"))
        options = lettered_options(raw_options, max_options=4)
        answer = need(rec, "answer").strip()
        if answer not in option_letters(len(options)):
            raise RowError(f"answer: expected one of the option letters, got {answer!r}")
        vid = need(rec, "videoID")
        path = find_media(self.spec.media_root, vid, self.spec.video_exts, source=source, row=i, item_id=qid)
        question = need(rec, "question")
        sub_path, subs = None, None
        if self.spec.subtitles and self.spec.subtitle_root is not None:
            sub_path = resolve_under(self.spec.subtitle_root, f"{vid}.srt", source=source, row=i, item_id=qid)
            cues = self._subtitles(sub_path)  # the prompt of a text-only budget: every subtitle (`job_prompt`)
            subs = [NO_SUBTITLES] if cues is None else [c.text for c in cues]
        return Item(
            dataset=self.name, dataset_version=self.version, item_id=qid, video_id=vid, video_path=path,
            question=question, options=options, answer=answer, kind="mcq",
            task_type=need(rec, "task_type"), category=need(rec, "domain"), duration=duration,
            prompt=build_prompt(question, raw_options, subs), subtitle_path=sub_path,
            extra={"sub_category": need(rec, "sub_category"), "video_number": optional(rec, "video_id"),
                   "url": optional(rec, "url"), "raw_options": raw_options},
        )
