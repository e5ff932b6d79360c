"""Video-MME "w/ subs": by default each job's prompt holds the subtitles on screen at the frames its budget sends,
by lmms-eval's frame test (a cue holds frames int(start x fps) up to, not including, int(end x fps));
``subtitles = "lmms_eval"`` takes lmms-eval's own rule (its 32 frames, a cue's first <font> span). Every expected
prompt is written out by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.dataset_files import videomme_fixture
from helpers.specs import small_spec_dict
from pydantic import ValidationError

from engine.config import parse_spec
from engine.datasets import VideoMMESpec, build_adapter
from engine.datasets._subtitles import Cue, lmms_eval_frames, subtitles_at
from engine.demo.videos import write_h264
from engine.items import Item, Job
from engine.sweep.fingerprint import AnswerPrints

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


def test_frames_not_seconds_decide_as_lmms_eval_does() -> None:
    """A cue from 1.001 s at 29.97 fps starts at frame int(29.99997) = 29, whose time (0.968 s) is before the cue:
    lmms-eval's frame rule keeps it."""
    cues = [Cue(1.001, 2.0, "x"), Cue(3.0, 4.0, "y")]
    assert subtitles_at(cues, [29], 29.97) == ["x"]
    assert subtitles_at(cues, [28, 59, 60], 29.97) == []  # 59 = int(2.0 x 29.97) is past x's end; y from 89
    assert subtitles_at(cues, None, None) == ["x", "y"]
    assert subtitles_at(cues, [], 29.97) == []
    assert subtitles_at(cues, [119, 89], 29.97) == ["y"]  # in time order, whatever the order of the frames


# lmms-eval's rule (subtitles = "lmms_eval"), on a real 10 s video at 10 fps (100 frames). Its 32 frames are
# np.linspace(0, 99, 32, dtype=int): i x 99/31 truncated, i = 0..31.
LMMS_FRAMES = [0, 3, 6, 9, 12, 15, 19, 22, 25, 28, 31, 35, 38, 41, 44, 47, 51, 54, 57, 60, 63, 67, 70, 73, 76, 79,
               83, 86, 89, 92, 95, 99]
FONT = '<font color="white" size=".72c">'
MULTI_SRT = f"""1
00:00:00,000 --> 00:00:00,250
{FONT}first of A</font>
{FONT}second of A</font>

2
00:00:01,000 --> 00:00:01,150
{FONT}b line</font>

3
00:00:02,000 --> 00:00:02,500
plain words

4
00:00:03,000 --> 00:00:04,000
{FONT}spans
two lines</font>

5
00:00:06,000 --> 00:00:07,000
{FONT}old E</font>

6
00:00:06,000 --> 00:00:07,000
{FONT}new E</font>

7
00:00:09,000 --> 00:00:10,000
{FONT}last</font>
{FONT}cut</font>
"""
# frames at 10 fps: A [0, 2), B [10, 11), C [20, 25), D [30, 40), E and E' [60, 70), G [90, 100).
# lmms-eval's frames: 0 in A; none in B (9, then 12); 22 in C, but C has no <font> span: left out; 31 in D, its
# span across the two lines read as one ("spans two lines"); 60 in E's times, which E' (same start and end)
# took over: "new E"; 92 in G, first span only: "last".
LMMS_TEXT = "first of A\nspans two lines\nnew E\nlast"


def _multi(tmp_path: Path, subtitles: object, video: bool = True):
    adapter, items = _adapter(tmp_path, subtitles=subtitles)
    (tmp_path / "subtitle" / "fFjv93ACGo8.srt").write_text(MULTI_SRT)
    if video:
        frames = (np.full((48, 64, 3), 2 * i, dtype=np.uint8) for i in range(100))
        write_h264(items[0].video_path, frames, fps=10, width=64, height=48)
    return build_adapter(adapter.spec), items


def test_lmms_eval_frames_are_its_linspace() -> None:
    assert lmms_eval_frames(100).tolist() == LMMS_FRAMES
    assert lmms_eval_frames(32).tolist() == list(range(32))


def test_lmms_eval_rule_takes_its_own_32_frames_and_first_lines_at_every_budget(tmp_path: Path) -> None:
    adapter, items = _multi(tmp_path, "lmms_eval")
    want = HEAD + LMMS_TEXT + "\n" + INSTRUCTION + BODY
    assert adapter.job_prompt(items[0], np.array([0, 10, 22, 33, 66, 99]), 10.0) == want
    assert adapter.job_prompt(items[0], np.array([50]), 10.0) == want  # the budget's frames change nothing
    assert adapter.job_prompt(items[0], np.empty(0, np.int64), None) == want  # text-only too
    missing = HEAD + "No subtitles available\n" + INSTRUCTION + BODY  # aBcD1234xyz has no .srt, as before
    assert adapter.job_prompt(items[3], np.array([0, 10]), 10.0) == missing


def test_the_default_rule_keeps_every_line_at_the_budgets_frames(tmp_path: Path) -> None:
    """Frames 0, 10, 22, 33, 66, 99 at 10 fps: A, B, C (markup or not), D, E and E' (both), G (both lines)."""
    adapter, items = _multi(tmp_path, True)
    text = "first of A second of A\nb line\nplain words\nspans two lines\nold E\nnew E\nlast cut"
    assert adapter.job_prompt(items[0], np.array([0, 10, 22, 33, 66, 99]), 10.0) == (
        HEAD + text + "\n" + INSTRUCTION + BODY)


def test_lmms_eval_rule_on_a_video_that_does_not_open_lists_no_cue(tmp_path: Path) -> None:
    """The fixture's video is an empty file: OpenCV reads 0 frames at 0 fps, so lmms-eval finds no cue."""
    adapter, items = _multi(tmp_path, "lmms_eval", video=False)
    assert adapter.job_prompt(items[0], np.empty(0, np.int64), None) == HEAD + "\n" + INSTRUCTION + BODY


def test_the_rule_is_in_the_version_and_the_answer_fingerprint(tmp_path: Path) -> None:
    """true keeps the fields and version it had (its rows resume); "lmms_eval" is another answer."""
    ann, media = videomme_fixture(tmp_path)
    (tmp_path / "subtitle").mkdir()
    item = Item(dataset="videomme", dataset_version="v", item_id="q", video_id="v", video_path=None,
                question="q?", options=("a", "b"), answer="A")

    def fields(subtitles: object) -> dict[str, object]:
        ds = {"name": "videomme", "annotations": str(ann), "media_root": str(media), "subtitles": subtitles,
              "subtitle_root": str(tmp_path / "subtitle")}
        spec = parse_spec(small_spec_dict(tmp_path / "out", dataset=ds))
        version = build_adapter(spec.dataset_specs()[0]).version
        prints = AnswerPrints(spec, {"videomme": version}, checkpoints={"tiny": "sha256:x"},
                              templates={"qwen2_5_vl": "t"})
        fp = prints.of(Job("tiny", item, spec.budgets_for(spec.models[0], "videomme")[1]))
        return {k: v for k, v in prints.fields[fp].items() if k.startswith("dataset.")}

    assert fields(True) == {"dataset.adapter": "videomme", "dataset.version": "videomme-v1.fs1-subs-at-frames",
                            "dataset.subtitles": True, "dataset.extraction": "official"}
    assert fields("lmms_eval") == {"dataset.adapter": "videomme",
                                   "dataset.version": "videomme-v1.fs1-subs-lmms-eval",
                                   "dataset.subtitles": "lmms_eval", "dataset.extraction": "official"}


def test_the_subtitles_setting_names_its_values(tmp_path: Path) -> None:
    ann, media = videomme_fixture(tmp_path)
    base = {"name": "videomme", "annotations": ann, "media_root": media}
    with pytest.raises(ValidationError, match="lmms_eval"):
        VideoMMESpec.model_validate({**base, "subtitles": "first_line", "subtitle_root": tmp_path})
    with pytest.raises(ValidationError, match="subtitles = 'lmms_eval' needs subtitle_root"):
        VideoMMESpec.model_validate({**base, "subtitles": "lmms_eval"})
