"""SubRip (.srt) subtitles: parse cues and pick the ones shown at the sampled frames.

Two rules pick the cues of a Video-MME "w/ subs" prompt:

- `subtitles_at`: the cues on screen at the frames a budget sends (framesweep's rule), each cue's lines joined
  with their markup removed;
- `lmms_eval_subtitles`: lmms-eval's `videomme_doc_to_text_subtitle` (tasks/videomme/utils.py), whatever the
  budget: the cues on screen at its own `frame_num` frames (32 in its videomme_w_subtitle.yaml), taken as
  ``np.linspace(0, total_frames - 1, frame_num, dtype=int)`` of the video's frame count and fps, each cue's
  text the first ``<font color="white" size=".72c">...</font>`` span of its lines joined by a space (the first
  line, in Video-MME's files, where every line is one such span); a cue without that span is left out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["LMMS_EVAL_FRAME_NUM", "Cue", "lmms_eval_frames", "lmms_eval_subtitles", "parse_srt", "read_srt",
           "subtitles_at"]

LMMS_EVAL_FRAME_NUM = 32
"""lmms-eval's `frame_num` for Video-MME w/ subs (`model_specific_prompt_kwargs.default` of its
videomme_w_subtitle.yaml): the frames whose cues its prompt holds, whatever frames the model is sent."""

_TIME = re.compile(
    r"(\d+):(\d{1,2}):(\d{1,2})[,.](\d{1,3})\s*-->\s*(\d+):(\d{1,2}):(\d{1,2})[,.](\d{1,3})"
)
_TAG = re.compile(r"<[^>]+>")
_LMMS_EVAL_SPAN = re.compile(r'<font color="white" size=".72c">(.*?)</font>')


@dataclass(frozen=True)
class Cue:
    """One subtitle: shown from `start` to `end` seconds.

    Attributes:
        text: Its lines joined by a space, markup removed.
        raw: Its lines as written, markup kept, joined by a space (as lmms-eval reads a cue).
    """

    start: float
    end: float
    text: str
    raw: str = ""


def _seconds(h: str, m: str, s: str, ms: str) -> float:
    return int(h) * 3600 + int(m) * 60 + int(s) + int(ms.ljust(3, "0")) / 1000


def parse_srt(text: str) -> list[Cue]:
    """Cues of an SRT document, in file order; markup such as ``<font ...>`` is removed from `Cue.text`."""
    cues = []
    for block in re.split(r"\n\s*\n", text.replace("\r\n", "\n").replace("\ufeff", "")):
        lines = [ln for ln in block.strip().split("\n") if ln.strip()]
        for i, line in enumerate(lines):
            m = _TIME.search(line)
            if m:
                body = " ".join(_TAG.sub("", ln).strip() for ln in lines[i + 1:])
                if body.strip():
                    cues.append(Cue(_seconds(*m.groups()[:4]), _seconds(*m.groups()[4:]), body.strip(),
                                    " ".join(lines[i + 1:])))
                break
    return cues


def read_srt(path: Path) -> list[Cue]:
    """Cues of an SRT file; an empty list when the file is missing."""
    try:
        return parse_srt(Path(path).read_text(encoding="utf-8", errors="replace"))
    except FileNotFoundError:
        return []


def _shown(cues: Sequence[Cue], indices: Sequence[int] | np.ndarray, fps: float | None) -> list[Cue]:
    """The cues on screen at any of the frames `indices` (a cue holds frames ``int(start * fps)`` up to, not
    including, ``int(end * fps)``), in file order."""
    frames = np.sort(np.asarray(indices, dtype=np.int64))
    if not frames.size or not cues or not fps:
        return []
    first = np.array([int(c.start * fps) for c in cues], dtype=np.int64)
    after = np.array([int(c.end * fps) for c in cues], dtype=np.int64)
    shown = np.searchsorted(frames, after, side="left") > np.searchsorted(frames, first, side="left")
    return [c for c, on in zip(cues, shown, strict=True) if on]


def subtitles_at(cues: Sequence[Cue], indices: Sequence[int] | np.ndarray | None, fps: float | None) -> list[str]:
    """Texts of the cues on screen at any of the frames `indices` of a video at `fps`, in time (file) order; all
    cues when `indices` is None.

    lmms-eval's frame test (a cue holds frames ``int(start * fps)`` up to, not including, ``int(end * fps)``)
    applied to the frames a budget sends, so the text sent depends on the budget. Where lmms-eval lists the cues
    in the iteration order of a Python set of their positions (time order only for short files), they stay in
    time order here; a cue's lines are all kept (`lmms_eval_subtitles` is lmms-eval's own rule).
    """
    if indices is None:
        return [c.text for c in cues]
    return [c.text for c in _shown(cues, indices, fps)]


def lmms_eval_frames(total_frames: int, frame_num: int = LMMS_EVAL_FRAME_NUM) -> np.ndarray:
    """lmms-eval's frames for the subtitles: ``np.linspace(0, total_frames - 1, frame_num, dtype=int)``."""
    return np.linspace(0, total_frames - 1, frame_num, dtype=int)


def lmms_eval_subtitles(cues: Sequence[Cue], total_frames: int, fps: float,
                        frame_num: int = LMMS_EVAL_FRAME_NUM) -> list[str]:
    """The subtitle lines of lmms-eval's Video-MME w/ subs prompt for a video of `total_frames` at `fps`.

    As `videomme_doc_to_text_subtitle` (module docstring): the cues on screen at `lmms_eval_frames`, each as the
    first ``<font color="white" size=".72c">`` span of its text (a cue without one is left out). Cues sharing
    one (start, end) are one, with the last one's text (lmms-eval keeps them in a dict keyed by their times).
    Listed in time order, where lmms-eval lists a Python set's order (the same for short files).
    """
    by_time: dict[tuple[float, float], Cue] = {}
    for c in cues:
        by_time[(c.start, c.end)] = c  # a repeated key keeps its first place and takes the last text
    lines = []
    for c in _shown(list(by_time.values()), lmms_eval_frames(total_frames, frame_num), fps):
        span = _LMMS_EVAL_SPAN.search(c.raw)
        if span is not None:
            lines.append(span.group(1))
    return lines
