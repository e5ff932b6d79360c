"""An lmms-eval task swept across frame budgets on the real CPU engine: lmms-eval's own Video-MME YAML and utils
(unmodified) over a local copy of its dataset in its real schema, real videos under lmms-eval's media folder, the
tiny checkpoint. Every row is keyed by lmms-eval's id, carries the task's prompt, and is scored as the task's own
`process_results` scores its response (computed here independently, from the task's utils).

Random weights answer near-uniformly: the assertions are pipeline facts and equalities with the task's own
scoring, never particular accuracies.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from helpers.lmms import NEEDS_LMMS, empty_hf_home
from helpers.specs import small_spec_dict

from engine.config import parse_spec
from engine.results import ResultsDir
from engine.sweep import Sweep

pytestmark = [
    pytest.mark.engine,  # starts processes (see conftest: the fast tier)
    *NEEDS_LMMS,
]

ASSETS = Path(__file__).resolve().parents[1] / "assets"
DOCS = [
    {"video_id": "001", "duration": "short", "domain": "Knowledge", "sub_category": "Humanity & History", "url": "u1",
     "videoID": "fFjv93ACGo8", "question_id": "001-1", "task_type": "Counting Problem",
     "question": "How many cats are in the video?", "options": ["A. One.", "B. Two.", "C. Three.", "D. Four."],
     "answer": "B"},
    {"video_id": "002", "duration": "short", "domain": "Knowledge", "sub_category": "Humanity & History", "url": "u2",
     "videoID": "aBcD1234xyz", "question_id": "002-1", "task_type": "Object Recognition",
     "question": "What colour is the car?", "options": ["A. Red.", "B. Blue.", "C. Green.", "D. White."],
     "answer": "D"},
]


def _videomme_utils() -> object:
    import lmms_eval

    spec = importlib.util.spec_from_file_location(
        "utils", Path(lmms_eval.__file__).parent / "tasks" / "videomme" / "utils.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("scoring", ["generate", "letter"])  # lmms-eval's way; framesweep's constrained letter
def test_an_lmms_eval_task_as_a_budget_sweep(tmp_path: Path, warm_engine: Path, monkeypatch: pytest.MonkeyPatch,
                                             scoring: str) -> None:
    import ray

    home = empty_hf_home(tmp_path / "hf", monkeypatch)
    release = tmp_path / "videomme_release" / "data"
    release.mkdir(parents=True)
    pl.DataFrame(DOCS).write_parquet(release / "test-00000-of-00001.parquet")
    (home / "videomme" / "data").mkdir(parents=True)
    for doc in DOCS:
        shutil.copy(ASSETS / "tiny.mp4", home / "videomme" / "data" / f"{doc['videoID']}.mp4")
    d = small_spec_dict(tmp_path / "out")
    d["dataset"] = {"name": "lmms_eval", "task": "videomme", "dataset_path": str(release.parent)}
    d["budgets"] = [{"frames": 0}, {"frames": 4}]
    d["prompt"] = {"scoring": scoring, "max_new_tokens": 4}
    try:
        summary = asyncio.run(Sweep(parse_spec(d)).run())
    finally:
        ray.shutdown()
    rows = ResultsDir.open(tmp_path / "out").scan().collect().sort("item_id", "frames")
    assert summary.jobs_failed == 0 and rows.height == 4, rows.select("item_id", "frames", "error_type", "error").to_dicts()
    assert rows["item_id"].to_list() == ["001-1", "001-1", "002-1", "002-1"]  # lmms-eval's question ids
    assert set(rows["dataset"]) == {"videomme"} and rows["frames_sent"].to_list() == [0, 4, 0, 4]
    assert set(rows["dataset_version"]) == {"lmms_eval-0.7.3/videomme@0.0/videomme_perception_score:score"}
    utils = _videomme_utils()
    by_id = {doc["question_id"]: doc for doc in DOCS}
    for row in rows.iter_rows(named=True):
        own = utils.videomme_process_results(by_id[row["item_id"]], [row["response"]])["videomme_perception_score"]
        assert row["score"] == own["score"] and row["correct"] is (own["score"] == 1.0), row
        # the per-document result the official aggregation reads: the task's own, of the row's prediction
        said = row["response"] if scoring == "generate" else row["pred"]
        kept = utils.videomme_process_results(by_id[row["item_id"]], [said])["videomme_perception_score"]
        assert json.loads(row["score_detail"]) == kept, row
