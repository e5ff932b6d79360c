"""A bridged lmms-eval image task's official score is what lmms-eval's own evaluator reports on the same items.

The task is ``pope`` (the installed lmms-eval's YAML and utils, unmodified) over a local copy of its dataset in its
real schema (`helpers.lmms_pope`: images embedded in the parquet, which the task's doc_to_visual returns as one PIL
image per document).

1. framesweep sweeps it on the real CPU engine with the trained tiny model `tiny:qwen2_5_vl_seen`: an image task is
   asked once per document, as one image, at its image budget (1 frame), whatever the frame budgets; the adapter
   writes each document's image once, as PNG, to the run's image cache. Answers are generated as lmms-eval
   generates them (``scoring = "generate"``, the task's generation_kwargs).
2. lmms-eval's own evaluator (`simple_evaluate`) runs the task on the same documents with `ReplayLmms` in its image
   mode, which answers each request with the response framesweep's row recorded for that document after checking:
   - its ``contexts`` (the task's doc_to_text) is the text the row was asked with: the row's `prompt_hash`, rebuilt
     from ``contexts`` in the Qwen2.5-VL chat template around one image (``<|image_pad|>``);
   - its visual (the task's doc_to_visual) is one PIL image whose pixels are those of the image file the row was
     asked with (the adapter's image cache).
3. lmms-eval's reported ``pope_accuracy`` (the task's first metric) equals framesweep's `lmms_eval_score`, and each
   of POPE's other reported scores (precision, recall, F1, yes ratio) equals the task's own aggregation of that
   metric over the rows' per-document results (`score_detail`: POPE's process_results gives every metric the same
   per-document dict), so all five are computed from framesweep's rows.

The trained model answers with one letter, never "yes" or "no": every answer is wrong, so the scores are POPE's
numbers for such a model (accuracy, precision, recall and F1 0; the yes ratio that of the ground truth), not a
spread. lmms-eval's ``_enable_reentrant_filelocks`` is replaced as in tests/e2e/test_lmms_parity.py (filelock 4).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.lmms import NEEDS_LMMS, empty_hf_home
from helpers.lmms_parity import Task, lmms_eval_results, official, register_replay, replay_file, sweep
from helpers.lmms_pope import PIXELS, POPE, pope_release

from engine.datasets._lmms_tasks import aggregate
from engine.results import ResultsDir

pytestmark = [
    pytest.mark.engine,  # starts processes (see conftest: the fast tier)
    *NEEDS_LMMS,
]

METRICS = ("pope_accuracy", "pope_precision", "pope_recall", "pope_f1_score", "pope_yes_ratio")
IMAGE_FRAMES = 1  # the image budget's frame count


def test_an_image_tasks_official_scores_are_lmms_evals_own(tmp_path: Path, fs_cache: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    empty_hf_home(tmp_path / "hf", monkeypatch)
    task = Task("pope", [{"question_id": qid} for qid, *_ in POPE], None, "test", "", METRICS[0])
    releases = {"pope": pope_release(tmp_path / "pope")}
    spec = {"image_cache": str(tmp_path / "images")}
    sweep(tmp_path / "out", releases, (4,), extra=spec)
    rows = ResultsDir.open(tmp_path / "out").scan().collect().sort("item_id")
    assert rows["item_id"].to_list() == [q for q, *_ in POPE]
    assert set(rows["budget_id"]) == {"image"} and set(rows["frames"]) == {IMAGE_FRAMES}
    assert set(rows["task_kind"]) == {"yesno"} and rows["correct"].null_count() == 0  # scored right or wrong
    assert set(rows["dataset_version"]) == {"lmms_eval-0.7.3/pope@0.0/pope_accuracy:score"}
    scores, _ = official(tmp_path / "out")

    from lmms_eval import evaluator

    monkeypatch.setattr(evaluator, "_enable_reentrant_filelocks", lambda: None)  # filelock 4: see the docstring
    replay = register_replay()
    replay.seen.clear()
    table = replay_file(tmp_path / "replay.json", rows, IMAGE_FRAMES, [task], releases, media="image", spec=spec)
    result = lmms_eval_results(task, releases["pope"], table)
    reported = {m: float(result["results"]["pope"][f"{m},none"]) for m in METRICS}
    assert reported["pope_accuracy"] == pytest.approx(scores[("pope", IMAGE_FRAMES)], abs=1e-9)
    details = [json.loads(d) for d in rows["score_detail"]]
    for metric in METRICS:
        assert reported[metric] == pytest.approx(aggregate("pope", metric, details), abs=1e-9), metric
    assert sorted(s["doc_id"] for s in result["samples"]["pope"]) == list(range(len(POPE)))
    assert len(replay.seen) == rows.height  # every request lmms-eval made was one row of the sweep
    sizes = {(p.shape[1], p.shape[0]) for p in PIXELS}
    for seen in replay.seen:
        assert seen["prompt_hash"] and seen["pixels"] and seen["size"] in sizes, seen
