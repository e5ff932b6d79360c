"""MLVU dev: task folders, option-text answers, the official prompt and check, generation tasks."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.dataset_files import touch, write_json

from engine.config.datasets import MLVUSpec
from engine.datasets import build_adapter
from engine.datasets.errors import DatasetError
from engine.datasets.mlvu import extract_letter_mlvu


def _mc(video: str, q: str, candidates: list[str], answer: str, qtype: str) -> dict[str, object]:
    return {"video": video, "duration": 246, "question": q, "candidates": candidates, "answer": answer,
            "question_type": qtype}


def _fixture(tmp_path: Path) -> tuple[Path, Path]:
    ann, media = tmp_path / "MLVU" / "json", tmp_path / "MLVU" / "video"
    write_json(ann / "1_plotQA.json", [
        _mc("movie101_66.mp4", "What colour is the car?", ["Yellow", "Red", "Blue", "Green"], "Red", "plotQA"),
        _mc("movie101_66.mp4", "Who drives?", ["A man", "A woman"], "A man", "plotQA"),
    ])
    write_json(ann / "2_needle.json", [
        _mc("movie101_66.mp4", "What is hidden?", ["a key", "a coin", "a ring"], "a ring", "findNeedle"),
    ])
    write_json(ann / "8_sub_scene.json", [
        {"video": "subPlot_1.mp4", "duration": 500, "question": "Describe the scene where the man runs.",
         "answer": "The man runs across the bridge.", "question_type": "subPlot",
         "scoring_points": ["man runs", "across the bridge"]},
    ])
    write_json(ann / "9_summary.json", [
        {"video": "summary_1.mp4", "duration": 700, "question": "Summarise the video.",
         "answer": "A dog plays in the park.", "question_type": "summary"},
    ])
    touch(media / "1_plotQA" / "movie101_66.mp4")
    return ann, media


def _spec(ann: Path, media: Path, **over: object) -> MLVUSpec:
    return MLVUSpec.model_validate({"name": "mlvu", "annotation_dir": ann, "media_root": media,
                                    "tasks": ["1_plotQA", "2_needle", "8_sub_scene", "9_summary"], **over})


def test_items_ids_prompts(tmp_path: Path) -> None:
    ann, media = _fixture(tmp_path)
    items = list(build_adapter(_spec(ann, media)).items())
    assert [it.item_id for it in items] == [
        "1_plotQA/movie101_66.mp4#0", "1_plotQA/movie101_66.mp4#1", "2_needle/movie101_66.mp4#0",
        "8_sub_scene/subPlot_1.mp4#0", "9_summary/summary_1.mp4#0",
    ]
    first = items[0]
    assert first.answer == "B" and first.options == ("Yellow", "Red", "Blue", "Green")
    assert first.prompt == ("Question: What colour is the car?\nOptions:\n(A) Yellow\n(B) Red\n(C) Blue\n(D) Green\n"
                            "Only give the best option.")
    assert first.response_prefix == "Best Option: ("
    assert first.system_prompt.startswith("Carefully watch this video and pay attention to every detail.")
    assert first.video_path == (media / "1_plotQA" / "movie101_66.mp4").resolve()
    # Same basename, other folder: another video (here missing; still yielded with its path).
    assert items[2].video_id == "2_needle/movie101_66.mp4" and items[2].answer == "C"
    assert not items[2].video_path.exists()
    sub, summ = items[3], items[4]
    assert (sub.kind, sub.references, sub.task_type) == ("open", ("The man runs across the bridge.",), "subPlot")
    assert sub.extra["scoring_points"] == ["man runs", "across the bridge"]
    assert (summ.kind, summ.prompt) == ("open", "Summarise the video.")


def test_scoring_points_as_references(tmp_path: Path) -> None:
    ann, media = _fixture(tmp_path)
    items = list(build_adapter(_spec(ann, media, subplot_references="answer_and_scoring_points")).items())
    assert items[3].references == ("The man runs across the bridge.", "man runs", "across the bridge")


@pytest.mark.parametrize(("response", "want"), [
    ("B) Red", "B"), ("(B) Red", "B"), ("B", "B"), ("B.", ""), (" B", ""), ("Red", ""), (")", ""),
])
def test_official_check(response: str, want: str) -> None:
    assert extract_letter_mlvu(response, "ABCD") == want


def test_score_mc_and_generation(tmp_path: Path) -> None:
    ann, media = _fixture(tmp_path)
    adapter = build_adapter(_spec(ann, media))
    items = list(adapter.items())
    assert adapter.score(items[0], "B) Red").correct is True
    assert adapter.score(items[0], "A) Yellow").correct is False
    s = adapter.score(items[4], "The dog plays in a park!")
    # "dog plays in park" vs "dog plays in park": articles and punctuation dropped -> identical.
    assert (s.correct, s.score) == (None, 1.0)
    s = adapter.score(items[3], "A man runs.")
    # pred {man, runs}, ref {man, runs, across, bridge}: P = 1, R = 1/2 -> F1 = 2/3.
    assert s.score == pytest.approx(2 / 3)


def test_bad_rows_and_escape(tmp_path: Path) -> None:
    ann, media = _fixture(tmp_path)
    write_json(ann / "2_needle.json", [
        _mc("x.mp4", "Q?", ["a", "b"], "c", "findNeedle"),
        {"video": "y.mp4", "question": 5, "candidates": ["a", "b"], "answer": "a", "question_type": "findNeedle"},
        "not an object",
        _mc("../../../outside.mp4", "Q?", ["a", "b"], "a", "findNeedle"),
    ])
    with pytest.raises(DatasetError) as err:
        list(build_adapter(_spec(ann, media, strict=False)).items())
    msg = str(err.value)
    assert "2_needle.json: row 0: answer 'c' is not one of the candidates" in msg
    assert "2_needle.json: row 1: field 'question': expected a string, got int" in msg
    assert "2_needle.json: row 2: expected an object, got str" in msg
    assert "2_needle.json: row 3 (item 2_needle/../../../outside.mp4#0): media path" in msg


def test_missing_and_invalid_json(tmp_path: Path) -> None:
    ann, media = _fixture(tmp_path)
    (ann / "9_summary.json").write_text("[{broken")
    with pytest.raises(DatasetError) as err:
        list(build_adapter(_spec(ann, media, tasks=["9_summary", "5_order"])).items())
    assert "9_summary.json: not valid JSON" in str(err.value)
    assert "5_order.json: annotation file not found" in str(err.value)
