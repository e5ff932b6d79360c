"""Jobs: which (model, item, budget) answers are pending, and which frames each one sends."""

from __future__ import annotations

import dataclasses
from collections import defaultdict

import numpy as np

from engine.config import BudgetPoint, SweepSpec
from engine.frames.plan import FramePlan, plan_budget
from engine.items import Item, Job

__all__ = ["plan_item", "plan_jobs"]


def plan_jobs(spec: SweepSpec, items: list[Item], done: set[tuple[str, str, str, str]]) -> dict[str, list[Job]]:
    """Pending jobs grouped by video: each item at the budgets its dataset runs (`SweepSpec.budgets_for`; an
    image benchmark at its image budgets), committed keys and budgets over a model's ceiling left out."""
    by_video: dict[str, list[Job]] = defaultdict(list)
    budgets: dict[tuple[str, str], list[BudgetPoint]] = {}
    for item in items:
        for model in spec.models:
            key = (model.id, item.dataset)
            if key not in budgets:
                budgets[key] = spec.budgets_for(model, item.dataset)
            for b in budgets[key]:
                job = Job(model.id, item, b)
                if tuple(job.key) not in done:
                    by_video[item.media_key].append(job)
    return dict(by_video)


def plan_item(item: Item | None, budget: BudgetPoint, n_frames: int, fps: float) -> FramePlan:
    """A budget's frames for an item: the whole video, the item's clip, or the one frame of an image."""
    if budget.is_text_only:
        return plan_budget(budget, 0, 0.0)
    if item is not None and item.media_kind == "image":
        return FramePlan(np.zeros(1, dtype=np.int64), n_frames, False)
    if item is None or item.clip is None:
        return plan_budget(budget, n_frames, fps)
    first = min(max(0, int(item.clip[0] * fps)), n_frames - 1)
    last = min(n_frames, max(first + 1, int(np.ceil(item.clip[1] * fps))))
    sub = plan_budget(budget, last - first, fps)
    return dataclasses.replace(sub, indices=sub.indices + first, n_video_frames=n_frames)
