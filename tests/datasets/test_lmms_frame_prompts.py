"""lmms-eval tasks whose prompt holds subtitles at the frames shown, bridged with each job's prompt built at the
frames that job sends (`engine.datasets._lmms_frames`), on the installed lmms-eval's own YAMLs and utils.

- ``videomme_w_subtitle`` (``frame_num``): lmms-eval lists the cues on screen at its own 32 frames; the bridge lists
  those at the job's frames. Its real H.264 clip (64 frames, 8 fps) carries three cues, at frames 0-15, 16-31 and
  48-63, so which cues a prompt lists is worked out here by hand.
- LongVideoBench with ``insert_interleave_subtitles`` on its video variant (a user's task folder whose YAML is
  ``longvideobench_val_v`` with that key, its utils lmms-eval's own): an ``<image>`` line per frame sent, the
  subtitles that a frame covers between them in time order (worked out by hand from lmms-eval's rule).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.lmms import NEEDS_LMMS, empty_hf_home, hub_release

from engine.datasets import build_adapter
from engine.datasets.errors import DatasetError
from engine.datasets.lmms_eval import LmmsEvalSpec
from engine.demo.videos import write_h264

pytestmark = NEEDS_LMMS

VIDEO = "fFjv93ACGo8"
FPS, N_FRAMES = 8, 64
SRT = """1
00:00:00,000 --> 00:00:02,000
<font color="white" size=".72c">the red one first</font>

2
00:00:02,000 --> 00:00:04,000
<font color="white" size=".72c">then the blue one</font>

3
00:00:06,000 --> 00:00:08,000
<font color="white" size=".72c">green at the end</font>
"""
VIDEOMME_DOC = {"video_id": "001", "duration": "short", "domain": "Knowledge", "sub_category": "Humanity & History",
                "url": "u1", "videoID": VIDEO, "question_id": "001-1", "task_type": "Counting Problem",
                "question": "Which colour comes last?", "options": ["A. Red.", "B. Blue.", "C. Green.", "D. White."],
                "answer": "C"}


@pytest.fixture
def hf_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return empty_hf_home(tmp_path / "hf", monkeypatch)


def _clip(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    frames = (np.full((48, 64, 3), 8 * i % 256, np.uint8) for i in range(N_FRAMES))
    write_h264(path, frames, FPS, 64, 48)
    return path


def _videomme_subs(hf_home: Path) -> Any:
    """The bridge over ``videomme_w_subtitle``: one document, its clip and its subtitles where lmms-eval's utils look."""
    _clip(hf_home / "videomme" / "data" / f"{VIDEO}.mp4")
    (hf_home / "videomme" / "subtitle").mkdir(parents=True)
    (hf_home / "videomme" / "subtitle" / f"{VIDEO}.srt").write_text(SRT)
    data = hub_release(hf_home.parent / "videomme_release", None, "test", [VIDEOMME_DOC])
    return build_adapter(LmmsEvalSpec(name="lmms_eval", task="videomme_w_subtitle", dataset_path=data))


def _cues(prompt: str) -> list[str]:
    """The subtitle lines of a Video-MME w/ subs prompt (between its header and its instruction)."""
    head = "This video's subtitles are listed below: \n"
    assert prompt.startswith(head), prompt
    return [line for line in prompt[len(head):].split("Select the best answer")[0].splitlines() if line]


def test_videomme_with_subtitles_lists_the_cues_at_the_frames_each_job_sends(hf_home: Path) -> None:
    adapter = _videomme_subs(hf_home)
    [item] = adapter.items()
    assert item.dataset_version.endswith("|frames=frame_num"), item.dataset_version
    prompt = adapter.job_prompt  # what the request step asks per job
    assert _cues(prompt(item, np.array([0, 20]), 8.0)) == ["the red one first", "then the blue one"]
    assert _cues(prompt(item, np.array([50]), 8.0)) == ["green at the end"]
    assert _cues(prompt(item, np.array([0, 20, 40, 60]), 8.0)) == [
        "the red one first", "then the blue one", "green at the end"]  # frame 40 (5 s) falls in no cue
    assert _cues(prompt(item, np.array([40]), 8.0)) == []
    assert _cues(prompt(item, np.array([], dtype=int), None)) == []  # a text-only job: no frame, no cue
    # the question and options follow the cues at every budget
    assert "Which colour comes last?\nA. Red.\nB. Blue.\nC. Green.\nD. White." in prompt(item, np.array([50]), 8.0)


def test_at_lmms_evals_own_frames_the_prompt_is_lmms_evals(hf_home: Path) -> None:
    """Where the job sends the frames lmms-eval samples (linspace(0, n - 1, k, dtype=int)), the prompt is exactly the
    task's doc_to_text with frame_num = k: the bridge only moves the frames, never rewrites the task's text."""
    adapter = _videomme_subs(hf_home)
    [item] = adapter.items()
    task = adapter._load_task()
    for k in (1, 2, 3, 5, 32):
        theirs = task.config.doc_to_text(VIDEOMME_DOC, {**task.lmms_eval_specific_kwargs, "frame_num": k})
        ours = adapter.job_prompt(item, np.linspace(0, N_FRAMES - 1, k, dtype=int), 8.0)
        assert ours == theirs, k
    # elsewhere it is not: lmms-eval's 2 frames are 0 and 63 (red, green), the job's 0 and 20 (red, blue)
    theirs = task.config.doc_to_text(VIDEOMME_DOC, {**task.lmms_eval_specific_kwargs, "frame_num": 2})
    assert _cues(theirs) == ["the red one first", "green at the end"]
    assert _cues(adapter.job_prompt(item, np.array([0, 20]), 8.0)) == ["the red one first", "then the blue one"]
    # and the task's module is left as it was: its numpy is numpy again
    assert task.config.doc_to_text.__globals__["np"] is np


LVB_SUBTITLES = [{"timestamp": [0.5, 1.5], "text": "one"}, {"timestamp": [4.5, 5.5], "text": "two"},
                 {"timestamp": [6.5, 7.5], "text": "three"}]
LVB_DOC = {"video_id": "v1", "video_path": "v1.mp4", "subtitle_path": "v1_en.json", "duration": 8.0,
           "starting_timestamp_for_subtitles": 0.0, "question": "What is said last?", "option0": "one",
           "option1": "two", "option2": "three", "option3": "N/A", "option4": "N/A", "correct_choice": 2,
           "id": "lvb-1", "duration_group": 15, "question_category": "TOS", "question_wo_referring_query": "q",
           "topic_category": "S", "level": "L1", "position": [0]}
LVB_POST = "Answer with the option's letter from the given choices directly.\n"


def _lvb_with_subtitles(hf_home: Path, tmp_path: Path) -> Any:
    """A user's task: LongVideoBench's video variant with its interleaved subtitles on (lmms-eval ships them only
    with its image variant, whose visual is 16 frames of its own), its utils lmms-eval's."""
    root = hf_home / "datasets" / "longvideobench"
    _clip(root / "videos" / "v1.mp4")
    (root / "subtitles").mkdir(parents=True)
    (root / "subtitles" / "v1_en.json").write_text(json.dumps(LVB_SUBTITLES))
    data = hub_release(tmp_path / "lvb_release", None, "validation", [LVB_DOC])
    folder = tmp_path / "my_tasks"
    folder.mkdir()
    (folder / "utils.py").write_text("from lmms_eval.tasks.longvideobench.utils import *  # noqa: F403\n")
    (folder / "lvb_v_subs.yaml").write_text(f"""
task: lvb_v_subs
dataset_path: {data}
test_split: validation
doc_to_visual: !function utils.longvideobench_doc_to_visual_v
doc_to_text: !function utils.longvideobench_doc_to_text
doc_to_target: "correct_choice"
generation_kwargs:
  max_new_tokens: 32
  temperature: 0
  do_sample: False
process_results: !function utils.longvideobench_process_results
metric_list:
  - metric: lvb_acc
    aggregation: !function utils.longvideobench_aggregate_results
    higher_is_better: true
lmms_eval_specific_kwargs:
  default:
    pre_prompt: ""
    post_prompt: "{LVB_POST.encode("unicode_escape").decode()}"
    insert_interleave_subtitles: True
""")
    return build_adapter(LmmsEvalSpec(name="lmms_eval", task="lvb_v_subs", include_path=folder))


def test_longvideobench_interleaves_the_subtitles_with_the_frames_each_job_sends(hf_home: Path,
                                                                                tmp_path: Path) -> None:
    adapter = _lvb_with_subtitles(hf_home, tmp_path)
    [item] = adapter.items()
    assert item.dataset_version.endswith("|frames=insert_interleave_subtitles"), item.dataset_version
    question = "What is said last?\nA. one\nB. two\nC. three"
    # frames at 0 s and 5 s: both before or at "two" (5 s), which frame 2 covers; "one" and "three" cover none
    assert adapter.job_prompt(item, np.array([0, 40]), 8.0) == f"<image>\n<image>\ntwo\n{question}\n{LVB_POST}"
    # frames at 0 s, 1 s and 7 s: "one" after the first two, "three" after the third
    assert adapter.job_prompt(item, np.array([0, 8, 56]), 8.0) == (
        f"<image>\n<image>\none\n<image>\nthree\n{question}\n{LVB_POST}")
    # a text-only job: no frame, no subtitle
    assert adapter.job_prompt(item, np.array([], dtype=int), None) == f"\n{question}\n{LVB_POST}"
    import lmms_eval.tasks.longvideobench.utils as lvb

    assert lvb.compute_frame_timestamps(8.0, 4) == [0.0, 2.0, 4.0, 6.0]  # restored after each prompt


def test_a_frame_dependent_prompt_the_bridge_cannot_give_its_frames_is_refused(hf_home: Path, tmp_path: Path) -> None:
    """A user's task with ``frame_num`` whose doc_to_text picks its frames some other way (not through its module's
    ``np``): its prompt would describe frames the model is not shown, so it is refused naming the key."""
    _clip(hf_home / "media" / "v1.mp4")
    data = hub_release(tmp_path / "release", None, "test", [{"vid": "v1", "q": "What?", "a": "A"}])
    folder = tmp_path / "own"
    folder.mkdir()
    (folder / "utils.py").write_text(f"""
import numpy
def my_visual(doc):
    return ["{hf_home / 'media'}/" + doc["vid"] + ".mp4"]
def my_text(doc, kwargs):
    frames = numpy.arange(kwargs["frame_num"])
    return doc["q"] + " " + str(len(frames))
def my_results(doc, results):
    return {{"accuracy": float(results[0].strip() == doc["a"])}}
""")
    (folder / "my_task.yaml").write_text(f"""
task: my_task
dataset_path: {data}
test_split: test
output_type: generate_until
doc_to_visual: !function utils.my_visual
doc_to_text: !function utils.my_text
doc_to_target: "a"
process_results: !function utils.my_results
metric_list:
  - metric: accuracy
    aggregation: mean
    higher_is_better: true
lmms_eval_specific_kwargs:
  default:
    frame_num: 8
""")
    with pytest.raises(DatasetError) as err:
        list(build_adapter(LmmsEvalSpec(name="lmms_eval", task="my_task", include_path=folder)).items())
    assert "lmms-eval task 'my_task': its prompt depends on the frames lmms-eval samples" in str(err.value)
    assert "frame_num" in str(err.value) and "'np'" in str(err.value)


def test_frames_decoded_by_the_task_itself_are_refused_naming_the_video_variant(hf_home: Path,
                                                                                tmp_path: Path) -> None:
    """longvideobench_val_i's doc_to_visual returns 16 frames lmms-eval decoded itself: refused, naming the video
    variant the bridge runs."""
    root = hf_home / "datasets" / "longvideobench"
    _clip(root / "videos" / "v1.mp4")
    (root / "subtitles").mkdir(parents=True)
    (root / "subtitles" / "v1_en.json").write_text(json.dumps(LVB_SUBTITLES))
    data = hub_release(tmp_path / "lvb_release", None, "validation", [LVB_DOC])
    with pytest.raises(DatasetError) as err:
        list(build_adapter(LmmsEvalSpec(name="lmms_eval", task="longvideobench_val_i", dataset_path=data)).items())
    assert "lmms-eval task 'longvideobench_val_i': its doc_to_visual returns 8 images" in str(err.value)
    assert "longvideobench_val_v" in str(err.value)
