"""Per-job frame planning in the scheduler: whole video, a question's clip, an image item."""

from pathlib import Path

import numpy as np
from helpers.specs import small_spec_dict

from engine.config import BudgetPoint, parse_spec
from engine.items import Item, Job
from engine.sweep import plan_item, plan_jobs


def _plan(job: Job, n_frames: int, fps: float):  # type: ignore[no-untyped-def]
    return plan_item(job.item, job.budget, n_frames, fps)


def _job(frames: int, **item_kw: object) -> Job:
    item = Item(dataset="d", dataset_version="1", item_id="i", video_id="v", video_path=Path("v.mp4"),
                question="q", options=("a", "b"), answer="A", **item_kw)
    return Job("m", item, BudgetPoint(frames=frames))


def test_whole_video_clip_and_image() -> None:
    assert _plan(_job(4), 100, 10.0).indices.tolist() == [0, 33, 66, 99]
    # a question about seconds 2..5 of the video: frames 20..49 only
    assert _plan(_job(4, clip=(2.0, 5.0)), 100, 10.0).indices.tolist() == [20, 30, 39, 49]
    # an image item sends its one frame whatever the budget
    img = _plan(_job(16, media_kind="image"), 1, 25.0)
    assert img.indices.tolist() == [0]
    assert _plan(_job(0), 100, 10.0).indices.size == 0


def test_plan_jobs_skips_committed_and_over_ceiling(tmp_path: Path) -> None:
    d = small_spec_dict(tmp_path)
    d["models"][0]["max_frames"] = 4
    spec = parse_spec(d)
    items = [_job(0).item]
    jobs = plan_jobs(spec, items, done={("tiny", "d", "i", "text")})
    assert [j.budget.budget_id for j in jobs["d/v"]] == ["f2", "f4"]  # f8 is above the model's ceiling
    assert np.array_equal([j.budget.frames for j in jobs["d/v"]], [2, 4])
