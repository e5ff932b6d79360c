"""The sweep scheduler: fan out model x item x budget jobs, one decode per video.

Data path per video: plan every pending budget's indices -> decode their union
once (in a worker thread, overlapping the engines' work on other videos) ->
take each budget's frames as a view -> build requests (video first, so the
questions of one video and budget share a prefix) -> generate on every model's
backend -> score -> buffer rows -> commit atomically every few seconds.

At most `decode.max_videos_in_flight` videos hold frames at once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import signal
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.backends.base import Backend, EngineRequest
from engine.backends.coalesce import CoalescingBackend
from engine.backends.prompts import MediaView, get_family
from engine.datasets import build_adapter
from engine.frames.actors import DecodePool
from engine.frames.cache import FrameCache, decode_video
from engine.frames.decode import (
    DecodedVideo,
    DecodeError,
    decode_size,
    get_decoder,
    sizes_needed,
    target_size,
)
from engine.frames.plan import FramePlan, plan_budget, union_indices
from engine.items import Item, Job
from engine.rows import JobContext, error_row, scored_row
from engine.schema import ResultRow
from engine.spec import BudgetPoint, ModelSpec, SweepSpec
from engine.store import ResultStore

__all__ = ["Sweep", "SweepSummary", "plan_item", "plan_jobs", "start_backends"]

log = logging.getLogger(__name__)

ProgressFn = Callable[[str, int], None]


@dataclass
class SweepSummary:
    """What a sweep run did."""

    jobs_total: int = 0
    jobs_skipped: int = 0
    jobs_ok: int = 0
    jobs_failed: int = 0
    videos: int = 0
    decode_calls: int = 0
    frames_decoded: int = 0
    wall_s: float = 0.0
    stopped: bool = False
    engines: dict[str, Any] = field(default_factory=dict)
    decode_workers: list[str] = field(default_factory=list)


def plan_jobs(spec: SweepSpec, items: list[Item], done: set[tuple[str, str, str, str]]) -> dict[str, list[Job]]:
    """Pending jobs grouped by video (committed keys and budgets over a model's ceiling are left out)."""
    by_video: dict[str, list[Job]] = defaultdict(list)
    for item in items:
        for model in spec.models:
            for b in spec.budgets_in_cost_order():
                if model.max_frames is not None and b.frames > model.max_frames:
                    continue
                job = Job(model.id, item, b)
                if tuple(job.key) not in done:
                    by_video[item.video_id].append(job)
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


async def start_backends(spec: SweepSpec) -> dict[str, Backend]:
    """Start one backend per model of the spec (vLLM in a Ray actor, or an HTTP client)."""
    from engine.backends.openai_http import OpenAIHTTPBackend
    from engine.backends.pool import EnginePool
    from engine.backends.vllm_actor import VLLMActorBackend
    from engine.cluster import ensure_ray
    from engine.tiny import resolve_model_path

    backends: dict[str, Backend] = {}
    for m in spec.models:
        if m.backend == "openai":
            assert m.http is not None
            backends[m.id] = OpenAIHTTPBackend(m.http, m.path)
            continue
        ensure_ray(spec.ray_address)
        path = await asyncio.to_thread(resolve_model_path, m.path)
        family_kwargs = get_family(m.family).engine_kwargs(m.max_frames)
        replicas = [VLLMActorBackend(path, m.engine, family_kwargs=family_kwargs) for _ in range(m.engine.replicas)]
        backends[m.id] = replicas[0] if len(replicas) == 1 else EnginePool(replicas)
    await asyncio.gather(*(b.start() for b in backends.values()))
    return backends


class Sweep:
    """One run of a sweep spec against its results directory (resumable)."""

    def __init__(self, spec: SweepSpec, backends: dict[str, Backend] | None = None,
                 progress: ProgressFn | None = None) -> None:
        self.spec = spec
        self.backends: dict[str, Backend] = dict(backends or {})
        self._own_backends = backends is None
        self.progress = progress or (lambda event, n: None)
        self.summary = SweepSummary()
        self._stop = asyncio.Event()
        self._pool = ThreadPoolExecutor(max_workers=spec.decode.threads, thread_name_prefix="decode")
        self._models: dict[str, ModelSpec] = {m.id: m for m in spec.models}
        self._attempts: dict[tuple[str, str, str, str], int] = {}
        self._scorer: Any = None
        self._coalesced: dict[str, CoalescingBackend] = {}
        self._cache: FrameCache | None = None
        self._decode_pool: DecodePool | None = None
        if spec.decode.pipeline == "cached":
            self._cache = FrameCache(spec.decode.cache_dir, fmt=spec.decode.cache_format)

    def request_stop(self) -> None:
        """Stop after committing what is finished (SIGINT/SIGTERM)."""
        log.warning("stop requested: committing finished rows and exiting")
        self._stop.set()

    async def run(self) -> SweepSummary:
        t0 = time.perf_counter()
        adapter = build_adapter(self.spec.dataset)
        self._scorer = getattr(adapter, "score", None)
        items = list(adapter.items())
        store = ResultStore(self.spec.store.out_dir)
        try:
            done = store.done_keys()
            self._attempts = store.attempts()
            jobs = self._plan_jobs(items, done)
            self._record_plan(store, items, done, jobs)
            if jobs:
                await self._start_backends()
                await self._run_videos(store, items, jobs)
        finally:
            store.close()
            await asyncio.gather(*(c.close() for c in self._coalesced.values()))
            if self._decode_pool is not None:
                await self._decode_pool.close()
            if self._own_backends:
                await asyncio.gather(*(b.close() for b in self.backends.values()), return_exceptions=True)
            self._pool.shutdown(wait=False, cancel_futures=True)
        self.summary.wall_s = time.perf_counter() - t0
        self.summary.stopped = self._stop.is_set()
        return self.summary

    def _plan_jobs(self, items: list[Item], done: set[Any]) -> dict[str, list[Job]]:
        return plan_jobs(self.spec, items, done)

    def _expected(self, items: list[Item], jobs: dict[str, list[Job]]) -> dict[str, dict[str, int]]:
        """Jobs this run is responsible for, per model and budget (the manifest's expected_jobs)."""
        expected: dict[str, dict[str, int]] = defaultdict(dict)
        for m in self.spec.models:
            for b in self.spec.budgets:
                if m.max_frames is None or b.frames <= m.max_frames:
                    expected[m.id][b.budget_id] = len(items)
        return expected

    def _record_plan(self, store: ResultStore, items: list[Item], done: set[Any], jobs: dict[str, list[Job]]) -> None:
        n_pending = sum(len(v) for v in jobs.values())
        self.summary.jobs_total = n_pending + len(done)
        self.summary.jobs_skipped = len(done)
        self.summary.videos = len(jobs)
        expected = store.read_manifest().get("expected_jobs", {})
        for mid, per in self._expected(items, jobs).items():
            expected.setdefault(mid, {}).update(per)
        store.write_manifest({
            "sweep_id": self.spec.sweep_id,
            "dataset": self.spec.dataset.name,
            "spec": self.spec.model_dump(mode="json"),
            "expected_jobs": {m: dict(v) for m, v in expected.items()},
        })
        self.progress("total", n_pending)

    async def _start_decoders(self) -> None:
        """Decode actors in the cluster when the spec asks for them (auto: one per node on a cluster)."""
        d = self.spec.decode
        n_actors = d.actors if d.actors is not None else (None if self.spec.ray_address else 0)
        if n_actors == 0 or self._decode_pool is not None or not any(b.frames for b in self.spec.budgets):
            return
        import ray

        from engine.cluster import ensure_ray

        ensure_ray(self.spec.ray_address)
        if n_actors is None:
            n_actors = sum(1 for n in ray.nodes() if n.get("Alive"))
        cache_root = self._cache.dir.parent if self._cache is not None else None
        self._decode_pool = DecodePool(n_actors, d.actor_cpus, cache_root, d.cache_format)
        self.summary.decode_workers = await self._decode_pool.start()

    async def _start_backends(self) -> None:
        await self._start_decoders()
        if not self.backends:
            self.backends = await start_backends(self.spec)
            self.summary.engines = {k: getattr(b, "info", {}) for k, b in self.backends.items()}

    async def _run_videos(self, store: ResultStore, items: list[Item], jobs: dict[str, list[Job]]) -> None:
        sem = asyncio.Semaphore(self.spec.decode.max_videos_in_flight)
        committer = asyncio.create_task(self._committer(store))
        loop = asyncio.get_running_loop()
        installed = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self.request_stop)
                installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
                pass

        async def one(video_jobs: list[Job]) -> None:
            async with sem:
                if not self._stop.is_set():
                    store.add(await self._run_video(video_jobs))

        tasks = [asyncio.create_task(one(v)) for v in jobs.values()]
        stopper = asyncio.create_task(self._stop.wait())
        try:
            pending = set(tasks)
            while pending and not self._stop.is_set():
                finished, pending = await asyncio.wait(pending | {stopper}, return_when=asyncio.FIRST_COMPLETED)
                pending.discard(stopper)
                for t in finished:
                    if t is not stopper and t.exception() is not None:
                        raise t.exception()  # type: ignore[misc]
            for t in pending:
                t.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        finally:
            stopper.cancel()
            committer.cancel()
            for sig in installed:
                loop.remove_signal_handler(sig)
            await asyncio.to_thread(store.commit)

    async def _committer(self, store: ResultStore) -> None:
        cfg = self.spec.store
        while True:
            await asyncio.sleep(min(0.5, cfg.commit_interval_s))
            due = time.monotonic() - store.last_commit >= cfg.commit_interval_s
            if store.buffered and (due or store.buffered >= cfg.max_buffered_rows):
                n = await asyncio.to_thread(store.commit)
                self.progress("committed", n)

    def _attempt(self, job: Job) -> int:
        return self._attempts.get(tuple(job.key), 0) + 1  # type: ignore[arg-type]

    @staticmethod
    def _plan(job: Job, n_frames: int, fps: float) -> FramePlan:
        return plan_item(job.item, job.budget, n_frames, fps)

    async def _decode(self, video_jobs: list[Job]) -> tuple[DecodedVideo | None, dict[tuple[str, str], FramePlan]]:
        """Plan every job of this video and decode the union of their frames once."""
        item = video_jobs[0].item
        if all(j.budget.is_text_only for j in video_jobs):
            return None, {(j.item.item_id, j.budget.budget_id): self._plan(j, 0, 0.0) for j in video_jobs}
        if item.video_path is None:
            raise DecodeError(f"item {item.item_id} has no video but the grid asks for frames")
        loop = asyncio.get_running_loop()
        # decord cannot open still images; PyAV decodes them (EXIF rotation applied)
        decoder = get_decoder("pyav" if item.media_kind == "image" else self.spec.decode.decoder)
        info = await loop.run_in_executor(self._pool, decoder.probe, item.video_path)
        plans = {(j.item.item_id, j.budget.budget_id): self._plan(j, info.n_frames, info.fps) for j in video_jobs}
        union = union_indices(plans.values())
        # decode once, at the largest size any budget needs; smaller sizes converted in the same pass
        need = sizes_needed(info, [(j.budget, plans[(j.item.item_id, j.budget.budget_id)].indices)
                                   for j in video_jobs])
        size = decode_size(info, [j.budget for j in video_jobs])
        main = size or (info.width, info.height)
        also = {s: ix for s, ix in need.items() if s != main}
        idx = need.get(main, np.empty(0, np.int64))
        decoded = None
        if self._decode_pool is not None:  # a decode actor somewhere in the cluster; None: none is left
            decoded = await self._decode_pool.decode(item.video_path, idx, decoder.name, size, also)
        if decoded is None:
            work = functools.partial(decode_video, self._cache, item.video_path, idx, decoder.name, size, also)
            decoded = await loop.run_in_executor(self._pool, work)
        self.summary.decode_calls += 1
        self.summary.frames_decoded += int(union.size)
        return decoded, plans

    async def _run_video(self, video_jobs: list[Job]) -> list[ResultRow]:
        rows: list[ResultRow] = []
        try:
            decoded, plans = await self._decode(video_jobs)
        except (DecodeError, ValueError, OSError) as err:
            # The video is unusable: its visual jobs become error rows; text-only jobs need no media.
            log.warning("%s: %s", video_jobs[0].item.video_id, err)
            visual = [j for j in video_jobs if not j.budget.is_text_only]
            rows = [error_row(self.spec, self._ctx(j, None, None), type(err).__name__, str(err)) for j in visual]
            video_jobs = [j for j in video_jobs if j.budget.is_text_only]
            decoded, plans = None, {(j.item.item_id, j.budget.budget_id): self._plan(j, 0, 0.0) for j in video_jobs}
        by_model: dict[str, list[JobContext]] = defaultdict(list)
        for j in video_jobs:
            by_model[j.model_id].append(self._ctx(j, decoded, plans[(j.item.item_id, j.budget.budget_id)]))
        try:
            results = await asyncio.gather(*(self._generate(mid, ctxs, decoded) for mid, ctxs in by_model.items()))
        finally:
            if decoded is not None:
                decoded.release()  # the in-flight cap bounds frame memory only if frames go when done
        rows += [r for part in results for r in part]
        self._count(rows)
        return rows

    def _count(self, rows: list[ResultRow]) -> None:
        ok = sum(r.status == "ok" for r in rows)
        self.summary.jobs_ok += ok
        self.summary.jobs_failed += len(rows) - ok
        self.progress("done", len(rows))

    def _ctx(self, job: Job, decoded: DecodedVideo | None, plan: FramePlan | None) -> JobContext:
        model = self._models[job.model_id]
        indices = plan.indices if plan is not None else np.empty(0, dtype=np.int64)
        ctx = JobContext(job, model.family, indices, None, None, self.spec.decode.decoder,
                         None, self._attempt(job))
        if plan is not None:
            ctx.repeated = plan.repeated
        if decoded is not None and indices.size:
            ctx.width, ctx.height = target_size(decoded.info.width, decoded.info.height,
                                                job.budget.max_pixels, job.budget.short_side)
            ctx.decode_s = decoded.decode_s
            ctx.pipeline = decoded.pipeline
            ctx.video_frames = decoded.info.n_frames
            ctx.video_frames_declared = getattr(decoded.info, "declared_frames", None)
        return ctx

    def _media(self, ctx: JobContext, decoded: DecodedVideo | None) -> MediaView | None:
        if decoded is None or not ctx.indices.size:
            return None
        size = (ctx.width, ctx.height)
        frames = decoded.view(ctx.indices, size, shared=True)  # type: ignore[arg-type]
        jpeg = decoded.view_jpeg(ctx.indices, size) if decoded.pipeline == "cached" else None  # type: ignore[arg-type]
        item = ctx.job.item
        uuid = f"{item.video_id}:{ctx.job.budget.budget_id}"
        if item.media_kind == "image":
            uuid = f"{item.video_id}:image"
        elif item.clip is not None:
            uuid += f"@{item.clip[0]:g}-{item.clip[1]:g}"
        return MediaView(frames, ctx.indices, decoded.info.fps, decoded.info.n_frames, uuid, decoded.decoder,
                         jpeg_frames=jpeg)

    async def _generate(self, model_id: str, ctxs: list[JobContext],
                        decoded: DecodedVideo | None) -> list[ResultRow]:
        family = get_family(self._models[model_id].family)
        p = self.spec.prompt
        requests: list[EngineRequest] = []
        failed: list[ResultRow] = []
        ready: list[JobContext] = []
        for i, ctx in enumerate(ctxs):
            try:
                media = self._media(ctx, decoded)
            except DecodeError as err:  # a frame this job needs does not exist or did not decode
                failed.append(error_row(self.spec, ctx, type(err).__name__, str(err)))
                continue
            ctx.request = family.build(f"{model_id}/{ctx.job.item.item_id}/{ctx.job.budget.budget_id}/{i}",
                                       ctx.job.item, media, p.scoring, p.system_prompt, p.max_new_tokens)
            requests.append(ctx.request)
            ready.append(ctx)
        if not ready:
            return failed
        ctxs = ready
        results = await self._generate_with_retries(model_id, ctxs, requests)
        if isinstance(results, BaseException):
            err = results
            return failed + [error_row(self.spec, c, type(err).__name__, str(err)) for c in ctxs]
        return failed + [scored_row(self.spec, c, r, self._scorer) for c, r in zip(ctxs, results)]

    async def _generate_with_retries(self, model_id: str, ctxs: list[JobContext],
                                     requests: list[EngineRequest]) -> list[Any] | BaseException:
        """Generate; if the engine dies, wait for it to come back (or restart it) and retry the batch,
        up to `max_attempts` attempts per job (recorded on the rows); then the error is returned."""
        backend = self.backends[model_id]
        if model_id not in self._coalesced:
            self._coalesced[model_id] = CoalescingBackend(backend)
        merged = self._coalesced[model_id]
        for n in range(self.spec.max_attempts):
            try:
                return await merged.generate(requests)
            except Exception as err:  # noqa: BLE001 - engine death: recover and retry, then errors as data
                log.error("engine for %s failed (attempt %d of %d): %s: %s", model_id, n + 1,
                          self.spec.max_attempts, type(err).__name__, err)
                if n + 1 >= self.spec.max_attempts or self._stop.is_set():
                    return err
                for c in ctxs:
                    c.attempt += 1
                recover = getattr(backend, "recover", None)
                if recover is not None:
                    try:
                        await recover()
                    except Exception as rerr:  # noqa: BLE001
                        log.error("engine for %s could not be recovered: %s", model_id, rerr)
                        return rerr
        raise AssertionError("unreachable")
