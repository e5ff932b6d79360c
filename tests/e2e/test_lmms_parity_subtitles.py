"""Video-MME with subtitles through the bridge: each budget's prompt lists the subtitles at the frames it sends,
and where those are the frames lmms-eval samples, the prompt and the official score are lmms-eval's own.

lmms-eval's ``videomme_w_subtitle`` lists the cues on screen at ``np.linspace(0, n - 1, frame_num, dtype=int)``
with ``frame_num`` fixed by its YAML (32), whatever the model is shown; the bridge builds each job's prompt with
the task's own doc_to_text at the job's frames (`engine.datasets._lmms_frames`). The test sweeps the task's real
YAML and utils (unmodified) over synthetic v2 clips (64 frames, 8 fps; the trained tiny model's questions) whose
subtitle files hold cues at frames only some budgets send, at 2, 3, 4 and 8 frames with policy ``uniform_floor``,
lmms-eval's own truncated linspace (at 3 frames of 64 it is 0, 31, 63 where ``uniform`` rounds to 0, 32, 63). Then
lmms-eval's own evaluator runs the task once per budget with ``frame_num`` set to that budget, answering with the
replay model of tests/helpers/lmms_parity.py, which checks each request's text against the row's prompt hash (so the subtitle
lines lmms-eval writes at its frames are the ones framesweep sent) and its sampled frames against the row's.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest
from helpers.lmms import NEEDS_LMMS, empty_hf_home
from helpers.lmms_parity import LETTERS, Task, lmms_eval_reports, official, register_replay, release, replay_file, sweep

from engine.datasets.synthetic import SyntheticBenchmark, SyntheticDatasetSpec
from engine.results import ResultsDir

pytestmark = [
    pytest.mark.engine,  # starts processes (see conftest: the fast tier)
    *NEEDS_LMMS,
]

BUDGETS = (2, 3, 4, 8)
TASK = "videomme_w_subtitle"
# the cues: frames 0-7 (every budget's first frame), 20-23 (frame 21: 4 frames only), 35-36 (frame 36: 8 frames
# only), 60-63 (every budget's last frame), as lmms-eval's Video-MME subtitles are written
CUES = (("00:00:00,000", "00:00:01,000", "the scene opens"), ("00:00:02,500", "00:00:03,000", "a flash at 21"),
        ("00:00:04,375", "00:00:04,625", "a flash at 36"), ("00:00:07,500", "00:00:08,000", "the scene closes"))
EXPECTED = {2: ["the scene opens", "the scene closes"], 3: ["the scene opens", "the scene closes"],
            4: ["the scene opens", "a flash at 21", "the scene closes"],
            8: ["the scene opens", "a flash at 36", "the scene closes"]}


def _srt() -> str:
    return "\n".join(f'{i}\n{start} --> {end}\n<font color="white" size=".72c">{text}</font>\n'
                     for i, (start, end, text) in enumerate(CUES, 1))


def _task(root: Path) -> tuple[Task, dict[str, Path]]:
    bench = SyntheticBenchmark(SyntheticDatasetSpec(name="synthetic", version=2, n_videos=3, seed=78, root=root))
    items = [it for it in bench.items() if it.item_id.rsplit("/", 1)[1] in ("first_colour", "last_colour")]
    docs = [{"video_id": f"{i:03d}", "duration": "short", "domain": "Knowledge", "sub_category": "Humanity & History",
             "url": "u", "videoID": it.video_id, "question_id": f"{i:03d}-1", "task_type": "Attribute Perception",
             "question": it.question, "options": [f"{LETTERS[j]}. {o}" for j, o in enumerate(it.options)],
             "answer": it.answer} for i, it in enumerate(items)]
    return (Task(TASK, docs, None, "test", "videomme/data", "videomme_perception_score"),
            {it.video_id: it.video_path for it in items})


def _cues(prompt: str) -> list[str]:
    head = "This video's subtitles are listed below: \n"
    assert prompt.startswith(head), prompt
    return [line for line in prompt[len(head):].split("Select the best answer")[0].splitlines() if line]


def test_each_budget_is_asked_with_the_subtitles_of_its_frames_as_lmms_eval_writes_them(
        tmp_path: Path, fs_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = empty_hf_home(tmp_path / "hf", monkeypatch)
    task, videos = _task(tmp_path / "clips")
    data = release(tmp_path / "releases", task)
    (home / task.media).mkdir(parents=True)
    (home / "videomme" / "subtitle").mkdir(parents=True)
    for video_id, path in videos.items():
        shutil.copy(path, home / task.media / f"{video_id}.mp4")
        (home / "videomme" / "subtitle" / f"{video_id}.srt").write_text(_srt())
    sweep(tmp_path / "out", {TASK: data}, BUDGETS, policy="uniform_floor")
    rows = ResultsDir.open(tmp_path / "out").scan().collect()
    assert rows.height == len(task.docs) * len(BUDGETS)
    assert set(rows["dataset_version"].str.ends_with("|frames=frame_num")) == {True}
    # each budget's prompt is its own: one prompt hash per (item, budget), none shared across budgets of an item
    per_item = rows.group_by("item_id").agg(pl.col("prompt_hash").n_unique().alias("n"))
    assert per_item["n"].to_list() == [len(BUDGETS)] * len(task.docs)
    scores, paired = official(tmp_path / "out")

    from lmms_eval import evaluator

    monkeypatch.setattr(evaluator, "_enable_reentrant_filelocks", lambda: None)  # filelock 4: test_lmms_parity.py
    replay = register_replay()
    replay.seen.clear()
    for frames in BUDGETS:
        table = replay_file(tmp_path / f"replay-{frames}.json", rows, frames, [task], {TASK: data})
        reported, doc_ids = lmms_eval_reports(task, data, table, {"frame_num": frames})
        assert reported == pytest.approx(scores[(TASK, frames)], abs=1e-9), frames
        assert doc_ids == list(range(len(task.docs))) == list(range(paired[TASK]))
    assert len(replay.seen) == rows.height
    for seen in replay.seen:
        lmms_indices, row_indices = seen["indices"]
        assert seen["prompt_hash"] and seen["video"] and lmms_indices == row_indices, seen
    # the subtitles lmms-eval wrote at each budget's frames, worked out by hand from the cues
    from lmms_eval.tasks import TaskManager

    task_config = TaskManager(verbosity="ERROR")._get_config(TASK)
    doc_to_text = task_config["doc_to_text"]
    default = task_config["lmms_eval_specific_kwargs"]["default"]
    for frames in BUDGETS:
        assert _cues(doc_to_text(task.docs[0], {**default, "frame_num": frames})) == EXPECTED[frames], frames
