"""MVBench: per-task video folders, clip bounds, frame folders, the official prompt and check."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.dataset_files import touch, write_json

from engine.config.datasets import MVBenchSpec
from engine.datasets import build_adapter
from engine.datasets.errors import DatasetError
from engine.datasets.mvbench import extract_letter_mvbench


def _fixture(tmp_path: Path) -> MVBenchSpec:
    ann, media = tmp_path / "json", tmp_path / "video"
    write_json(ann / "action_sequence.json", [
        {"video": "ZS9XR.mp4", "question": "What did the person do first?",
         "candidates": ["Took the towel.", "Sat on the bed.", "Opened the door.", "Ate food."],
         "answer": "Sat on the bed.", "start": 11.1, "end": 19.6},
    ])
    write_json(ann / "action_antonym.json", [
        {"video": "166583.webm", "question": "What is the action?",
         "candidates": ["pushing something", "pulling something", "not sure"], "answer": "pulling something"},
    ])
    write_json(ann / "episodic_reasoning.json", [
        {"video": "s01e02_seg02_clip_00", "question": "Why?", "candidates": ["x", "y", "z", "w", "v"],
         "answer": "v", "start": 1.0, "end": 9.5},
    ])
    touch(media / "star" / "Charades_v1_480" / "ZS9XR.mp4")
    (media / "tvqa" / "frames_fps3_hq" / "s01e02_seg02_clip_00").mkdir(parents=True)
    return MVBenchSpec(name="mvbench", annotation_dir=ann, media_root=media,
                       tasks=["action_sequence", "action_antonym", "episodic_reasoning"])


def test_items_prompt_clip_frames(tmp_path: Path) -> None:
    spec = _fixture(tmp_path)
    seq, antonym, episodic = list(build_adapter(spec).items())
    assert seq.item_id == "action_sequence/ZS9XR.mp4#0" and seq.task_type == "Action Sequence"
    assert seq.video_path == (spec.media_root / "star/Charades_v1_480/ZS9XR.mp4").resolve()
    assert (seq.answer, seq.clip) == ("B", (11.1, 19.6))
    assert seq.prompt == ("Question: What did the person do first?\nOptions:\n(A) Took the towel.\n"
                          "(B) Sat on the bed.\n(C) Opened the door.\n(D) Ate food.\nOnly give the best option.")
    assert seq.system_prompt.startswith("Carefully watch the video and pay attention to the cause and sequence")
    assert seq.response_prefix == "Best option:("
    assert (antonym.answer, antonym.clip, antonym.video_id) == ("B", None, "ssv2_video/166583.webm")
    assert (episodic.media_kind, episodic.answer, episodic.letters[-1]) == ("frames", "E", "E")
    assert episodic.video_path.is_dir()


@pytest.mark.parametrize(("response", "want"), [
    ("B) Sat on the bed.", "B"), ("(B) Sat", "B"), ("B", "B"), ("B.", "B"), ("", ""), ("Sat on the bed", ""),
])
def test_official_check(response: str, want: str) -> None:
    assert extract_letter_mvbench(response, "ABCD") == want


def test_bad_rows(tmp_path: Path) -> None:
    spec = _fixture(tmp_path)
    write_json(spec.annotation_dir / "action_sequence.json", [
        {"video": "a.mp4", "question": "q", "candidates": ["x", "y"], "answer": "x"},          # no start/end
        {"video": "b.mp4", "question": "q", "candidates": ["x", "y"], "answer": "x", "start": 5, "end": 2},
        {"video": "c.mp4", "question": "q", "candidates": "x, y", "answer": "x", "start": 0, "end": 1},
    ])
    with pytest.raises(DatasetError) as err:
        list(build_adapter(spec).items())
    msg = str(err.value)
    assert "action_sequence.json: row 0: missing field 'start'" in msg
    assert "row 1: start/end: expected 0 <= start < end" in msg
    assert "row 2: field 'candidates': expected a list of strings, got str" in msg


def test_more_candidates_than_letters_is_a_bad_row(tmp_path: Path) -> None:
    """27 candidates were lettered A..Z and then '[' (past Z); a located row problem now."""
    spec = _fixture(tmp_path)
    many = [f"c{k}" for k in range(27)]
    write_json(spec.annotation_dir / "action_antonym.json", [
        {"video": "166583.webm", "question": "What is the action?", "candidates": many, "answer": "c26"}])
    with pytest.raises(DatasetError) as err:
        list(build_adapter(spec).items())
    assert "action_antonym.json: row 0: candidates: expected at most 26 options (the letters A-Z), got 27" in \
        str(err.value)
