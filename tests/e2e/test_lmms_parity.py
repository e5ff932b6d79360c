"""A bridged lmms-eval run's official score per budget is what lmms-eval's own evaluator reports on the same items.

Five real lmms-eval tasks (the installed package's YAMLs and utils, unmodified): ``videomme``, ``nextqa_mc_test``,
``perceptiontest_val_mc``, ``egoschema_subset`` and ``longvideobench_val_v`` (its video variant, no subtitles in
the prompt), over small local data in each task's real schema, written here (no hub). Their videos are the synthetic v2 clips
the trained tiny model `tiny:qwen2_5_vl_seen` learned (64 frames, 8 fps) and their questions are those clips'
questions, so the model's answers depend on what it is shown and vary with the budget.

1. framesweep sweeps the five tasks on the real CPU engine at 2, 4 and 8 frames (policy ``uniform``), the answers
   generated as lmms-eval generates them (``scoring = "generate"``, the task's generation_kwargs).
2. lmms-eval's own evaluator (`lmms_eval.evaluator.simple_evaluate`) runs each task on the same documents, once per
   budget, with `ReplayLmms`, a model registered as lmms-eval 0.7.3 registers one (a `ModelManifest` in
   `MODEL_REGISTRY_V2`, the class an `lmms` subclass). It is the one stand-in: it answers each request with the
   response framesweep's row recorded for that document at that budget. lmms-eval's own wrappers cannot give the
   model framesweep's inputs on a CPU machine: its ``vllm`` wrapper sends a video as separate PNG images (plus a
   last frame, below), and its transformers ``qwen2_5_vl`` wrapper computes the video's positions differently from
   vLLM, so the same tiny model answers otherwise. What the replay checks per request, before answering:
   - its ``contexts`` (the task's doc_to_text, as lmms-eval built it) is the text the row was asked with: the row
     keeps `prompt_hash` (the family's whole prompt and the media uuid), rebuilt here from ``contexts`` in the
     Qwen2.5-VL chat template framesweep sends;
   - its visual (the task's doc_to_visual) is the one video file the row was decoded from;
   - the frame indices lmms-eval's ``vllm`` wrapper samples (its own `VLLM.encode_video`, run on that file with a
     PyAV reader in place of decord, which is not installed) are the row's `frame_indices`. They agree here because
     framesweep's ``uniform`` policy is ``rint(linspace(0, n - 1, k))`` and lmms-eval's is
     ``linspace(0, n - 1, k, dtype=int)`` (truncation): the two are equal where every point of the linspace has
     a fractional part below one half, as for 64 frames at 2, 4 and 8 (63 / (k - 1) is whole). They differ
     elsewhere (64 frames at 3: framesweep 0, 32, 63; lmms-eval 0, 31, 63); no framesweep policy truncates.
     lmms-eval also appends the last frame where the linspace lacks it, which only happens at k = 1 (it sends
     frames 0 and n - 1) and k = 0 (frame n - 1; framesweep's 0 frames is text only): those budgets are not
     compared (`test_where_lmms_evals_sampling_differs_from_uniform`).
3. lmms-eval's reported score of the task's first metric, per budget, equals framesweep's `lmms_eval_score` of that
   budget in the metrics document, and framesweep's paired metrics are over the same documents.

EgoSchema's and LongVideoBench's parsers pick ``random.choice`` of the letters for a response that holds none:
lmms-eval draws from its one seed per run (so the letter depends on the documents before), framesweep from a state
seeded by the item and the response (`engine.datasets.lmms_eval`). The two sides agree only where no draw decides a
row, and that is what holds here: the trained model answers with letters, and the test asserts that every EgoSchema
and LongVideoBench response of the sweep is scored with ``random.choice`` made to raise.

lmms-eval 0.7.3's evaluator calls `_enable_reentrant_filelocks`, which imports ``filelock._api``, a module
filelock 4 removed: with filelock 4 (framesweep's environment) it cannot start. The test replaces that one patch (a
re-entrancy fix for dataset locks shared by several processes) with a no-op; the tasks load and score unchanged.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from helpers.lmms import NEEDS_LMMS, empty_hf_home
from helpers.lmms_parity import LETTERS, Task, lmms_eval_reports, official, register_replay, release, replay_file, sweep

from engine.datasets import build_adapter
from engine.datasets.lmms_eval import LmmsEvalSpec
from engine.datasets.synthetic import SyntheticBenchmark, SyntheticDatasetSpec
from engine.frames.plan import uniform
from engine.results import ResultsDir

pytestmark = [
    pytest.mark.engine,  # starts processes (see conftest: the fast tier)
    *NEEDS_LMMS,
]

SEED, VIDEOS, KINDS = 77, 3, ("first_colour", "last_colour", "flash_count")
DRAWING = ("egoschema_subset", "longvideobench_val_v")  # tasks whose parser draws a letter for a letterless answer
BUDGETS = (2, 4, 8)
# Video-MME's task type of each synthetic question (its aggregation counts only the categories it knows)
TASK_TYPES = {"first_colour": "Attribute Perception", "last_colour": "Temporal Perception",
              "flash_count": "Counting Problem"}


def _tasks(root: Path) -> tuple[list[Task], dict[str, Path]]:
    """Video-MME, NExT-QA, PerceptionTest, EgoSchema and LongVideoBench documents asking the synthetic clips'
    questions; the clips by video id."""
    bench = SyntheticBenchmark(SyntheticDatasetSpec(name="synthetic", version=2, n_videos=VIDEOS, seed=SEED,
                                                    root=root))
    items = [it for it in bench.items() if it.item_id.rsplit("/", 1)[1] in KINDS]
    videos = {it.video_id: it.video_path for it in items}
    videomme = [{"video_id": f"{i:03d}", "duration": "short", "domain": "Knowledge", "sub_category": "Humanity & History",
                 "url": "u", "videoID": it.video_id, "question_id": f"{i:03d}-1", "task_type": TASK_TYPES[it.task_type],
                 "question": it.question, "options": [f"{LETTERS[j]}. {o}" for j, o in enumerate(it.options)],
                 "answer": it.answer} for i, it in enumerate(items)]
    nextqa = [{"video": it.video_id, "frame_count": 64, "width": 112, "height": 84, "qid": i, "type": "CW",
               "question": it.question, **{f"a{j}": o for j, o in enumerate((*it.options, "none of them"))},
               "answer": LETTERS.index(it.answer)} for i, it in enumerate(items)]
    perception = [{"video_name": it.video_id, "question_id": 100 + i, "question": it.question,
                   "options": list(it.options), "answer_id": LETTERS.index(it.answer), "area": "semantics",
                   "reasoning": "descriptive", "tag": [it.task_type]} for i, it in enumerate(items)]
    # EgoSchema's Subset: five `option` lines "A. ...", `answer` the option's index as a string
    egoschema = [{"question_idx": f"q{i}", "question": it.question, "video_idx": it.video_id,
                  "option": [f"{LETTERS[j]}. {o}" for j, o in enumerate((*it.options, "none of them"))],
                  "answer": str(LETTERS.index(it.answer))} for i, it in enumerate(items)]
    # LongVideoBench's validation split: option0..option4 ("N/A" past the last), correct_choice an index
    lvb = [{"video_id": it.video_id, "video_path": f"{it.video_id}.mp4", "subtitle_path": f"{it.video_id}_en.json",
            "duration": 8.0, "duration_group": 15, "starting_timestamp_for_subtitles": 0.0, "question": it.question,
            "question_wo_referring_query": it.question, "candidates": list(it.options),
            **{f"option{j}": o for j, o in enumerate((*it.options, "N/A"))}, "correct_choice": LETTERS.index(it.answer),
            "id": f"lvb-{i}", "position": [], "topic_category": "NP-News-Programs", "question_category": "S2E",
            "level": "L1-Perception", "view_count": 1} for i, it in enumerate(items)]
    return ([Task("videomme", videomme, None, "test", "videomme/data", "videomme_perception_score"),
             Task("nextqa_mc_test", nextqa, "MC", "test", "nextqa/NExTVideo", "exact_match"),
             Task("perceptiontest_val_mc", perception, "mc_question_val", "validation", "perceptiontest_val/videos",
                  "accuracy"),
             Task("egoschema_subset", egoschema, "Subset", "test", "egoschema/videos", "score"),
             Task("longvideobench_val_v", lvb, None, "validation", "datasets/longvideobench/videos", "lvb_acc")],
            videos)


def _no_draw_decides(rows: pl.DataFrame, releases: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Every response of the sweep to a task whose parser draws a letter for a letterless answer is scored by the
    task's own process_results (through the bridge) with `random.choice` raising: no row was decided at random."""
    def no_draw(seq: object) -> object:
        raise AssertionError(f"the task's parser drew a letter at random among {seq}")

    for name in DRAWING:
        bridge = build_adapter(LmmsEvalSpec(name="lmms_eval", task=name, dataset_path=releases[name]))
        items = {it.item_id: it for it in bridge.load()}
        mine = rows.filter(pl.col("dataset") == name)
        assert mine.height == len(items) * len(BUDGETS)
        with monkeypatch.context() as patch:
            patch.setattr(random, "choice", no_draw)
            for row in mine.iter_rows(named=True):
                assert bridge.score(items[row["item_id"]], row["response"]).score == row["score"], row


def test_where_lmms_evals_sampling_differs_from_uniform() -> None:
    """framesweep's ``uniform`` rounds lmms-eval's linspace; lmms-eval's vllm wrapper truncates it and appends the
    last frame when missing. Equal on 64 frames at 2, 4, 8 (the budgets compared); not at 3, 1 or 0."""
    def lmms(n: int, k: int) -> list[int]:  # lmms_eval/models/simple/vllm.py, VLLM.encode_video
        picked = np.linspace(0, n - 1, k, dtype=int)
        return (picked if n - 1 in picked else np.append(picked, n - 1)).tolist()

    for k in BUDGETS:
        assert uniform(64, 8.0, k, 0).tolist() == lmms(64, k)
    assert (uniform(64, 8.0, 3, 0).tolist(), lmms(64, 3)) == ([0, 32, 63], [0, 31, 63])
    assert (uniform(64, 8.0, 1, 0).tolist(), lmms(64, 1)) == ([0], [0, 63])
    assert lmms(64, 0) == [63]


def test_the_official_score_per_budget_is_lmms_evals_own(tmp_path: Path, fs_cache: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    home = empty_hf_home(tmp_path / "hf", monkeypatch)
    tasks, videos = _tasks(tmp_path / "clips")
    releases = {}
    for task in tasks:
        releases[task.name] = release(tmp_path / "releases", task)
        (home / task.media).mkdir(parents=True)
        for video_id, path in videos.items():
            shutil.copy(path, home / task.media / f"{video_id}.mp4")
    sweep(tmp_path / "out", releases, BUDGETS)
    rows = ResultsDir.open(tmp_path / "out").scan().collect()
    assert rows.height == sum(len(t.docs) for t in tasks) * len(BUDGETS)
    answers = rows["response"].to_list()
    assert len(set(answers)) > 1, answers  # the trained model's answers vary: the scores below are no constant
    scores, paired = official(tmp_path / "out")
    _no_draw_decides(rows, releases, monkeypatch)

    from lmms_eval import evaluator

    monkeypatch.setattr(evaluator, "_enable_reentrant_filelocks", lambda: None)  # filelock 4: see the docstring
    replay = register_replay()
    replay.seen.clear()
    for task in tasks:
        for frames in BUDGETS:
            table = replay_file(tmp_path / f"replay-{task.name}-{frames}.json", rows, frames, tasks, releases)
            reported, doc_ids = lmms_eval_reports(task, releases[task.name], table)
            assert reported == pytest.approx(scores[(task.name, frames)], abs=1e-9), (task.name, frames)
            # framesweep's paired metrics are over the documents lmms-eval scored, at every budget
            assert doc_ids == list(range(len(task.docs))) == list(range(paired[task.name]))
            mine = rows.filter((pl.col("dataset") == task.name) & (pl.col("frames") == frames))
            assert sorted(mine["item_id"]) == sorted(task.key(i) for i in doc_ids)
    assert len(replay.seen) == len(rows)  # every request lmms-eval made was one row of the sweep
    for seen in replay.seen:
        lmms_indices, row_indices = seen["indices"]
        assert seen["prompt_hash"] and seen["video"] and lmms_indices == row_indices, seen
        assert seen["n_frames"][0] == seen["n_frames"][1] == 64, seen  # the frame count both sample from
