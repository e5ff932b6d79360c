"""Video-MME v1 (lmms-lab/Video-MME): the test parquet, `<videoID>.mp4` videos, optional subtitles.

Prompt and answer extraction are the official ones (`extract_characters_regex`, quirks
included); accuracy is reported with empty extractions excluded (official) and counted
wrong (`engine.datasets.scoring_rules.videomme_accuracy`).

With subtitles ("w/ subs"), the prompt holds lmms-eval's `videomme_doc_to_text_subtitle` text
(header, subtitle lines, instruction); which cues it lists is the spec's `subtitles`:

- ``true`` (framesweep's rule): the cues on screen at the frames each budget sends, by lmms-eval's
  frame test, each cue's lines joined with their markup removed. The pipeline asks
  `VideoMME.job_prompt` per job, so each budget has its own `prompt_hash`. A text-only budget
  samples no frame; it gets every subtitle (the transcript alone), which is also the item's own
  `prompt`. This is not what lmms-eval sends: it takes the cues at its own 32 frames, whatever the
  model sees, and only the first line of a multi-line cue.
- ``"lmms_eval"`` (lmms-eval's rule, so imported lmms-eval numbers and framesweep's can be
  compared): the cues at lmms-eval's 32 frames (`engine.datasets._subtitles.lmms_eval_subtitles`:
  ``np.linspace(0, total_frames - 1, 32, dtype=int)`` of the video's frame count as its container
  declares it, else as counted, and its average fps), each cue's first ``<font>`` span, the same
  text at every budget, text-only included (the item's own `prompt` keeps the transcript). An
  unreadable video gets no subtitle line, as lmms-eval's OpenCV reader, at 0 frames and 0 fps, gives.

Each rule has its own adapter version (`SUBTITLE_VERSIONS`), so rows record it and a resume under
the other is refused; ``"lmms_eval"`` is also in the answer fingerprint as the dataset setting.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
from pydantic import Field, field_validator, model_validator

from engine.datasets._base import BaseAdapter
from engine.datasets._mcq import lettered_options
from engine.datasets._paths import check_root, find_media, resolve_under
from engine.datasets._subtitles import Cue, lmms_eval_subtitles, read_srt, subtitles_at
from engine.datasets._tables import Kind, collect_rows, need, optional, read_parquet
from engine.datasets.errors import Problems, RowError
from engine.datasets.registry import register_adapter
from engine.datasets.spec import VIDEO_EXTS, FileDatasetSpec
from engine.frames.base import DecodeError
from engine.frames.index import stream_index
from engine.items import Item, option_letters
from engine.scoring import extract_letter_videomme

__all__ = ["INSTRUCTION", "SUBTITLE_VERSIONS", "VideoMME", "VideoMMESpec", "build_prompt", "subtitle_prompt"]

log = logging.getLogger(__name__)


Duration = Literal["short", "medium", "long"]


class VideoMMESpec(FileDatasetSpec):
    """Video-MME v1 (lmms-lab/Video-MME): the test parquet and a folder of `<videoID>.mp4` files."""

    name: Literal["videomme"] = Field(description="Adapter name.")
    annotations: Path = Field(description="videomme/test-00000-of-00001.parquet (or a folder of parquet shards).")
    media_root: Path = Field(description="Folder holding `<videoID>.mp4` (the unzipped `data/` folder).")
    video_exts: list[str] = Field(
        default_factory=lambda: list(VIDEO_EXTS), min_length=1,
        description="Extensions tried in order for each videoID; the first that exists is used.",
    )
    durations: list[Duration] = Field(
        default_factory=lambda: list(get_args(Duration)), min_length=1, description="Duration groups to keep."
    )
    subtitles: bool | Literal["lmms_eval"] = Field(
        default=False,
        description="Put the video's subtitles in the prompt (the official 'w/ subs' setting). true: the cues on "
        "screen at the frames each budget sends, all lines of a cue (a text-only budget: every cue); "
        "\"lmms_eval\": lmms-eval's rule, to compare with its numbers: the cues at its own 32 frames "
        "(np.linspace(0, total_frames - 1, 32, dtype=int)), only a cue's first line, the same at every budget.",
    )
    subtitle_root: Path | None = Field(
        default=None,
        description="Folder holding `<videoID>.srt` (the unzipped `subtitle/` folder); needed with subtitles.",
    )
    extraction: Literal["official", "strict"] = Field(
        default="official",
        description="Replaced by `[prompt] extraction`, the one setting of how an answer letter is read. Only "
        "\"official\" (the default, Video-MME's extract_characters_regex, quirks included) is accepted, so older "
        "specs keep their answer fingerprints; \"strict\" is refused, naming `[prompt] extraction = \"strict\"`, "
        "which reads answers the same way.",
    )

    @field_validator("extraction")
    @classmethod
    def _one_extraction_setting(cls, value: str) -> str:
        if value != "official":
            raise ValueError(f"[dataset] extraction = {value!r} is no longer read: answer extraction has one "
                             f"setting, [prompt] extraction; remove the dataset's and set [prompt] extraction = "
                             f"{value!r} (the same reading; rows then record it in `scoring`)")
        return value

    @model_validator(mode="after")
    def _subtitle_root(self) -> VideoMMESpec:
        if self.subtitles and self.subtitle_root is None:
            raise ValueError(f"subtitles = {'true' if self.subtitles is True else repr(self.subtitles)} needs "
                             "subtitle_root")
        return self


VERSION = "videomme-v1.fs1"
SUBTITLE_VERSIONS: dict[bool | str, str] = {False: "", True: "-subs-at-frames", "lmms_eval": "-subs-lmms-eval"}
"""Added to the version per `subtitles` setting: ``-subs-at-frames``, each job's prompt holds the subtitles at the
frames it sends (earlier 'w/ subs' rows held every subtitle at every budget, so a resume of them is refused,
naming the version); ``-subs-lmms-eval``, lmms-eval's cues at its 32 frames."""
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
    """The 'w/ subs' prompt for the frames `indices` (of a video at `fps`) a budget sends (``subtitles = true``).

    lmms-eval's `videomme_doc_to_text_subtitle` text with the subtitles on screen at the budget's own frames
    (`engine.datasets._subtitles.subtitles_at`; lmms-eval takes those at its own 32 frames, first lines only:
    ``subtitles = "lmms_eval"``); "No subtitles available" when the video has no subtitle file (`cues` None).
    `indices` None (a text-only budget, which samples no frame): every subtitle, the video's whole transcript.
    An item without subtitles keeps its prompt.
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
        self.version = VERSION + SUBTITLE_VERSIONS[spec.subtitles]
        self._cues: dict[Path, list[Cue] | None] = {}
        self._lmms_eval_lines: dict[Path, list[str]] = {}

    def extract(self, response: str, item: Item | None = None) -> str:
        """Official `extract_characters_regex` (another reading: `[prompt] extraction`)."""
        return extract_letter_videomme(response, "ABCD")

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
        a text-only job, no frames: every subtitle), or with ``subtitles = "lmms_eval"`` lmms-eval's at every
        budget; None (the item's own prompt) without subtitles."""
        if item.subtitle_path is None:
            return None
        if self.spec.subtitles == "lmms_eval":
            lines = self._lmms_eval(item.subtitle_path, item.video_path)
            return build_prompt(item.question, item.extra["raw_options"], lines)
        return subtitle_prompt(item, self._subtitles(item.subtitle_path), indices if len(indices) else None, fps)

    def _lmms_eval(self, subtitles: Path, video: Path | None) -> list[str]:
        """lmms-eval's subtitle lines for one video (worked out once per subtitle file)."""
        if subtitles not in self._lmms_eval_lines:
            cues = self._subtitles(subtitles)
            if cues is None:
                self._lmms_eval_lines[subtitles] = [NO_SUBTITLES]
            else:
                total, fps = _frame_count_and_fps(video)
                self._lmms_eval_lines[subtitles] = lmms_eval_subtitles(cues, total, fps)
        return self._lmms_eval_lines[subtitles]

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


def _frame_count_and_fps(path: Path | None) -> tuple[int, float]:
    """The frame count and fps lmms-eval reads with OpenCV: the count the container declares (else the frames
    counted) and the average rate; (0, 0.0) for an unreadable video, where OpenCV reads zeros."""
    try:
        info = stream_index(path).info if path is not None else None
    except DecodeError as err:
        log.warning("%s: the video does not open (%s): lmms-eval's subtitle rule finds no frame for its cues",
                    path, err)
        info = None
    if info is None:
        return 0, 0.0
    return info.declared_frames or info.n_frames, info.fps
