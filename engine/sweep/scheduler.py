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
import functools
import logging
import signal
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engine.backends.base import Backend, EngineRequest
from engine.backends.coalesce import CoalescingBackend
from engine.backends.families import get_family
from engine.backends.warm import WarmEngineStoppedError
from engine.datasets._base import default_score
from engine.frames.actors import DecodePool
from engine.frames.base import VideoInfo
from engine.frames.cache import FrameCache, decode_video
from engine.frames.decode import (
    DecodedVideo,
    DecodeError,
    check_source_size,
    get_decoder,
    sizes_needed,
)
from engine.frames.plan import FramePlan
from engine.frames.resize import size_for
from engine.frames.stats import stats_of
from engine.frames.view import MediaView, media_fingerprint, media_uuid
from engine.items import Item, Job
from engine.results.compact import compact_if_due
from engine.results.schema import ResultRow
from engine.results.store import ResultStore
from engine.results.video_stats import VideoStatsLog, stats_row
from engine.spec import BudgetPoint, ModelSpec, SweepSpec
from engine.sweep.engines import start_backends
from engine.sweep.fingerprint import AnswerPrints, item_decoder
from engine.sweep.jobs import plan_item
from engine.sweep.policy import GridPolicy, JobPolicy
from engine.sweep.preflight import preflight
from engine.sweep.prepare import Prepared, prepare
from engine.sweep.rows import JobContext, Scorer, error_kind, error_row, scored_row

__all__ = ["Sweep", "SweepSummary"]

log = logging.getLogger(__name__)

ProgressFn = Callable[[str, int], None]
"""progress(event, n): "total" (first-round jobs), "more" (jobs a policy added), "done", "committed", "decoded" (a
decode pass), and from `start_backends` "ray", "ray_up" and "engine_up" (n: the model's index in the spec)."""

Plans = dict[tuple[str, str, str], FramePlan]

Held = dict[str, DecodedVideo]
"""What earlier rounds of one video decoded, per pipeline ("raw": decoded from the file, "cached": the frame cache)."""

PlanErrors = dict[tuple[str, str, str], BaseException]


def _pkey(job: Job) -> tuple[str, str, str]:
    return job.model_id, job.item.item_id, job.budget.budget_id


@dataclass
class SweepSummary:
    """What a sweep run did."""

    jobs_total: int = 0
    jobs_skipped: int = 0
    jobs_ok: int = 0
    jobs_failed: int = 0
    jobs_failed_permanent: int = 0
    """Of `jobs_failed`, those whose media or item is at fault (`error_kind` permanent): a rerun fails them again."""
    videos: int = 0
    decode_calls: int = 0
    frames_decoded: int = 0
    wall_s: float = 0.0
    stopped: bool = False
    engines: dict[str, Any] = field(default_factory=dict)
    decode_workers: list[str] = field(default_factory=list)
    foreign_shards: list[str] = field(default_factory=list)
    """Shards of another sweep found in the results directory (ignored)."""


class Sweep:
    """One run of a sweep spec against its results directory (resumable)."""

    media_namespace: str | None = None
    """Prefix of this sweep's media uuids (see `engine.frames.view.media_uuid`); None: shared names."""

    def __init__(self, spec: SweepSpec, backends: dict[str, Backend] | None = None,
                 progress: ProgressFn | None = None, policy: JobPolicy | None = None) -> None:
        self.spec = spec
        self.policy: JobPolicy = policy or GridPolicy()
        self.backends: dict[str, Backend] = dict(backends or {})
        self._own_backends = backends is None
        self.progress = progress or (lambda event, n: None)
        self.summary = SweepSummary()
        self._stop = asyncio.Event()
        self._pool = ThreadPoolExecutor(max_workers=spec.decode.threads, thread_name_prefix="decode")
        self._models: dict[str, ModelSpec] = {m.id: m for m in spec.models}
        self._attempts: dict[tuple[str, str, str, str], int] = {}
        self._scorers: dict[str, Scorer] = {}
        self._coalesced: dict[str, CoalescingBackend] = {}
        self._cache: FrameCache | None = None
        self._decode_pool: DecodePool | None = None
        self._engines_task: asyncio.Task[None] | None = None
        self._stats_log: VideoStatsLog | None = None  # each video's low-level statistics (`_note_stats`)
        self._prints: AnswerPrints | None = None
        if spec.decode.pipeline == "cached" or any(b.pipeline == "cached" for b in spec.budgets):
            self._cache = FrameCache(spec.decode.cache_dir, fmt=spec.decode.cache_format)

    def request_stop(self) -> None:
        """Stop after committing what is finished (SIGINT/SIGTERM)."""
        log.warning("stop requested: committing finished rows and exiting")
        self._stop.set()

    async def run(self) -> SweepSummary:
        """Run (or resume) the sweep: the directory's lock first, then the items, the resume check and the plan
        (`engine.sweep.prepare`); Ray, decode actors and engines start only when something is pending."""
        t0 = time.perf_counter()
        preflight(self.spec, engines=self._own_backends)
        store: ResultStore | None = None
        try:
            store = ResultStore(self.spec.store.out_dir)  # first: a second driver stops here, before any work
            store.check_sweep(self.spec.sweep_id)
            ready = await prepare(self.spec, self.policy, store)
            self._adopt(ready)
            if ready.jobs:
                # Engines take longest to start (Ray, the actor, vLLM's import and load): they start now, while
                # the first videos decode; generation waits for them.
                if self._own_backends and not self.backends:
                    self._engines_task = asyncio.create_task(self._start_engines())
                await self._start_decoders()
                await self._run_videos(store, ready.items, ready.jobs)
        finally:
            if store is not None:
                store.close()
            if self._engines_task is not None:
                self._engines_task.cancel()  # a no-op once they are up; mid-start, start-up closes what it began
                await asyncio.gather(self._engines_task, return_exceptions=True)
            await asyncio.gather(*(c.close() for c in self._coalesced.values()))
            if self._decode_pool is not None:
                await self._decode_pool.close()
            if self._own_backends:
                await asyncio.gather(*(b.close() for b in self.backends.values()), return_exceptions=True)
            self._pool.shutdown(wait=False, cancel_futures=True)
        self.summary.wall_s = time.perf_counter() - t0
        self.summary.stopped = self._stop.is_set()
        return self.summary


    async def answer(self, jobs: list[Job]) -> list[ResultRow]:
        """Answer `jobs` (all of one video) through the pipeline without a store: warm-ups and probes."""
        try:
            return await self._run_video(jobs)
        finally:
            self._pool.shutdown(wait=False)

    def _adopt(self, ready: Prepared) -> None:
        """Take the prepared run's scorers, attempts and fingerprints; count its jobs."""
        self._scorers.update(ready.scorers)
        self._attempts = ready.attempts
        self._prints = ready.prints
        self.summary.jobs_total = ready.pending + ready.committed
        self.summary.jobs_skipped = ready.committed
        self.summary.videos = len(ready.jobs)
        self.summary.foreign_shards = [str(p) for p in ready.foreign]
        self.progress("total", ready.pending)

    async def _start_decoders(self) -> None:
        """Decode actors in the cluster when the spec asks for them (auto: one per node on a cluster)."""
        d = self.spec.decode
        n_actors = d.actors if d.actors is not None else (None if self.spec.ray_address else 0)
        if n_actors == 0 or self._decode_pool is not None or not any(b.frames for b in self.spec.budgets):
            return
        import ray

        from engine.runtime.cluster import ensure_ray

        await asyncio.to_thread(ensure_ray, self.spec.ray_address, dashboard=self.spec.ray_dashboard)
        if n_actors is None:
            n_actors = sum(1 for n in ray.nodes() if n.get("Alive"))
        cache_root = self._cache.dir.parent if self._cache is not None else None
        self._decode_pool = DecodePool(n_actors, d.actor_cpus, cache_root, d.cache_format)
        self.summary.decode_workers = await self._decode_pool.start()

    async def _start_engines(self) -> None:
        self.backends = await start_backends(self.spec, progress=self.progress)
        self.summary.engines = {k: b.info for k, b in self.backends.items()}

    async def _engines_ready(self) -> None:
        """Wait for the engines started with the run (a video waiting here does not cancel their start)."""
        if self._engines_task is not None:
            await asyncio.shield(self._engines_task)

    async def _run_videos(self, store: ResultStore, items: list[Item], jobs: dict[str, list[Job]]) -> None:
        sem = asyncio.Semaphore(self.spec.decode.max_videos_in_flight)
        self._stats_log = VideoStatsLog(store.out_dir)
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
                # the committer is watched too: a commit that fails (disk full) stops the sweep loudly;
                # so are the engines while they start (one that cannot start stops it at once)
                engines = {self._engines_task} if self._engines_task and not self._engines_task.done() else set()
                finished, pending = await asyncio.wait(pending | {stopper, committer} | engines,
                                                       return_when=asyncio.FIRST_COMPLETED)
                pending.discard(stopper)
                pending.discard(committer)
                pending -= engines
                errors = [t.exception() for t in finished if t is not stopper and not t.cancelled()]
                if first := next((e for e in errors if e is not None), None):
                    raise first
        finally:
            # every task ends here and has its outcome read (a second video failing like the first would
            # otherwise be logged as "Task exception was never retrieved", a traceback after the one sentence)
            for t in (*tasks, stopper, committer):
                t.cancel()
            await asyncio.gather(*tasks, stopper, committer, return_exceptions=True)
            for sig in installed:
                loop.remove_signal_handler(sig)
            await asyncio.to_thread(store.commit)
            await asyncio.to_thread(self._stats_log.commit, store.check_lock)

    async def _committer(self, store: ResultStore) -> None:
        cfg = self.spec.store
        while True:
            await asyncio.sleep(min(0.5, cfg.commit_interval_s))
            due = time.monotonic() - store.last_commit >= cfg.commit_interval_s
            if store.buffered and (due or store.buffered >= cfg.max_buffered_rows):
                n = await asyncio.to_thread(store.commit)
                self.progress("committed", n)
                await asyncio.to_thread(self._stats_log.commit, store.check_lock)  # type: ignore[union-attr]
                await asyncio.to_thread(compact_if_due, store)  # a day of commits stays a few shards

    def _attempt(self, job: Job) -> int:
        return self._attempts.get(tuple(job.key), 0) + 1  # type: ignore[arg-type]

    @staticmethod
    def _plan(job: Job, n_frames: int, fps: float) -> FramePlan:
        return plan_item(job.item, job.budget, n_frames, fps)

    @classmethod
    def _plan_each(cls, jobs: list[Job], n_frames: int, fps: float) -> tuple[Plans, PlanErrors]:
        """Plan every job; a job whose policy cannot plan this video gets its error instead, so one
        bad budget fails only its own jobs."""
        plans: Plans = {}
        failures: PlanErrors = {}
        for j in jobs:
            try:
                plans[_pkey(j)] = cls._plan(j, n_frames, fps)
            except Exception as err:  # noqa: BLE001 - a policy's failure is its budget's error row
                failures[_pkey(j)] = err
        return plans, failures

    def _pipeline(self, job: Job) -> str:
        """The job's pipeline: its budget's, else the [decode] setting."""
        return job.budget.pipeline or self.spec.decode.pipeline

    async def _decode(self, jobs: list[Job], held: Held) -> tuple[Held, Plans, PlanErrors]:
        """Plan every job of this video's round and decode, in one pass per pipeline, the frames nobody
        holds yet.

        `held` is what earlier rounds of the same video decoded (adaptive policies), per pipeline:
        only the frames it lacks at each size are decoded, and they join it. Raw and cached budgets
        of one video each get their own pass (raw from the file, cached through the frame cache). A
        job whose plan failed is in the returned errors instead of the plans.
        """
        item = jobs[0].item
        if all(j.budget.is_text_only for j in jobs):
            return held, {_pkey(j): self._plan(j, 0, 0.0) for j in jobs}, {}
        if item.video_path is None:
            raise DecodeError(f"item {item.item_id} has no video but the grid asks for frames")
        loop = asyncio.get_running_loop()
        decoder = get_decoder(self._decoder_name(item))
        info = (next(iter(held.values())).info if held else
                await loop.run_in_executor(self._pool, decoder.probe, item.video_path))
        check_source_size(item.video_path, info, self.spec.decode.max_source_pixels)  # before any frame decodes
        plans, failed = self._plan_each(jobs, info.n_frames, info.fps)
        visual = [j for j in jobs if _pkey(j) in plans and not j.budget.is_text_only]
        for pipeline in sorted({self._pipeline(j) for j in visual}):
            mine = [(j.budget, plans[_pkey(j)].indices) for j in visual if self._pipeline(j) == pipeline]
            await self._decode_pass(item.video_path, decoder.name, info, mine, held, pipeline)
        return held, plans, failed

    async def _decode_pass(self, path: Path, decoder: str, info: VideoInfo,
                           budgets: list[tuple[BudgetPoint, np.ndarray]], held: Held, pipeline: str) -> None:
        """Decode the union of `budgets`' frames one pipeline lacks, in one pass, into `held[pipeline]`."""
        mine = held.get(pipeline)
        need = sizes_needed(info, budgets)
        if mine is not None:
            need = {s: ix for s, ix in ((s, np.setdiff1d(ix, mine.covered(s))) for s, ix in need.items()) if ix.size}
        if not need:
            return
        # decode once, at the largest size needed; smaller sizes converted in the same pass
        main = max(need, key=lambda s: (s[0] * s[1], s))
        size = None if main == (info.width, info.height) else main
        also = {s: ix for s, ix in need.items() if s != main}
        cached = pipeline == "cached"
        decoded = None
        if self._decode_pool is not None:  # a decode actor somewhere in the cluster; None: none is left
            decoded = await self._decode_pool.decode(path, need[main], decoder, size, also, cached=cached)
        if decoded is None:
            work = functools.partial(decode_video, self._cache if cached else None, path, need[main], decoder, size,
                                     also)
            decoded = await asyncio.get_running_loop().run_in_executor(self._pool, work)
        self.summary.decode_calls += 1
        self.summary.frames_decoded += int(np.unique(np.concatenate(list(need.values()))).size)
        if mine is None:
            held[pipeline] = decoded
        else:
            mine.absorb(decoded)

    async def _run_video(self, video_jobs: list[Job]) -> list[ResultRow]:
        """All rounds of one video: the policy's first jobs, then whatever it asks for next."""
        rows: list[ResultRow] = []
        held: Held = {}
        jobs = video_jobs
        try:
            while jobs and not self._stop.is_set():
                answered, held = await self._run_round(jobs, held)
                by_key = {tuple(r.key): r for r in answered}
                jobs, derived = self.policy.next_round([(j, by_key[tuple(j.key)]) for j in jobs])
                rows += answered + derived
                if jobs or derived:
                    self.progress("more", len(jobs) + len(derived))
        finally:
            self._note_stats(video_jobs, held)
            for decoded in held.values():
                decoded.release()  # the in-flight cap bounds frame memory only if frames go when done
        self._count(rows)
        return rows

    async def _run_round(self, jobs: list[Job], held: Held) -> tuple[list[ResultRow], Held]:
        """Decode what this round lacks, ask every model, score: one row per job."""
        rows: list[ResultRow] = []
        try:
            held, plans, failed = await self._decode(jobs, held)
            rows = [error_row(self.spec, self._ctx(j, None, None), type(failed[_pkey(j)]).__name__,
                              f"frame plan: {failed[_pkey(j)]}", kind="permanent") for j in jobs if _pkey(j) in failed]
            jobs = [j for j in jobs if _pkey(j) in plans]
        except (DecodeError, ValueError, OSError) as err:
            # The video is unusable: its visual jobs become error rows; text-only jobs need no media.
            log.warning("%s: %s", jobs[0].item.video_id, err)
            rows = [error_row(self.spec, self._ctx(j, None, None), type(err).__name__, str(err), kind=error_kind(err))
                    for j in jobs if not j.budget.is_text_only]
            jobs = [j for j in jobs if j.budget.is_text_only]
            plans = {_pkey(j): self._plan(j, 0, 0.0) for j in jobs}
        by_model: dict[str, list[JobContext]] = defaultdict(list)
        for j in jobs:
            by_model[j.model_id].append(self._ctx(j, held.get(self._pipeline(j)), plans[_pkey(j)]))
        results = await asyncio.gather(*(self._generate(mid, ctxs, held) for mid, ctxs in by_model.items()))
        return rows + [r for part in results for r in part], held

    def _note_stats(self, jobs: list[Job], held: Held) -> None:
        """Keep the low-level statistics the video's raw decode computed (a few numbers, no pixels), once per
        (dataset, video) of its jobs; committed beside the rows (`engine.results.video_stats`)."""
        stats = stats_of(held.get("raw"))
        if stats is not None and self._stats_log is not None:
            videos = sorted({(j.item.dataset, j.item.video_id) for j in jobs})
            self._stats_log.add(stats_row(dataset, video, stats) for dataset, video in videos)

    def _count(self, rows: list[ResultRow]) -> None:
        ok = sum(r.status == "ok" for r in rows)
        self.summary.jobs_ok += ok
        self.summary.jobs_failed += len(rows) - ok
        self.summary.jobs_failed_permanent += sum(r.error_kind == "permanent" for r in rows)
        self.progress("done", len(rows))

    def _decoder_name(self, item: Item) -> str:
        return item_decoder(self.spec, item)

    def _ctx(self, job: Job, decoded: DecodedVideo | None, plan: FramePlan | None) -> JobContext:
        model = self._models[job.model_id]
        indices = plan.indices if plan is not None else np.empty(0, dtype=np.int64)
        ctx = JobContext(job, model.family, indices, None, None, self._decoder_name(job.item), None,
                         self._attempt(job))
        if plan is not None:
            ctx.repeated = plan.repeated
        if self._prints is not None:
            ctx.answer_fingerprint = self._prints.of(job)
        if not job.budget.is_text_only:
            ctx.pipeline = self._pipeline(job)
        if decoded is not None and indices.size:
            ctx.width, ctx.height = size_for(decoded.info.width, decoded.info.height, job.budget)
            ctx.decode_s = decoded.decode_s
            ctx.video_frames = decoded.info.n_frames
            ctx.video_frames_declared = decoded.info.declared_frames
        return ctx

    def _media(self, ctx: JobContext, decoded: DecodedVideo | None) -> MediaView | None:
        if decoded is None or not ctx.indices.size:
            return None
        size = (ctx.width, ctx.height)
        frames = decoded.view(ctx.indices, size, shared=True)  # type: ignore[arg-type]
        jpeg = decoded.view_jpeg(ctx.indices, size) if decoded.pipeline == "cached" else None  # type: ignore[arg-type]
        item = ctx.job.item
        content = media_fingerprint(item.video_path, decoded.decoder, decoded.pipeline, ctx.indices, size)
        uuid = media_uuid(item.media_key, ctx.job.budget.budget_id, image=item.media_kind == "image", clip=item.clip,
                          namespace=self.media_namespace, content=content)
        return MediaView(frames, ctx.indices, decoded.info.fps, decoded.info.n_frames, uuid, decoded.decoder,
                         jpeg_frames=jpeg)

    async def _generate(self, model_id: str, ctxs: list[JobContext], held: Held) -> list[ResultRow]:
        family = get_family(self._models[model_id].family)
        p = self.spec.prompt
        requests: list[EngineRequest] = []
        failed: list[ResultRow] = []
        ready: list[JobContext] = []
        for i, ctx in enumerate(ctxs):
            try:
                media = self._media(ctx, held.get(ctx.pipeline))
            except DecodeError as err:  # a frame this job needs does not exist or did not decode
                failed.append(error_row(self.spec, ctx, type(err).__name__, str(err), kind="permanent"))
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
        return failed + [scored_row(self.spec, c, r, self._scorers.get(c.job.item.dataset, default_score))
                         for c, r in zip(ctxs, results)]

    async def _generate_with_retries(self, model_id: str, ctxs: list[JobContext],
                                     requests: list[EngineRequest]) -> list[Any] | BaseException:
        """Generate; if the engine dies, wait for it to come back (or restart it) and retry the batch,
        up to `max_attempts` attempts per job (recorded on the rows); then the error is returned."""
        await self._engines_ready()
        backend = self.backends[model_id]
        if model_id not in self._coalesced:
            self._coalesced[model_id] = CoalescingBackend(backend)
        merged = self._coalesced[model_id]
        for n in range(self.spec.max_attempts):
            try:
                return await merged.generate(requests)
            except WarmEngineStoppedError:
                raise  # `engines down` took the warm engine away: the run ends, committing what it has
            except Exception as err:  # noqa: BLE001 - engine death: recover and retry, then errors as data
                log.error("engine for %s failed (attempt %d of %d): %s: %s", model_id, n + 1,
                          self.spec.max_attempts, type(err).__name__, err)
                if n + 1 >= self.spec.max_attempts or self._stop.is_set():
                    return err
                for c in ctxs:
                    c.attempt += 1
                try:
                    await backend.recover()
                except Exception as rerr:  # noqa: BLE001
                    log.error("engine for %s could not be recovered: %s", model_id, rerr)
                    return rerr
        raise AssertionError("unreachable")
