"""SubRip (.srt) subtitles: parse cues and pick the ones shown at the sampled frames."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

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


def subtitles_at(cues: Sequence[Cue], times: Sequence[float] | None) -> list[str]:
    """Texts of the cues on screen at any of `times` (seconds), in order; all cues when `times` is None.

    Video-MME's evaluation keeps the subtitles of the sampled frames only, so the text
    sent depends on the budget.
    """
    if times is None:
        return [c.text for c in cues]
    return [c.text for c in cues if any(c.start <= t < c.end for t in times)]
