"""TempCompass: the three parquet configs, options parsed from the question, the official rules."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from helpers.dataset_files import touch, write_parquet

from engine.config.datasets import TempCompassSpec
from engine.datasets import build_adapter
from engine.datasets.errors import DatasetError

SCHEMA = {"video_id": pl.String(), "question": pl.String(), "answer": pl.String(), "dim": pl.String()}
MC_Q = "What is the direction of the car?\nA. left\nB. right\nC. up\nD. down"
CM_Q = ("Which caption matches the video better?\nCaption A: The car goes left.\n"
        "Caption B: The car goes right.")


def _fixture(tmp_path: Path) -> TempCompassSpec:
    root = tmp_path / "TempCompass"
    write_parquet(root / "multi-choice" / "test-00000-of-00001.parquet",
                  [{"video_id": "1008", "question": MC_Q, "answer": "B. right", "dim": "direction"}], SCHEMA)
    write_parquet(root / "yes_no" / "test-00000-of-00001.parquet",
                  [{"video_id": "1008", "question": "Is the car moving right?", "answer": "yes", "dim": "direction"},
                   {"video_id": "1008", "question": "Is the car moving left?", "answer": "no", "dim": "direction"}],
                  SCHEMA)
    write_parquet(root / "caption_matching" / "test-00000-of-00001.parquet",
                  [{"video_id": "1008", "question": CM_Q, "answer": "Caption B: The car goes right.",
                    "dim": "direction"}], SCHEMA)
    touch(tmp_path / "videos" / "1008.mp4")
    return TempCompassSpec(name="tempcompass", annotation_root=root, media_root=tmp_path / "videos")


def test_items_and_prompts(tmp_path: Path) -> None:
    mc, yes, no, cm = list(build_adapter(_fixture(tmp_path)).items())
    assert mc.item_id == "multi-choice/1008/direction#0" and mc.answer == "B"
    assert mc.options == ("left", "right", "up", "down") and mc.question == "What is the direction of the car?"
    assert mc.prompt == MC_Q + "\nPlease directly give the best option:"
    assert (yes.kind, yes.answer, no.answer, no.item_id) == ("yesno", "yes", "no", "yes_no/1008/direction#1")
    assert yes.prompt == "Is the car moving right?\nPlease answer yes or no:"
    assert (cm.answer, cm.options) == ("B", ("The car goes left.", "The car goes right."))
    assert mc.video_path == (tmp_path / "videos" / "1008.mp4").resolve()


@pytest.mark.parametrize(("index", "response", "want"), [
    (0, "B. right", "B"), (0, "B", "B"), (0, "B) right", "B"), (0, "right", ""),
    (1, "Yes, it is.", "yes"), (1, "no", "no"), (1, "Maybe", ""),
    (3, "Caption B", "B"), (3, "The car goes left.", "A"), (3, "caption b: the car goes right.", "B"), (3, "B", "B"),
])
def test_official_rules(tmp_path: Path, index: int, response: str, want: str) -> None:
    adapter = build_adapter(_fixture(tmp_path))
    item = list(adapter.items())[index]
    assert adapter.extract(response, item) == want


def test_bad_rows(tmp_path: Path) -> None:
    spec = _fixture(tmp_path)
    write_parquet(spec.annotation_root / "multi-choice" / "test-00000-of-00001.parquet", [
        {"video_id": "1", "question": "No options here", "answer": "A. x", "dim": "speed"},
        {"video_id": "2", "question": MC_Q, "answer": "E. sideways", "dim": "speed"},
    ], SCHEMA)
    write_parquet(spec.annotation_root / "yes_no" / "test-00000-of-00001.parquet",
                  [{"video_id": "1", "question": "Is it?", "answer": "perhaps", "dim": "speed"}], SCHEMA)
    with pytest.raises(DatasetError) as err:
        list(build_adapter(spec).items())
    msg = str(err.value)
    assert "multi-choice/test-00000-of-00001.parquet: row 0: question: expected option lines" in msg
    assert "row 1: answer 'E. sideways' names none of the options" in msg
    assert "yes_no/test-00000-of-00001.parquet: row 0: answer: expected yes or no, got 'perhaps'" in msg
