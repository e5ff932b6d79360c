"""Adaptive inference run for real: the online confidence cascade.

Each item starts at the first stage (e.g. 16 frames) and escalates to the next
while its confidence is below the threshold; the last stage answers whatever its
confidence. Frames decoded for earlier stages are kept and reused: a later stage
decodes only the frames it adds (with the `nested` policy each stage's frames
contain the previous stage's, so nothing is decoded twice).

Rows: every stage an item visits is a normal result row under that stage's
budget id, and the cascade's decision is one more row per item under
``cascade-tau<tau>`` with `stage_path`, `frames_processed` (sum over visited
stages) and `frames_decoded` (unique frames over visited stages).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from engine.backends.prompts import MediaView, get_family
from engine.frames.decode import DecodeError, decode_union, get_decoder
from engine.frames.plan import FramePlan
from engine.frames.resize import resize_frame, target_size
from engine.items import Job
from engine.rows import error_row, scored_row
from engine.scheduler import Sweep, plan_item
from engine.schema import ResultRow
from engine.spec import BudgetPoint, SweepSpec

__all__ = ["CascadeSweep", "FrameStore", "cascade_budget_id", "run_cascade"]

log = logging.getLogger(__name__)


def cascade_budget_id(tau: float) -> str:
    return f"cascade-tau{tau:g}"


@dataclass
class FrameStore:
    """One video's decoded frames by index, filled stage by stage; each (index, size) resized once."""

    path: Any
    decoder: str
    frames: dict[int, np.ndarray] = field(default_factory=dict)
    resized: dict[tuple[int, tuple[int, int]], np.ndarray] = field(default_factory=dict)
    passes: int = 0
    decode_s: float = 0.0
    info: Any = None

    def ensure(self, indices: np.ndarray) -> int:
        """Decode the frames of `indices` not decoded yet (one pass); returns how many were new."""
        missing = np.setdiff1d(np.unique(indices), np.fromiter(self.frames, dtype=np.int64, count=len(self.frames)))
        if missing.size:
            t0 = time.perf_counter()
            d = decode_union(self.path, missing, self.decoder)
            self.decode_s += time.perf_counter() - t0
            self.passes += 1
            for i, f in zip(missing, d.view(missing)):
                self.frames[int(i)] = f
        return int(missing.size)

    def view(self, indices: np.ndarray, size: tuple[int, int]) -> np.ndarray:
        out = []
        for i in (int(x) for x in indices):
            key = (i, size)
            if key not in self.resized:
                f = self.frames[i]
                self.resized[key] = f if (f.shape[1], f.shape[0]) == size else resize_frame(f, size)
            out.append(self.resized[key])
        return np.stack(out)


class CascadeSweep(Sweep):
    """The online cascade over a spec's items: `stages` in cost order, threshold `tau`."""

    def __init__(self, spec: SweepSpec, stages: list[BudgetPoint], tau: float, **kw: Any) -> None:
        if not stages or any(b.is_text_only for b in stages[1:]):
            raise ValueError("cascade stages must be visual budgets after an optional text-only first stage")
        if [b.frames for b in stages] != sorted(b.frames for b in stages):
            raise ValueError("cascade stages must be in increasing frame order")
        super().__init__(spec.model_copy(update={"budgets": [stages[0]]}), **kw)
        self.stages = stages
        self.tau = tau
        self.frames_decoded_total = 0
        self.decode_passes = 0

    async def _run_video(self, video_jobs: list[Job]) -> list[ResultRow]:
        """Every question of this video through the stages (jobs here are the first stage's)."""
        item0 = video_jobs[0].item
        store = FrameStore(item0.video_path, self.spec.decode.decoder)
        rows: list[ResultRow] = []
        by_model: dict[str, list[Job]] = defaultdict(list)
        for j in video_jobs:
            by_model[j.model_id].append(j)
        try:
            if any(not b.is_text_only for b in self.stages):
                store.info = await asyncio.to_thread(get_decoder(store.decoder).probe, item0.video_path)
        except (DecodeError, OSError) as err:
            rows = [error_row(self.spec, self._ctx(j, None, None), type(err).__name__, str(err)) for j in video_jobs]
            self._count(rows)
            return rows
        for model_id, jobs in by_model.items():
            rows += await self._cascade(model_id, jobs, store)
        self.frames_decoded_total += len(store.frames)
        self.decode_passes += store.passes
        self._count(rows)
        return rows

    async def _cascade(self, model_id: str, jobs: list[Job], store: FrameStore) -> list[ResultRow]:
        rows: list[ResultRow] = []
        visited: dict[str, list[tuple[BudgetPoint, np.ndarray, ResultRow]]] = defaultdict(list)
        pending = list(jobs)
        for k, stage in enumerate(self.stages):
            if not pending:
                break
            stage_jobs = [replace(j, budget=stage) for j in pending]
            plan = self._stage_plan(stage, store)
            if plan.indices.size:
                await asyncio.to_thread(store.ensure, plan.indices)
            stage_rows = await self._answer(model_id, stage_jobs, plan, store)
            rows += stage_rows
            still = []
            for j, row in zip(pending, stage_rows):
                visited[j.item.item_id].append((stage, plan.indices, row))
                last = k == len(self.stages) - 1
                sure = row.confidence is not None and row.confidence >= self.tau
                if row.status != "ok" or last or sure:  # an error also ends the item's cascade
                    rows.append(self._decision(j, visited[j.item.item_id]))
                else:
                    still.append(j)
            pending = still
        return rows

    @staticmethod
    def _stage_plan(stage: BudgetPoint, store: FrameStore) -> FramePlan:
        """Stages are planned per video (item clips are not applied in the cascade)."""
        if stage.is_text_only:
            return plan_item(None, stage, 0, 0.0)
        return plan_item(None, stage, store.info.n_frames, store.info.fps)

    async def _answer(self, model_id: str, jobs: list[Job], plan: FramePlan, store: FrameStore) -> list[ResultRow]:
        family = get_family(self._models[model_id].family)
        ctxs = [self._ctx(j, None, plan) for j in jobs]
        size = None
        if plan.indices.size:
            b = jobs[0].budget
            size = target_size(store.info.width, store.info.height, b.max_pixels, b.short_side)
        for c in ctxs:
            c.width, c.height = size if size else (None, None)
            c.decoder = store.decoder
        media = None
        if plan.indices.size and size:
            media = MediaView(store.view(plan.indices, size), plan.indices, store.info.fps, store.info.n_frames,
                              f"{jobs[0].item.video_id}:{jobs[0].budget.budget_id}", store.decoder)
        p = self.spec.prompt
        for i, c in enumerate(ctxs):
            c.request = family.build(f"{model_id}/{c.job.item.item_id}/{c.job.budget.budget_id}/{i}", c.job.item,
                                     media, p.scoring, p.system_prompt, p.max_new_tokens)
        try:
            results = await self.backends[model_id].generate([c.request for c in ctxs])  # type: ignore[misc]
        except Exception as err:  # noqa: BLE001 - a dead engine: error rows, a rerun retries
            return [error_row(self.spec, c, type(err).__name__, str(err)) for c in ctxs]
        return [scored_row(self.spec, c, r, self._scorer) for c, r in zip(ctxs, results)]

    def _decision(self, job: Job, visited: list[tuple[BudgetPoint, np.ndarray, ResultRow]]) -> ResultRow:
        final = visited[-1][2]
        row = replace(final)
        row.budget_id = cascade_budget_id(self.tau)
        row.policy = "cascade"
        row.stage_path = [b.budget_id for b, _, _ in visited]
        row.frames_processed = int(sum(len(ix) for _, ix, _ in visited))
        row.frames_decoded = int(np.unique(np.concatenate([ix for _, ix, _ in visited])).size) if visited else 0
        row.engine_s = float(sum(r.engine_s or 0.0 for _, _, r in visited))
        return row


def _stage_budgets(spec: SweepSpec, ids: list[str]) -> list[BudgetPoint]:
    known = {b.budget_id: b for b in spec.budgets}
    missing = [i for i in ids if i not in known]
    if missing:
        raise ValueError(f"cascade stages {missing} are not budgets of the spec; known: {', '.join(known)}")
    return [known[i] for i in ids]


async def run_cascade(spec: SweepSpec, stage_ids: list[str], tau: float, session_dir: Any,
                      fixed_id: str | None = None, backends: dict[str, Any] | None = None,
                      progress: Any = None) -> Any:
    """Sweep the grid (resumable), then time a fixed budget and the online cascade on the same engines.

    The grid sweep gives the offline simulation its confidences; the fixed run and
    the cascade run write fresh stores under `session_dir` (fixed/, online/).
    """
    from pathlib import Path

    from engine.scheduler import start_backends

    stages = _stage_budgets(spec, stage_ids)
    fixed = _stage_budgets(spec, [fixed_id or stage_ids[-1]])[0]
    own = backends is None
    backends = backends or await start_backends(spec)
    try:
        await Sweep(spec, backends=backends, progress=progress).run()
        await _warm(spec, backends)
        session = Path(session_dir)
        fixed_spec = spec.model_copy(update={"budgets": [fixed]}).with_out_dir(session / "fixed")
        t0 = time.perf_counter()
        await Sweep(fixed_spec, backends=backends).run()
        fixed_wall = time.perf_counter() - t0
        online = CascadeSweep(spec.with_out_dir(session / "online"), stages, tau, backends=backends)
        t0 = time.perf_counter()
        await online.run()
        online_wall = time.perf_counter() - t0
    finally:
        if own:
            await asyncio.gather(*(b.close() for b in backends.values()), return_exceptions=True)
    from engine.metrics.cascade_online import cascade_report

    return cascade_report(spec.store.out_dir, session, stage_ids, tau, fixed.budget_id, online_wall, fixed_wall,
                          online.decode_passes)


async def _warm(spec: SweepSpec, backends: dict[str, Any]) -> None:
    """One small request per engine so no timed run pays a first-request cost."""
    for m in spec.models:
        req = get_family(m.family).build("warm", _WARM_ITEM, None, spec.prompt.scoring, None, 1)
        await backends[m.id].generate([req])


def _warm_item() -> Any:
    from engine.items import Item

    return Item(dataset="warm", dataset_version="0", item_id="warm", video_id="warm", video_path=None,
                question="Warm up.", options=("yes", "no"), answer="A")


_WARM_ITEM = _warm_item()
