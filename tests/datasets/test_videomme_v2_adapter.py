"""Video-MME v2: 8 options in one string, groups of 4, relevance and logic group scores."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from helpers.dataset_files import (
    VIDEOMME_V2_OPTIONS,
    videomme_v2_fixture,
    videomme_v2_row,
)
from helpers.group_tables import group_table
from polars.testing import assert_frame_equal

from engine.datasets import build_adapter
from engine.datasets.errors import DatasetError
from engine.datasets.scoring_rules import videomme_v2_group_scores, videomme_v2_summary
from engine.results.schema import RESULT_SCHEMA


def test_items_and_prompt(tmp_path: Path) -> None:
    items = list(build_adapter(videomme_v2_fixture(tmp_path)).items())
    assert len(items) == 12
    it = items[0]
    assert it.item_id == "001-1" and it.group_id == "001" and it.video_path == (tmp_path / "videos/001.mp4").resolve()
    assert it.letters == list("ABCDEFGH") and it.options[7] == "choice 7" and it.answer == "C"
    assert it.prompt == (
        "Select the best answer to the following multiple-choice question based on the video. "
        "Respond with only the letter (A, B, C, D, E, F, G, or H) of the correct option.\n"
        f"What happens (1)?\n{VIDEOMME_V2_OPTIONS}\nThe best answer is:"
    )
    assert items[4].extra == {"position": 1, "group_type": "logic", "group_structure": "[1,[2,3],4]", "level": 2,
                              "row": 4, "group_size": 4}
    assert (it.task_type, it.category) == ("Causality", "Temporal Dynamics")


@pytest.mark.parametrize(("response", "want"), [
    ("G", "G"), ("Final Answer: F", "F"), ("Answer: H", "H"), ("Option: E", "E"), ("The answer is (B)", "B"),
])
def test_extraction_a_to_h(tmp_path: Path, response: str, want: str) -> None:
    adapter = build_adapter(videomme_v2_fixture(tmp_path))
    assert adapter.extract(response) == want


def test_bad_groups_and_rows(tmp_path: Path) -> None:
    rows = [videomme_v2_row("001", q, "relevance", "[1, 2, 3, 4]") for q in (1, 2, 3)]  # incomplete group
    rows += [videomme_v2_row("002", 1, "logic", "[1, [2, 3]]"), videomme_v2_row("002", 2, "sideways", "[1, 2, 3, 4]"),
             videomme_v2_row("002", 3, "logic", "[1, 2, 3, 4]", answer="Z")]
    with pytest.raises(DatasetError) as err:
        list(build_adapter(videomme_v2_fixture(tmp_path, rows)).items())
    msg = str(err.value)
    assert "group 001: expected questions at positions 1-4, got [1, 2, 3]" in msg
    assert "row 3: group_structure: expected positions 1-4 once each" in msg
    assert "row 4: group_type: expected relevance or logic" in msg
    assert "row 5: answer: expected one of the option letters, got 'Z'" in msg


def _results(correct: dict[str, list[bool]]) -> pl.LazyFrame:
    ids = [f"{g}-{q}" for g, cs in correct.items() for q in range(1, len(cs) + 1)]
    flags = [c for cs in correct.values() for c in cs]
    n = len(ids)
    data = {c: [None] * n for c in RESULT_SCHEMA}
    data.update(model_id=["m"] * n, dataset=["videomme_v2"] * n, budget_id=["f32"] * n, status=["ok"] * n,
                item_id=ids, correct=flags)
    return pl.LazyFrame(data, schema=RESULT_SCHEMA)


def test_group_scores_by_hand(tmp_path: Path) -> None:
    groups = group_table(build_adapter(videomme_v2_fixture(tmp_path)).items())
    rows = _results({
        "001": [True, False, True, True],   # relevance: 3 right -> 900/16
        "002": [True, True, False, True],   # logic [1,[2,3],4]: leading run 2 -> 400/12
        "003": [False, True, True, True],   # logic [[1,2],3,4]: q1 wrong, its parallel q2 right: k = 1 -> 10
    })
    got = videomme_v2_group_scores(rows, groups).collect()
    assert got["group_id"].to_list() == ["001", "002", "003"]
    assert got["n_right"].to_list() == [3, 3, 3]
    assert got["run"].to_list() == [1, 2, 1]
    assert got["score"].to_list() == pytest.approx([56.25, 400 / 12, 10.0])
    summary = videomme_v2_summary(got.lazy()).collect()
    want = pl.DataFrame({"model_id": ["m"], "dataset": ["videomme_v2"], "budget_id": ["f32"], "n_groups": [3],
                         "n_incomplete": [0], "score": [(56.25 + 400 / 12 + 10) / 3], "relevance_score": [56.25],
                         "logic_score": [(400 / 12 + 10) / 2]})
    assert_frame_equal(summary, want, check_dtypes=False)


def test_logic_maps_and_incomplete_group(tmp_path: Path) -> None:
    groups = group_table(build_adapter(videomme_v2_fixture(tmp_path)).items())
    rows = _results({"001": [True, True, True, True], "003": [True, True, True, False], "002": [True, True]})
    got = videomme_v2_group_scores(rows, groups).collect()
    by_group = dict(zip(got["group_id"], got["score"], strict=True))
    assert by_group == {"001": 100.0, "003": 50.0, "002": None}  # 002 has 2 of its 4 answers: no score
    assert dict(zip(got["group_id"], got["complete"], strict=True)) == {"001": True, "002": False, "003": True}
    # the summary: 2 complete groups (relevance 100, logic [[1,2],3,4] run 3 -> 50), 002 counted incomplete
    summary = videomme_v2_summary(got.lazy()).collect()
    want = pl.DataFrame({"model_id": ["m"], "dataset": ["videomme_v2"], "budget_id": ["f32"], "n_groups": [2],
                         "n_incomplete": [1], "score": [(100 + 50) / 2], "relevance_score": [100.0],
                         "logic_score": [50.0]})
    assert_frame_equal(summary, want, check_dtypes=False)


def test_limit_keeps_whole_groups(tmp_path: Path) -> None:
    """limit 6 stops after 2 questions of group 002: its other two come with them (8 items, 2 whole groups);
    limit 1 gives group 001 whole."""
    spec = videomme_v2_fixture(tmp_path)
    assert [it.item_id for it in build_adapter(spec.model_copy(update={"limit": 6})).items()] == [
        "001-1", "001-2", "001-3", "001-4", "002-1", "002-2", "002-3", "002-4"]
    assert [it.item_id for it in build_adapter(spec.model_copy(update={"limit": 1})).items()] == [
        "001-1", "001-2", "001-3", "001-4"]
