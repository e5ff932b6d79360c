"""Video-MME v1: the real parquet layout, the official prompt and extraction, bad inputs, accuracy."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from helpers.dataset_files import VIDEOMME_SCHEMA, touch, videomme_fixture, videomme_row, write_parquet
from polars.testing import assert_frame_equal

from engine.config.datasets import VideoMMESpec
from engine.datasets import build_adapter
from engine.datasets._subtitles import read_srt
from engine.datasets.errors import DatasetError
from engine.datasets.scoring_rules import videomme_accuracy
from engine.datasets.videomme import subtitle_prompt
from engine.results.schema import RESULT_SCHEMA


def _spec(ann: Path, media: Path, **over: object) -> VideoMMESpec:
    return VideoMMESpec.model_validate({"name": "videomme", "annotations": ann, "media_root": media, **over})


def test_items_prompt_and_paths(tmp_path: Path) -> None:
    ann, media = videomme_fixture(tmp_path)
    adapter = build_adapter(_spec(ann, media))
    items = list(adapter.items())
    assert [it.item_id for it in items] == ["001-1", "001-2", "001-3", "002-1", "002-2", "002-3"]
    first = items[0]
    assert first.prompt == (
        "Select the best answer to the following multiple-choice question based on the video. "
        "Respond with only the letter (A, B, C, or D) of the correct option.\n"
        "How many apples are there in question 1?\nA. One.\nB. Two.\nC. Three.\nD. Four.\nThe best answer is:"
    )
    assert first.options == ("One.", "Two.", "Three.", "Four.")
    assert (first.answer, first.kind, first.video_id) == ("B", "mcq", "fFjv93ACGo8")
    assert (first.task_type, first.category, first.duration) == ("Counting Problem", "Knowledge", "short")
    assert first.extra["sub_category"] == "Humanity & History"
    assert first.dataset_version == adapter.version == "videomme-v1.fs1"
    assert first.video_path == (media / "fFjv93ACGo8.mp4").resolve()
    # A missing video is not an adapter error: the item keeps its resolved path (the run records error rows).
    assert items[3].video_path == (media / "aBcD1234xyz.mp4").resolve()
    assert not items[3].video_path.exists()


def test_duration_filter_and_limit(tmp_path: Path) -> None:
    ann, media = videomme_fixture(tmp_path)
    assert {it.duration for it in build_adapter(_spec(ann, media, durations=["medium"])).items()} == {"medium"}
    assert len(list(build_adapter(_spec(ann, media, limit=2)).items())) == 2


@pytest.mark.parametrize(("response", "official", "strict"), [
    ("B", "B", "B"),
    ("The best answer is C.", "C", "C"),
    ("Answer: C", "A", "C"),  # the official rule takes the capital A of "Answer"
    ("The best option is (D)", "D", "D"),
    ("", "", ""),
    ("there is no letter in this rather long reply with many many words", "", ""),
])
def test_extraction_official_and_strict(tmp_path: Path, response: str, official: str, strict: str) -> None:
    ann, media = videomme_fixture(tmp_path)
    assert build_adapter(_spec(ann, media)).extract(response) == official
    assert build_adapter(_spec(ann, media, extraction="strict")).extract(response) == strict


def test_score_one_response(tmp_path: Path) -> None:
    ann, media = videomme_fixture(tmp_path)
    adapter = build_adapter(_spec(ann, media))
    item = next(iter(adapter.items()))
    assert adapter.score(item, "The answer is B.").correct is True
    s = adapter.score(item, "I cannot tell")
    assert (s.pred, s.correct, s.score) == (None, False, 0.0)


SRT = """1
00:00:00,000 --> 00:00:02,000
<font color="white" size=".72c">hello there</font>

2
00:00:05,000 --> 00:00:07,500
<font color="white" size=".72c">second line</font>
"""


def test_subtitles(tmp_path: Path) -> None:
    ann, media = videomme_fixture(tmp_path)
    subs = tmp_path / "subtitle"
    subs.mkdir()
    (subs / "fFjv93ACGo8.srt").write_text(SRT)
    items = list(build_adapter(_spec(ann, media, subtitles=True, subtitle_root=subs)).items())
    with_subs, without = items[0], items[3]
    assert with_subs.subtitle_path == (subs / "fFjv93ACGo8.srt").resolve()
    assert with_subs.prompt.startswith(
        "This video's subtitles are listed below: \nhello there\nsecond line\n"
        "Select the best answer to the following multiple-choice question based on the video and the subtitles."
    )
    assert "No subtitles available\n" in without.prompt
    # Per budget: only the cues on screen at the frames sent (frames 5 and 30 of a 10 fps video: 0.5 s and 3 s).
    cues = read_srt(with_subs.subtitle_path)
    assert "hello there\nSelect" in subtitle_prompt(with_subs, cues, [5, 30], 10.0)
    assert "second line" not in subtitle_prompt(with_subs, cues, [5, 30], 10.0)
    with pytest.raises(ValueError, match="subtitle_root"):
        _spec(ann, media, subtitles=True)


def test_wrong_column_type_and_missing_column(tmp_path: Path) -> None:
    schema = {**VIDEOMME_SCHEMA, "options": pl.String()}
    rows = [{**videomme_row("001", "v1", 1), "options": "A. x\nB. y"}]
    ann = write_parquet(tmp_path / "bad.parquet", rows, schema)
    media = tmp_path / "data"
    media.mkdir()
    with pytest.raises(DatasetError) as err:
        list(build_adapter(_spec(ann, media, strict=False)).items())  # fatal whatever strict says
    assert "bad.parquet" in str(err.value) and "column 'options' has type String" in str(err.value)
    schema = {k: v for k, v in VIDEOMME_SCHEMA.items() if k != "answer"}
    ann = write_parquet(tmp_path / "short.parquet", [{k: v for k, v in videomme_row("001", "v1", 1).items()
                                                      if k != "answer"}], schema)
    with pytest.raises(DatasetError, match=r"short\.parquet: missing column 'answer'"):
        list(build_adapter(_spec(ann, media)).items())


def _bad_rows() -> list[dict[str, object]]:
    return [
        videomme_row("001", "v1", 1),
        videomme_row("001", "v1", 2, answer="E"),
        videomme_row("001", "v1", 3, question=None),
        videomme_row("002", "v2", 1, duration="eternal"),
    ]


def test_malformed_rows_listed_together(tmp_path: Path) -> None:
    ann, media = videomme_fixture(tmp_path, _bad_rows())
    with pytest.raises(DatasetError) as err:
        list(build_adapter(_spec(ann, media)).items())
    msg = str(err.value)
    assert "3 problem(s)" in msg
    assert "test-00000-of-00001.parquet: row 1: answer: expected one of the option letters, got 'E'" in msg
    assert "row 2: field 'question' is null" in msg
    assert "row 3: duration: expected short, medium or long" in msg


def test_not_strict_skips_and_reports(tmp_path: Path) -> None:
    ann, media = videomme_fixture(tmp_path, _bad_rows())
    adapter = build_adapter(_spec(ann, media, strict=False))
    assert [it.item_id for it in adapter.items()] == ["001-1"]
    assert [p.row for p in adapter.problems] == [1, 2, 3]


def test_escaping_video_is_rejected(tmp_path: Path) -> None:
    outside = touch(tmp_path / "secret.mp4")
    rows = [videomme_row("001", "v1", 1), videomme_row("002", "../secret", 1)]
    ann, media = videomme_fixture(tmp_path, rows)
    with pytest.raises(DatasetError) as err:
        list(build_adapter(_spec(ann, media, strict=False)).items())
    msg = str(err.value)
    assert "test-00000-of-00001.parquet: row 1 (item 002-1)" in msg and "escapes its root" in msg
    assert str(outside) in msg


def test_missing_annotations_and_media_root(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="annotation file not found"):
        list(build_adapter(_spec(tmp_path / "nope.parquet", tmp_path)).items())
    ann, _ = videomme_fixture(tmp_path)
    with pytest.raises(DatasetError, match="media_root does not exist"):
        list(build_adapter(_spec(ann, tmp_path / "no-such-dir")).items())


def _rows(preds: list[str | None], correct: list[bool]) -> pl.LazyFrame:
    n = len(preds)
    base = {c: [None] * n for c in RESULT_SCHEMA}
    base.update(model_id=["m"] * n, dataset=["videomme"] * n, budget_id=["f16"] * n, status=["ok"] * n,
                item_id=[str(i) for i in range(n)], pred=preds, correct=correct, answer=["B"] * n)
    return pl.LazyFrame(base, schema=RESULT_SCHEMA)


def test_accuracy_excluding_and_counting_empty() -> None:
    rows = _rows(["B", "B", "A", None, "", "B"], [True, True, False, False, False, True])
    got = videomme_accuracy(rows).collect()
    want = pl.DataFrame({"model_id": ["m"], "dataset": ["videomme"], "budget_id": ["f16"], "n": [6],
                         "n_empty": [2], "n_correct": [3], "accuracy_official": [3 / 4], "accuracy_counted": [3 / 6]})
    assert_frame_equal(got, want, check_dtypes=False)


def test_duplicate_item_ids(tmp_path: Path) -> None:
    rows = [videomme_row("001", "v1", 1), videomme_row("001", "v1", 1), videomme_row("001", "v1", 2)]
    ann, media = videomme_fixture(tmp_path, rows)
    with pytest.raises(DatasetError, match=r"\(item 001-1\): item id appears 2 times"):
        list(build_adapter(_spec(ann, media)).items())
    adapter = build_adapter(_spec(ann, media, strict=False))
    assert [it.item_id for it in adapter.items()] == ["001-2"]
