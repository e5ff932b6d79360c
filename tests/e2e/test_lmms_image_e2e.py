"""An lmms-eval image task swept on the real CPU engine: lmms-eval's own POPE YAML and utils (unmodified) over a
local copy of its dataset in its real schema (images embedded in the parquet, decoded by the task as PIL images),
the tiny checkpoint. Each document is asked once, as one image, at the image budget (not at the sweep's frame
budgets), and scored as the task's own `process_results` scores its response.

Random weights answer near-uniformly: the assertions are pipeline facts and equalities with the task's own
scoring, never particular accuracies.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path

import pytest
from helpers.lmms import NEEDS_LMMS, empty_hf_home
from helpers.lmms_pope import POPE, pope_release
from helpers.specs import small_spec_dict

from engine.config import parse_spec
from engine.results import ResultsDir
from engine.sweep import Sweep

pytestmark = [
    pytest.mark.engine,  # starts processes (see conftest: the fast tier)
    *NEEDS_LMMS,
]


def _pope_utils() -> object:
    import lmms_eval

    spec = importlib.util.spec_from_file_location(
        "pope_utils", Path(lmms_eval.__file__).parent / "tasks" / "pope" / "utils.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_lmms_eval_image_task_is_asked_once_as_one_image(tmp_path: Path, warm_engine: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import ray

    empty_hf_home(tmp_path / "hf", monkeypatch)
    d = small_spec_dict(tmp_path / "out")
    d["dataset"] = {"name": "lmms_eval", "task": "pope", "dataset_path": str(pope_release(tmp_path / "pope")),
                    "image_cache": str(tmp_path / "images")}
    d["budgets"] = [{"frames": 0}, {"frames": 4}]
    d["prompt"] = {"scoring": "generate", "max_new_tokens": 4}
    try:
        summary = asyncio.run(Sweep(parse_spec(d)).run())
    finally:
        ray.shutdown()
    rows = ResultsDir.open(tmp_path / "out").scan().collect().sort("item_id")
    assert summary.jobs_failed == 0 and rows.height == 3, rows.select("item_id", "budget_id", "error").to_dicts()
    assert rows["item_id"].to_list() == [q for q, *_ in POPE]
    assert set(rows["budget_id"]) == {"image"} and rows["frames_sent"].to_list() == [1, 1, 1]
    assert set(rows["dataset_version"]) == {"lmms_eval-0.7.3/pope@0.0/pope_accuracy:score"}
    utils = _pope_utils()
    answers = {q: a for q, _, a, *_ in POPE}
    for row in rows.iter_rows(named=True):
        own = utils.pope_process_results({"question_id": row["item_id"], "answer": answers[row["item_id"]]},
                                         [row["response"]])["pope_accuracy"]
        assert row["score"] == own["score"] and json.loads(row["score_detail"]) == own, row
