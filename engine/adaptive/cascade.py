"""The online confidence cascade: a job policy run by the sweep pipeline.

Each item starts at the first stage (e.g. 16 frames) and escalates to the next
while its confidence is below the threshold; the last stage answers whatever its
confidence. The pipeline runs the stages as rounds of one video: a later stage
decodes only the frames no earlier round holds (with the `nested` policy each
stage's frames contain the previous stage's, so nothing is decoded twice), and
every request goes through the sweep's coalescing, retries and replica failover.

A model runs the cascade only when every stage is within its context ceiling
(`max_frames`): a cascade cut short at a ceiling would stop where the others go on,
and neither the fixed budget nor the offline simulation (which needs every stage's
row) would have that model to compare with. `run_cascade` names the models left out.

Rows: every stage an item visits is a normal result row under that stage's
budget id, and the cascade's decision is one more row per item under
``cascade-tau<tau>`` with `stage_path`, `frames_processed` (sum over visited
stages) and `frames_decoded` (unique frames over visited stages).
A rerun skips items whose decision is committed; an unfinished item starts again
at its first stage.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from engine.adaptive.cascade_report import CascadeReport, TimedRound, cascade_budget_id, cascade_report
from engine.config import BudgetPoint, ModelSpec, SweepSpec
from engine.items import Item, Job
from engine.results.schema import ResultRow
from engine.sweep import Sweep, start_backends
from engine.sweep.policy import Key
from engine.sweep.preflight import Preflight

__all__ = ["CascadePolicy", "CascadeSweep", "cascade_budget_id", "new_session_dir", "reset_caches", "run_cascade"]


class CascadePolicy:
    """Stages in cost order and a threshold `tau`: escalate while the confidence is below it."""

    def __init__(self, stages: list[BudgetPoint], tau: float) -> None:
        if not stages or any(b.is_text_only for b in stages[1:]):
            raise ValueError("cascade stages must be visual budgets after an optional text-only first stage")
        if [b.frames for b in stages] != sorted(b.frames for b in stages):
            raise ValueError("cascade stages must be in increasing frame order")
        self.stages = stages
        self.tau = tau
        self.decision_id = cascade_budget_id(tau)
        self._stage = {b.budget_id: k for k, b in enumerate(stages)}
        self._visited: dict[tuple[str, str, str], list[ResultRow]] = {}

    def beyond_ceiling(self, model: ModelSpec) -> list[str]:
        """The stages above `model`'s `max_frames` (empty: the model runs the cascade)."""
        return [b.budget_id for b in self.stages if not model.fits(b)]

    def models(self, spec: SweepSpec) -> list[ModelSpec]:
        """The spec's models that run the cascade: every stage within their ceiling."""
        return [m for m in spec.models if not self.beyond_ceiling(m)]

    def plan(self, spec: SweepSpec, items: list[Item], done: set[Key]) -> dict[str, list[Job]]:
        by_video: dict[str, list[Job]] = {}
        for item in items:
            for m in self.models(spec):
                if (m.id, item.dataset, item.item_id, self.decision_id) not in done:
                    by_video.setdefault(item.media_key, []).append(Job(m.id, item, self.stages[0]))
        return by_video

    def expected(self, spec: SweepSpec, items: list[Item]) -> dict[str, dict[str, int]]:
        return {m.id: {self.decision_id: len(items)} for m in self.models(spec)}

    def next_round(self, finished: list[tuple[Job, ResultRow]]) -> tuple[list[Job], list[ResultRow]]:
        escalate: list[Job] = []
        decisions: list[ResultRow] = []
        for job, row in finished:
            key = (job.model_id, job.item.dataset, job.item.item_id)
            path = self._visited.setdefault(key, [])
            path.append(row)
            k = self._stage[job.budget.budget_id]
            sure = row.confidence is not None and row.confidence >= self.tau
            if row.status != "ok" or k == len(self.stages) - 1 or sure:  # an error also ends the cascade
                decisions.append(self._decision(self._visited.pop(key)))
            else:
                escalate.append(replace(job, budget=self.stages[k + 1]))
        return escalate, decisions

    def _decision(self, visited: list[ResultRow]) -> ResultRow:
        row = replace(visited[-1])
        row.budget_id = self.decision_id
        row.policy = "cascade"
        row.stage_path = [r.budget_id for r in visited]
        row.frames_processed = int(sum(len(r.frame_indices or []) for r in visited))
        sent = [np.asarray(r.frame_indices or [], dtype=np.int64) for r in visited]
        row.frames_decoded = int(np.unique(np.concatenate(sent)).size) if sent else 0
        row.engine_s = float(sum(r.engine_s or 0.0 for r in visited))
        return row


class CascadeSweep(Sweep):
    """The online cascade over a spec's items (`stages` in cost order, threshold `tau`), on the pipeline."""

    def __init__(self, spec: SweepSpec, stages: list[BudgetPoint], tau: float, **kw: Any) -> None:
        self.cascade = CascadePolicy(stages, tau)
        super().__init__(spec, policy=self.cascade, **kw)
        self.stages, self.tau = stages, tau

    @property
    def decode_passes(self) -> int:
        return self.summary.decode_calls


def new_session_dir(out_dir: Path | str) -> Path:
    """A new folder OUT/cascade/<UTC time>-<6 hex> for one cascade session, created here and by no one else
    (`mkdir` without exist_ok), so two cascades started in the same second never share one (they did: the second
    found the first's stores locked and died)."""
    parent = Path(out_dir) / "cascade"
    parent.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    while True:
        session = parent / f"{stamp}-{uuid.uuid4().hex[:6]}"
        try:
            session.mkdir()
        except FileExistsError:  # the same 6 hex in the same second: draw again
            continue
        return session


def stage_budgets(spec: SweepSpec, ids: list[str]) -> list[BudgetPoint]:
    """The spec's budgets named by `ids`, in that order (an unknown id lists the known ones)."""
    known = {b.budget_id: b for b in spec.budgets}
    missing = [i for i in ids if i not in known]
    if missing:
        raise ValueError(f"cascade stages {missing} are not budgets of the spec; known: {', '.join(known)}")
    return [known[i] for i in ids]


async def run_cascade(spec: SweepSpec, stage_ids: list[str], tau: float, session_dir: Path | str,
                      fixed_id: str | None = None, backends: dict[str, Any] | None = None,
                      progress: Any = None, repeats: int = 3, checked: Preflight | None = None) -> CascadeReport:
    """Sweep the grid (resumable), then time a fixed budget and the online cascade on the same engines.

    The grid sweep gives the offline simulation its confidences. Then `repeats` rounds time
    both policies, alternating which goes first (round 1: fixed then cascade; round 2: cascade
    then fixed; ...). Every timed policy starts from cold engine caches: the prefix and
    multimodal caches of every engine are reset just before it (outside its timed span), and
    its media uuids carry a namespace of their own (``fixed-r1/...``, ``cascade-r1/...``), so
    no policy can hit entries another one left. Each run writes a fresh store under
    `session_dir`/round<r>/ (fixed/, online/). A model with a stage or the fixed budget above
    its `max_frames` is swept on the grid but left out of the timed runs and the offline
    simulation (the report's `skipped_models` names it and those budgets); if no model is
    left, a ValueError says why before any work. `checked`: the caller's `preflight` of `spec` (the grid sweep
    does not check it again).
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    stages = stage_budgets(spec, stage_ids)
    fixed = stage_budgets(spec, [fixed_id or stage_ids[-1]])[0]
    policy = CascadePolicy(stages, tau)
    above = {m.id: sorted({*policy.beyond_ceiling(m), *([] if m.fits(fixed) else [fixed.budget_id])})
             for m in spec.models}
    skipped = {m: ids for m, ids in above.items() if ids}
    if len(skipped) == len(spec.models):
        raise ValueError("no model of the spec can run the cascade: "
                         + "; ".join(f"{m}: {', '.join(ids)} above its max_frames" for m, ids in skipped.items()))
    timed = spec.model_copy(update={"models": [m for m in spec.models if m.id not in skipped]})
    own = backends is None
    backends = backends or await start_backends(spec)
    session = Path(session_dir)
    rounds: list[TimedRound] = []
    decode_passes = 0
    try:
        await Sweep(spec, backends=backends, progress=progress, checked=checked).run()
        await _warm(spec, backends)
        for r in range(1, repeats + 1):
            order = ["fixed", "cascade"] if r % 2 else ["cascade", "fixed"]
            walls: dict[str, float] = {}
            resets: dict[str, int] = {}
            for name in order:
                resets[name] = await reset_caches(backends)
                if name == "fixed":
                    fixed_spec = timed.model_copy(update={"budgets": [fixed]})
                    sweep: Sweep = Sweep(fixed_spec.with_out_dir(session / f"round{r}" / "fixed"), backends=backends)
                else:
                    sweep = CascadeSweep(timed.with_out_dir(session / f"round{r}" / "online"), stages, tau,
                                         backends=backends)
                sweep.media_namespace = f"{name}-r{r}"
                t0 = time.perf_counter()
                await sweep.run()
                walls[name] = time.perf_counter() - t0
                if isinstance(sweep, CascadeSweep) and r == 1:
                    decode_passes = sweep.decode_passes
            rounds.append(TimedRound(round=r, order=order, fixed_wall_s=walls["fixed"],
                                     cascade_wall_s=walls["cascade"], cache_resets=resets))
    finally:
        if own:
            await asyncio.gather(*(b.close() for b in backends.values()), return_exceptions=True)
    return cascade_report(spec.store.out_dir, session, stage_ids, tau, fixed.budget_id, rounds, decode_passes,
                          skipped_models=skipped)


async def reset_caches(backends: dict[str, Any]) -> int:
    """Empty every engine's prefix and multimodal caches; the engines' reset counts, summed."""
    return int(sum(await asyncio.gather(*(b.reset_caches() for b in backends.values()))))


_WARM_ITEM = Item(dataset="warm", dataset_version="0", item_id="warm", video_id="warm", video_path=None,
                  question="Warm up.", options=("yes", "no"), answer="A")


async def _warm(spec: SweepSpec, backends: dict[str, Any]) -> None:
    """One small text-only request per engine, through the pipeline, so no timed run pays a first-request cost."""
    text = BudgetPoint(frames=0, id="warm")
    for m in spec.models:
        await Sweep(spec, backends=backends).answer([Job(m.id, _WARM_ITEM, text)])
