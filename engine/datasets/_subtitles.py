"""SubRip (.srt) subtitles: parse cues and pick the ones shown at the sampled frames."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["Cue", "parse_srt", "read_srt", "subtitles_at"]

_TIME = re.compile(
    r"(\d+):(\d{1,2}):(\d{1,2})[,.](\d{1,3})\s*-->\s*(\d+):(\d{1,2}):(\d{1,2})[,.](\d{1,3})"
)
_TAG = re.compile(r"<[^>]+>")


@dataclass(frozen=True)
class Cue:
    """One subtitle: shown from `start` to `end` seconds."""

    start: float
    end: float
    text: str


def _seconds(h: str, m: str, s: str, ms: str) -> float:
    return int(h) * 3600 + int(m) * 60 + int(s) + int(ms.ljust(3, "0")) / 1000


def parse_srt(text: str) -> list[Cue]:
    """Cues of an SRT document, in file order; markup such as ``<font ...>`` is removed."""
    cues = []
    for block in re.split(r"\n\s*\n", text.replace("\r\n", "\n").replace("\ufeff", "")):
        lines = [ln for ln in block.strip().split("\n") if ln.strip()]
        for i, line in enumerate(lines):
            m = _TIME.search(line)
            if m:
                body = " ".join(_TAG.sub("", ln).strip() for ln in lines[i + 1:])
                if body.strip():
                    cues.append(Cue(_seconds(*m.groups()[:4]), _seconds(*m.groups()[4:]), body.strip()))
                break
    return cues


def read_srt(path: Path) -> list[Cue]:
    """Cues of an SRT file; an empty list when the file is missing."""
    try:
        return parse_srt(Path(path).read_text(encoding="utf-8", errors="replace"))
    except FileNotFoundError:
        return []


def subtitles_at(cues: Sequence[Cue], indices: Sequence[int] | np.ndarray | None, fps: float | None) -> list[str]:
    """Texts of the cues on screen at any of the frames `indices` of a video at `fps`, in time (file) order; all
    cues when `indices` is None.

    As lmms-eval's `videomme_doc_to_text_subtitle`: a cue holds frames ``int(start * fps)`` up to, not including,
    ``int(end * fps)``, so the text sent depends on the frames the budget samples. Where lmms-eval lists the cues
    in the iteration order of a Python set of their positions (time order only for short files), they stay in
    time order here.
    """
    if indices is None:
        return [c.text for c in cues]
    frames = np.sort(np.asarray(indices, dtype=np.int64))
    if not frames.size or not cues or not fps:
        return []
    first = np.array([int(c.start * fps) for c in cues], dtype=np.int64)
    after = np.array([int(c.end * fps) for c in cues], dtype=np.int64)
    shown = np.searchsorted(frames, after, side="left") > np.searchsorted(frames, first, side="left")
    return [c.text for c, on in zip(cues, shown, strict=True) if on]
