"""The sweep scheduler: fan out model x item x budget jobs, one decode per video.

Data path per video: plan every pending budget's indices and decode their union once
(`engine.sweep.decoding`: on a decode actor beside the engines, whose frames stay in
the object store, or in this process's threads when none is alive), overlapping the
engines' work on other videos -> build requests (`engine.sweep.requests`: each budget's
frames by reference or as a view, video first, so the questions of one video and budget
share a prefix) -> generate on every model's backend -> score -> buffer rows -> commit
atomically every few seconds.

At most `decode.max_videos_in_flight` videos hold frames at once.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from engine.backends.base import Backend
from engine.backends.coalesce import CoalescingBackend
from engine.config import SweepSpec
from engine.frames.cache import FrameCache
from engine.frames.decode import DecodeError
from engine.items import Job
from engine.results.compact import compact_if_due
from engine.results.directory import ResultsDir
from engine.results.schema import ResultRow
from engine.results.store import ResultStore
from engine.results.video_stats import VideoStatsLog, stats_row
from engine.sweep.decoding import Decoding, Held, Plans, pkey, text_plans
from engine.sweep.engines import engine_nodes, start_backends
from engine.sweep.policy import GridPolicy, JobPolicy
from engine.sweep.preflight import Preflight, preflight
from engine.sweep.prepare import Prepared, prepare
from engine.sweep.requests import RequestBuilder
from engine.sweep.retry import FramesLostRetry, generate_with_retries
from engine.sweep.rows import JobContext, Scoring, error_kind, error_row

__all__ = ["Sweep", "SweepSummary"]

log = logging.getLogger(__name__)

ProgressFn = Callable[[str, int], None]
"""progress(event, n): "held" (the run holds its results directory: the lock is taken, nothing read yet), "total"
(first-round jobs), "more" (jobs a policy added), "done", "committed", "decoded" (a
decode pass), and from `start_backends` "ray", "ray_up" and "engine_up" (n: the model's index in the spec)."""


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
    driver_frame_bytes: int = 0
    """Frame bytes that entered the driver: decoded here (no decode actor alive), fetched for a backend that
    needs pixels here (HTTP), or kept by Ray in the driver's memory (objects under its inline limit). 0 while
    decode actors serve engines in the cluster."""
    internode_frame_bytes: int = 0
    """Frame bytes the engines' nodes pulled from other nodes (Ray's record of where each video's frames were
    when an engine asked for them). 0 when every video is decoded on its engine's node."""


class Sweep:
    """One run of a sweep spec against its results directory (resumable).

    Args:
        spec: The sweep.
        backends: The models' backends, started (None: the run starts its own engines, and closes them).
        progress: progress(event, n), see `ProgressFn`.
        policy: Which jobs run, round by round (default: every budget at once, `GridPolicy`).
        checked: The caller's `preflight` of this spec; the run checks it itself unless this covers it.
    """

    def __init__(self, spec: SweepSpec, backends: dict[str, Backend] | None = None,
                 progress: ProgressFn | None = None, policy: JobPolicy | None = None,
                 checked: Preflight | None = None) -> None:
        self.spec = spec
        self.checked = checked
        self.policy: JobPolicy = policy or GridPolicy()
        self.backends: dict[str, Backend] = dict(backends or {})
        self._own_backends = backends is None
        self.progress = progress or (lambda event, n: None)
        self.summary = SweepSummary()
        self.results: ResultsDir | None = None
        """The results directory as `run` opened it once (None before it holds it)."""
        self._stop = asyncio.Event()
        self._pool = ThreadPoolExecutor(max_workers=spec.decode.threads, thread_name_prefix="decode")
        self.scoring = Scoring(spec)
        self._coalesced: dict[str, CoalescingBackend] = {}
        self._engines_task: asyncio.Task[None] | None = None
        self._stats_log: VideoStatsLog | None = None  # each video's low-level statistics (`_note_stats`)
        cached = spec.decode.pipeline == "cached" or any(b.pipeline == "cached" for b in spec.budgets)
        cache = FrameCache(spec.decode.cache_dir, fmt=spec.decode.cache_format) if cached else None
        self.decoding = Decoding(spec, cache, self._pool, self.progress)
        self.requests = RequestBuilder(spec)

    @property
    def media_namespace(self) -> str | None:
        """Prefix of this sweep's media uuids (see `engine.frames.view.media_uuid`); None: shared names."""
        return self.requests.media_namespace

    @media_namespace.setter
    def media_namespace(self, value: str | None) -> None:
        self.requests.media_namespace = value

    def request_stop(self) -> None:
        """Stop after committing what is finished (SIGINT/SIGTERM)."""
        log.warning("stop requested: committing finished rows and exiting")
        self._stop.set()

    async def run(self) -> SweepSummary:
        """Run (or resume) the sweep: the directory's lock first, then the items, the resume check and the plan
        (`engine.sweep.prepare`); Ray, decode actors and engines start only when something is pending."""
        t0 = time.perf_counter()
        if self.checked is None or not self.checked.covers(self.spec, self._own_backends):
            self.checked = preflight(self.spec, engines=self._own_backends)
        store: ResultStore | None = None
        try:
            store = ResultStore(self.spec.store.out_dir)  # first: a second driver stops here, before any work
            self.progress("held", 0)
            ready = await prepare(self.spec, self.policy, store)
            self._adopt(ready)
            if ready.jobs:
                # Engines take longest to start (Ray, the actor, vLLM's import and load): they start now, while
                # the first videos decode; generation waits for them.
                if self._own_backends and not self.backends:
                    self._engines_task = asyncio.create_task(self._start_engines())
                await self._start_decoders()
                await self._run_videos(store, ready.jobs)
        finally:
            if store is not None:
                store.close()
            await self._close()
        self.summary.wall_s = time.perf_counter() - t0
        self.summary.stopped = self._stop.is_set()
        self.summary.decode_calls, self.summary.frames_decoded = self.decoding.calls, self.decoding.frames
        self.summary.driver_frame_bytes = self.decoding.driver_bytes
        log.info("frame bytes: %d into the driver, %d between nodes (%d jobs)", self.summary.driver_frame_bytes,
                 self.summary.internode_frame_bytes, self.summary.jobs_ok + self.summary.jobs_failed)
        return self.summary

    async def _close(self) -> None:
        if self._engines_task is not None:
            self._engines_task.cancel()  # a no-op once they are up; mid-start, start-up closes what it began
            await asyncio.gather(self._engines_task, return_exceptions=True)
        await asyncio.gather(*(c.close() for c in self._coalesced.values()))
        await self.decoding.close()
        if self._own_backends:
            await asyncio.gather(*(b.close() for b in self.backends.values()), return_exceptions=True)
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def answer(self, jobs: list[Job]) -> list[ResultRow]:
        """Answer `jobs` (all of one video) through the pipeline without a store: warm-ups and probes."""
        try:
            return await self._run_video(jobs)
        finally:
            self._pool.shutdown(wait=False)

    def _adopt(self, ready: Prepared) -> None:
        """Take the prepared run's scoring rules, per-job prompts, attempts and fingerprints; count its jobs."""
        self.scoring = Scoring(self.spec, ready.scorers)
        self.requests.attempts = ready.attempts
        self.requests.prints = ready.prints
        self.requests.prompts = ready.prompts
        self.summary.jobs_total = ready.pending + ready.committed
        self.summary.jobs_skipped = ready.committed
        self.summary.videos = len(ready.jobs)
        self.summary.foreign_shards = [str(p) for p in ready.foreign]
        self.results = ready.results
        self.progress("total", ready.pending)

    async def _start_decoders(self) -> None:
        """Decode actors in the cluster when the spec asks for them (auto: one per node on a cluster)."""
        if not self.decoding.wants_actors():
            return
        from engine.runtime.cluster import ensure_ray

        await asyncio.to_thread(ensure_ray, self.spec.ray_address, dashboard=self.spec.ray_dashboard)
        self.summary.decode_workers = await self.decoding.start_actors()
        self.decoding.near_engines(engine_nodes(self.backends))  # engines given: decode beside them from the start

    async def _start_engines(self) -> None:
        self.backends = await start_backends(self.spec, progress=self.progress)
        self.summary.engines = {k: b.info for k, b in self.backends.items()}
        self.decoding.near_engines(engine_nodes(self.backends))

    async def _engines_ready(self) -> None:
        """Wait for the engines started with the run (a video waiting here does not cancel their start)."""
        if self._engines_task is not None:
            await asyncio.shield(self._engines_task)

    async def _run_videos(self, store: ResultStore, jobs: dict[str, list[Job]]) -> None:
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
            pending: set[asyncio.Task[Any]] = set(tasks)
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
            self.decoding.release(held)  # the in-flight cap bounds frame memory only if frames go when done
            self.summary.decode_calls, self.summary.frames_decoded = self.decoding.calls, self.decoding.frames
        self._count(rows)
        return rows

    async def _run_round(self, jobs: list[Job], held: Held) -> tuple[list[ResultRow], Held]:
        """Decode what this round lacks, ask every model, score: one row per job. Jobs whose frames were lost
        with their node are decoded and asked again, each on its next attempt (`FramesLostRetry`)."""
        retry = FramesLostRetry(jobs, self.spec.max_attempts)
        while retry.pending:
            rows = await self._try_round(retry, held)
            again = retry.settle(rows, stopping=self._stop.is_set())
            if again:
                log.warning("%s: the frames of %d job(s) were lost with their node; decoding them again",
                            again[0].item.video_id, len(again))
                for pipeline in {self.decoding.pipeline(j) for j in again}:
                    self.decoding.forget(held, pipeline)
        return retry.rows, held

    async def _try_round(self, retry: FramesLostRetry, held: Held) -> list[ResultRow]:
        """One try of the round's pending jobs: decode, ask every model, score."""
        rows, jobs, plans = await self._decode(retry, held)
        by_model: dict[str, list[JobContext]] = defaultdict(list)
        for j in jobs:
            video = held.get(self.decoding.pipeline(j))
            by_model[j.model_id].append(self.requests.context(j, video, plans[pkey(j)], retry.attempt(j)))
        results = await asyncio.gather(*(self._generate(mid, ctxs, held) for mid, ctxs in by_model.items()))
        return rows + [r for part in results for r in part]

    async def _decode(self, retry: FramesLostRetry, held: Held) -> tuple[list[ResultRow], list[Job], Plans]:
        """The round's decode: error rows for jobs that cannot be planned or whose video is unusable, the jobs
        left and their plans."""
        jobs = retry.pending
        try:
            _, plans, failed = await self.decoding.round(jobs, held)
        except (DecodeError, ValueError, OSError) as err:
            # The video is unusable: its visual jobs become error rows; text-only jobs need no media.
            log.warning("%s: %s", jobs[0].item.video_id, err)
            rows = [error_row(self.spec, self.requests.context(j, None, None, retry.attempt(j)), type(err).__name__,
                              str(err), kind=error_kind(err)) for j in jobs if not j.budget.is_text_only]
            jobs = [j for j in jobs if j.budget.is_text_only]
            return rows, jobs, text_plans(jobs)
        rows = [error_row(self.spec, self.requests.context(j, None, None, retry.attempt(j)),
                          type(failed[pkey(j)]).__name__, f"frame plan: {failed[pkey(j)]}", kind="permanent")
                for j in jobs if pkey(j) in failed]
        return rows, [j for j in jobs if pkey(j) in plans], plans

    def _note_stats(self, jobs: list[Job], held: Held) -> None:
        """Keep the low-level statistics the video's raw decode computed (a few numbers, no pixels), once per
        (dataset, video) of its jobs; committed beside the rows (`engine.results.video_stats`)."""
        raw = held.get("raw")
        stats = raw.stats if raw is not None else None
        if stats is not None and self._stats_log is not None:
            videos = sorted({(j.item.dataset, j.item.video_id) for j in jobs})
            self._stats_log.add(stats_row(dataset, video, stats) for dataset, video in videos)

    def _count(self, rows: list[ResultRow]) -> None:
        ok = sum(r.status == "ok" for r in rows)
        self.summary.jobs_ok += ok
        self.summary.jobs_failed += len(rows) - ok
        self.summary.jobs_failed_permanent += sum(r.error_kind == "permanent" for r in rows)
        self.progress("done", len(rows))

    async def _generate(self, model_id: str, ctxs: list[JobContext], held: Held) -> list[ResultRow]:
        """Build the requests of one model's jobs of a video, generate (retrying a dead engine), score."""
        await self._engines_ready()
        backend = self.backends[model_id]
        by_ref = bool(getattr(backend, "takes_frame_refs", False))
        ready, failed = self.requests.build(model_id, ctxs, held, by_ref)
        if not ready:
            return failed
        if model_id not in self._coalesced:
            self._coalesced[model_id] = CoalescingBackend(backend)
        sent, results = await generate_with_retries(backend, self._coalesced[model_id], ready, self.spec.max_attempts,
                                                    self._stop.is_set, model_id)
        if isinstance(results, BaseException):
            return failed + [self.scoring.failed(c, results) for c in sent]
        self.summary.internode_frame_bytes += sum(r.frame_bytes_pulled for r in results)
        return failed + [self.scoring.row(c, r) for c, r in zip(sent, results)]
