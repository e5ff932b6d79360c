"""Job policies: which (model, item, budget) jobs the pipeline runs, round after round.

The pipeline (`engine.sweep.scheduler.Sweep`) decodes, asks, scores and commits; a
policy only chooses jobs. The grid policy runs every budget of the spec at once.
An adaptive policy (the confidence cascade, the hybrid-frame predictor; see
`engine.adaptive`) starts with some jobs per video and, from their rows, chooses the
next round for the same video; frames decoded for one round serve the next.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Protocol

from engine.config import SweepSpec
from engine.items import Item, Job
from engine.results.schema import ResultRow
from engine.sweep.jobs import plan_jobs

__all__ = ["GridPolicy", "JobPolicy", "Key"]

Key = tuple[str, str, str, str]


class JobPolicy(Protocol):
    """Chooses the pipeline's jobs; the pipeline runs them."""

    def plan(self, spec: SweepSpec, items: list[Item], done: set[Key]) -> dict[str, list[Job]]:
        """The first round's pending jobs, grouped by video (committed keys left out)."""
        ...

    def expected(self, spec: SweepSpec, items: list[Item]) -> dict[str, dict[str, int]]:
        """Rows this run is responsible for, per model and budget id (the manifest's expected_jobs)."""
        ...

    def next_round(self, finished: list[tuple[Job, ResultRow]]) -> tuple[list[Job], list[ResultRow]]:
        """From one video's finished round: that video's next jobs, and rows the policy derives."""
        ...


class GridPolicy:
    """Every budget each dataset runs (`SweepSpec.budgets_for`) within each model's context ceiling, in one
    round."""

    def plan(self, spec: SweepSpec, items: list[Item], done: set[Key]) -> dict[str, list[Job]]:
        return plan_jobs(spec, items, done)

    def expected(self, spec: SweepSpec, items: list[Item]) -> dict[str, dict[str, int]]:
        per_dataset: dict[str | None, int] = dict(Counter(it.dataset for it in items)) if items else {None: 0}
        out: dict[str, dict[str, int]] = defaultdict(dict)
        for m in spec.models:
            for dataset, n in per_dataset.items():
                for b in spec.budgets_for(m, dataset):
                    out[m.id][b.budget_id] = out[m.id].get(b.budget_id, 0) + n
        return out

    def next_round(self, finished: list[tuple[Job, ResultRow]]) -> tuple[list[Job], list[ResultRow]]:
        return [], []
