"""An open-ended lmms-eval video task's official score per budget is what lmms-eval's own evaluator reports.

The task is ``repcount`` (the installed lmms-eval's YAML and utils, unmodified): repetition counting, answers free
text (no options), scored locally by its first metric ``mae_norm`` (the count the task's `_extract_count` reads in
the answer against the document's ``count``: ``|pred - count| / (count + 0.1)``, the count itself where the answer
holds none), aggregated by lmms-eval's registered ``mean``. No LLM judge, nothing fetched at scoring time.

Its documents are written here in the schema of lmms-lab-eval/repcount (``video``, ``video_id``, ``question``,
``count``, ``action_type``), over the synthetic v2 clips the trained tiny model `tiny:qwen2_5_vl_seen` learned
(64 frames, 8 fps): each clip's flash count asked twice, plainly and listing the counts as the model learned to
read them (``A. 1`` ...). The model answers with one letter, whatever it is asked: its answers vary with the frames
it is shown, but no count can be read in a letter, so each document scores its own count at every budget. The
comparison is still the task's own scoring and aggregation on both sides, per budget.

As in tests/e2e/test_lmms_parity.py (whose docstring says why a replay model, and why lmms-eval's
``_enable_reentrant_filelocks`` is replaced): framesweep sweeps the task at 2, 4 and 8 frames (policy ``uniform``,
the frames lmms-eval's vllm wrapper samples there), answers generated as lmms-eval generates them; lmms-eval's
`simple_evaluate` runs the task with `ReplayLmms`, which answers each request with the row's response after
checking its text, its video file and its frame indices are the row's; the reported ``mae_norm`` per budget equals
framesweep's `lmms_eval_score`. The rows are open items stamped with the metric and its rule (``mae_norm:-value``:
the task declares the metric lower-is-better, so the row's score is minus it), and framesweep's paired score
metrics (the metrics document's ``generation`` block) are over the same documents: their mean per budget is minus
lmms-eval's.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest
from helpers.lmms import NEEDS_LMMS, empty_hf_home
from helpers.lmms_parity import (
    Task,
    generation,
    lmms_eval_reports,
    official,
    register_replay,
    release,
    replay_file,
    sweep,
)

from engine.datasets.synthetic import SyntheticBenchmark, SyntheticDatasetSpec
from engine.results import ResultsDir

pytestmark = [
    pytest.mark.engine,  # starts processes (see conftest: the fast tier)
    *NEEDS_LMMS,
]

SEED, VIDEOS = 78, 4
BUDGETS = (2, 4, 8)
TASK = "repcount"
VERSION = "lmms_eval-0.7.3/repcount@0.0/mae_norm:-value"  # the metric, a number, negated: lower is better


def _task(root: Path) -> tuple[Task, dict[str, Path]]:
    """RepCount documents asking each synthetic clip's flash count (plainly, then with the counts listed)."""
    bench = SyntheticBenchmark(SyntheticDatasetSpec(name="synthetic", version=2, n_videos=VIDEOS, seed=SEED,
                                                    root=root, questions=["flash_count"]))
    items = list(bench.items())
    docs = [{"video": f"{it.video_id}.mp4", "video_id": it.video_id, "question": question,
             "count": int(it.options["ABCD".index(str(it.answer))]), "action_type": "white square flash"}
            for it in items for question in (it.question, it.prompt)]
    return Task(TASK, docs, None, "test", "repcount", "mae_norm"), {it.video_id: it.video_path for it in items}


def test_an_open_tasks_official_score_per_budget_is_lmms_evals_own(tmp_path: Path, fs_cache: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    home = empty_hf_home(tmp_path / "hf", monkeypatch)
    task, videos = _task(tmp_path / "clips")
    releases = {TASK: release(tmp_path / "releases", task)}
    (home / task.media).mkdir(parents=True)
    for video_id, path in videos.items():
        shutil.copy(path, home / task.media / f"{video_id}.mp4")
    sweep(tmp_path / "out", releases, BUDGETS)
    rows = ResultsDir.open(tmp_path / "out").scan().collect()
    assert rows.height == len(task.docs) * len(BUDGETS)
    # open rows (the listed counts are not taken for options: the target is no letter), the metric and rule stamped
    assert set(rows["task_kind"]) == {"open"} and set(rows["dataset_version"]) == {VERSION}
    assert len(set(rows["response"])) > 1, rows["response"].to_list()  # the answers vary with the frames shown
    scores, _ = official(tmp_path / "out")
    means, paired = generation(tmp_path / "out")

    from lmms_eval import evaluator

    monkeypatch.setattr(evaluator, "_enable_reentrant_filelocks", lambda: None)  # filelock 4: see the docstring
    replay = register_replay()
    replay.seen.clear()
    for frames in BUDGETS:
        table = replay_file(tmp_path / f"replay-{frames}.json", rows, frames, [task], releases)
        reported, doc_ids = lmms_eval_reports(task, releases[TASK], table)
        assert reported == pytest.approx(scores[(TASK, frames)], abs=1e-9) and reported > 0, frames
        # framesweep's paired score metrics are over the same rows: their mean is minus the task's mean error
        assert means[(TASK, frames)] == pytest.approx(-reported, abs=1e-9), frames
        assert doc_ids == list(range(len(task.docs))) == list(range(paired[TASK]))
        mine = rows.filter(pl.col("frames") == frames)
        assert sorted(mine["item_id"]) == sorted(task.key(i) for i in doc_ids)
    assert len(replay.seen) == len(rows)  # every request lmms-eval made was one row of the sweep
    for seen in replay.seen:
        lmms_indices, row_indices = seen["indices"]
        assert seen["prompt_hash"] and seen["video"] and lmms_indices == row_indices, seen
        assert seen["n_frames"][0] == seen["n_frames"][1] == 64, seen
