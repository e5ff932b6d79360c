"""Video-MME "w/ subs": each job's prompt holds the subtitles on screen at the frames its budget sends, as
lmms-eval's `videomme_doc_to_text_subtitle` picks them (a cue holds frames int(start x fps) up to, not including,
int(end x fps)). Every expected prompt is written out by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.dataset_files import videomme_fixture

from engine.config.datasets import VideoMMESpec
from engine.datasets import build_adapter
from engine.datasets._subtitles import Cue, subtitles_at

SRT = """1
00:00:00,000 --> 00:00:02,000
<font color="white" size=".72c">hello there</font>

2
00:00:05,000 --> 00:00:07,500
<font color="white" size=".72c">second line</font>

3
00:00:07,500 --> 00:00:08,050
<font color="white" size=".72c">third</font>
"""
# at 10 fps: hello there holds frames 0-19, second line 50-74, third 75-79 (int(80.5) = 80 is past its end)

HEAD = "This video's subtitles are listed below: \n"
INSTRUCTION = ("Select the best answer to the following multiple-choice question based on the video and the subtitles."
               " Respond with only the letter (A, B, C, or D) of the correct option.\n")
BODY = "How many apples are there in question 1?\nA. One.\nB. Two.\nC. Three.\nD. Four.\nThe best answer is:"


def _adapter(tmp_path: Path, **over: object):
    ann, media = videomme_fixture(tmp_path)
    subs = tmp_path / "subtitle"
    subs.mkdir()
    (subs / "fFjv93ACGo8.srt").write_text(SRT)
    spec = VideoMMESpec.model_validate({"name": "videomme", "annotations": ann, "media_root": media,
                                        "subtitles": True, "subtitle_root": subs, **over})
    adapter = build_adapter(spec)
    return adapter, list(adapter.items())


@pytest.mark.parametrize(("indices", "text"), [
    ([0, 33, 66, 99], "hello there\nsecond line"),
    ([19, 20, 49, 75], "hello there\nthird"),  # 20 is past hello there, 49 before second line, 75 past its end
    ([80, 99], ""),  # a file with no cue at the frames sent: nothing between the header and the question
])
def test_each_budget_gets_the_subtitles_at_its_frames(tmp_path: Path, indices: list[int], text: str) -> None:
    adapter, items = _adapter(tmp_path)
    prompt = adapter.job_prompt(items[0], np.array(indices), 10.0)
    assert prompt == HEAD + text + "\n" + INSTRUCTION + BODY


def test_a_text_only_job_gets_every_subtitle_and_a_video_without_a_file_none(tmp_path: Path) -> None:
    adapter, items = _adapter(tmp_path)
    every = HEAD + "hello there\nsecond line\nthird\n" + INSTRUCTION + BODY
    assert adapter.job_prompt(items[0], np.empty(0, np.int64), None) == every == items[0].prompt
    # aBcD1234xyz has no .srt: lmms-eval's "No subtitles available", at every budget and text-only
    missing = HEAD + "No subtitles available\n" + INSTRUCTION + BODY
    assert items[3].question == items[0].question  # question 1 of the other video: the same body
    assert adapter.job_prompt(items[3], np.array([0, 10]), 10.0) == missing == items[3].prompt


def test_without_subtitles_every_job_keeps_the_items_prompt_and_the_version_says_so(tmp_path: Path) -> None:
    ann, media = videomme_fixture(tmp_path)
    plain = build_adapter(VideoMMESpec(name="videomme", annotations=ann, media_root=media))
    item = next(iter(plain.items()))
    assert plain.job_prompt(item, np.array([0, 5]), 10.0) is None
    assert plain.version == "videomme-v1.fs1"  # unchanged: runs without subtitles resume
    adapter, _ = _adapter(tmp_path / "s")
    assert adapter.version == "videomme-v1.fs1-subs-at-frames"
    strict, _ = _adapter(tmp_path / "t", extraction="strict")
    assert strict.version == "videomme-v1.fs1-strict-subs-at-frames"


def test_frames_not_seconds_decide_as_lmms_eval_does() -> None:
    """A cue from 1.001 s at 29.97 fps starts at frame int(29.99997) = 29, whose time (0.968 s) is before the cue:
    lmms-eval's frame rule keeps it."""
    cues = [Cue(1.001, 2.0, "x"), Cue(3.0, 4.0, "y")]
    assert subtitles_at(cues, [29], 29.97) == ["x"]
    assert subtitles_at(cues, [28, 59, 60], 29.97) == []  # 59 = int(2.0 x 29.97) is past x's end; y from 89
    assert subtitles_at(cues, None, None) == ["x", "y"]
    assert subtitles_at(cues, [], 29.97) == []
    assert subtitles_at(cues, [119, 89], 29.97) == ["y"]  # in time order, whatever the order of the frames
