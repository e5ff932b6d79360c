"""The pipeline's decode step: per round of one video, plan every job and decode the frames nobody holds yet.

One pass per pipeline (raw from the file, cached through the frame cache) over the union of every job's
frames, at the largest size any job needs (smaller sizes converted in the same pass): a `DecodeRequest`
(`DecodeRequest.at_sizes`), given to `engine.frames.decode.decode_video`. The pass runs on a
decode actor when one is alive (`engine.frames.actors`: its frames stay in the object store of its node,
the node that will answer the video, and the driver gets their facts: a `RemoteVideo`), else in this
process's threads (its frames counted in `driver_bytes`): a `DecodedVideo` when the run has no decode actors,
put in the object store (`RemoteVideo.put`) when it has some but none is left, so one run holds one kind of
video and a later round's frames join the earlier ones' without fetching any (`engine.frames.held`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from engine.config import BudgetPoint, SweepSpec
from engine.frames.actors import DecodePool
from engine.frames.base import VideoInfo
from engine.frames.cache import FrameCache
from engine.frames.decode import (
    DecodeError,
    DecodeRequest,
    check_source_size,
    decode_video,
    get_decoder,
    sizes_needed,
)
from engine.frames.held import HeldVideo
from engine.frames.plan import FramePlan
from engine.frames.remote import RemoteVideo
from engine.items import Job
from engine.sweep.fingerprint import item_decoder
from engine.sweep.jobs import plan_item

__all__ = ["Decoding", "Held", "PlanErrors", "Plans", "Video", "pkey", "plan_each", "text_plans"]

log = logging.getLogger(__name__)

_DRIVER = f"{socket.gethostname()}:{os.getpid()}"
"""This process as the worker of the passes it decodes itself."""

Video = HeldVideo

Held = dict[str, Video]
"""What earlier rounds of one video decoded, per pipeline ("raw": decoded from the file, "cached": the frame cache)."""

Plans = dict[tuple[str, str, str], FramePlan]

PlanErrors = dict[tuple[str, str, str], BaseException]


def pkey(job: Job) -> tuple[str, str, str]:
    """A job's (model, item, budget): its plan's key within one video."""
    return job.model_id, job.item.item_id, job.budget.budget_id


def plan_each(jobs: list[Job], n_frames: int, fps: float) -> tuple[Plans, PlanErrors]:
    """Plan every job; a job whose policy cannot plan this video gets its error instead, so one bad budget
    fails only its own jobs."""
    plans: Plans = {}
    failures: PlanErrors = {}
    same: dict[tuple[object, ...], FramePlan | Exception] = {}  # one plan per budget, clip and media kind
    for j in jobs:
        key = (j.budget.budget_id, j.item.clip, j.item.media_kind)
        if key not in same:
            try:
                same[key] = plan_item(j.item, j.budget, n_frames, fps)
            except Exception as err:  # noqa: BLE001 - a policy's failure is its budget's error row
                same[key] = err
        got = same[key]
        if isinstance(got, Exception):
            failures[pkey(j)] = got
        else:
            plans[pkey(j)] = got
    return plans, failures


def text_plans(jobs: list[Job]) -> Plans:
    """The (empty) plans of text-only jobs."""
    return {pkey(j): plan_item(j.item, j.budget, 0, 0.0) for j in jobs}


class Decoding:
    """Decode passes for the pipeline, on decode actors or in this process; see the module docstring.

    Attributes:
        pool: The decode actors (None: decode in this process).
        calls: Decode passes so far.
        frames: Frames decoded so far (unique per pass).
        driver_bytes: Frame bytes that entered this process (local decodes, fetched or inlined objects).
    """

    def __init__(self, spec: SweepSpec, cache: FrameCache | None, threads: ThreadPoolExecutor,
                 progress: Callable[[str, int], None] | None = None) -> None:
        self.spec = spec
        self.cache = cache
        self.threads = threads
        self.progress = progress or (lambda event, n: None)
        self.pool: DecodePool | None = None
        self.calls = 0
        self.frames = 0
        self.driver_bytes = 0
        self._engine_nodes: set[str] = set()
        self._tried = False  # the decode actors were started (or none could be)

    def pipeline(self, job: Job) -> str:
        """The job's pipeline: its budget's, else the [decode] setting."""
        return job.budget.pipeline or self.spec.decode.pipeline

    def _actors_wanted(self) -> int | None:
        """Decode actors the spec asks for: 0 (decode here), a number, or None (one per alive node)."""
        d = self.spec.decode
        if not any(b.frames for b in self.spec.budgets):
            return 0
        return d.actors if d.actors is not None else (None if self.spec.ray_address else 0)

    def wants_actors(self) -> bool:
        return self.pool is None and not self._tried and self._actors_wanted() != 0

    async def start_actors(self) -> list[str]:
        """Start the decode actors (Ray is up); returns their workers (host:pid)."""
        import ray

        self._tried = True
        n_actors = self._actors_wanted()
        if n_actors is None:
            n_actors = sum(1 for n in ray.nodes() if n.get("Alive"))
        d = self.spec.decode
        cache_root = self.cache.dir.parent if self.cache is not None else None
        pool = DecodePool(n_actors, d.actor_cpus, cache_root, d.cache_format)
        pool.engine_nodes = self._engine_nodes
        workers = await pool.start()
        if workers:
            self.pool = pool
        else:  # none could start: the run decodes in this process, its videos stay here
            await pool.close()
        return workers

    def near_engines(self, nodes: set[str]) -> None:
        """The nodes the engines run on: videos are decoded there first."""
        self._engine_nodes = set(nodes)
        if self.pool is not None:
            self.pool.engine_nodes = self._engine_nodes

    async def close(self) -> None:
        if self.pool is not None:
            await self.pool.close()

    async def round(self, jobs: list[Job], held: Held) -> tuple[Held, Plans, PlanErrors]:
        """Plan every job of this video's round and decode, in one pass per pipeline, the frames nobody
        holds yet.

        `held` is what earlier rounds of the same video decoded (adaptive policies), per pipeline:
        only the frames it lacks at each size are decoded, and they join it. A job whose plan failed
        is in the returned errors instead of the plans.
        """
        item = jobs[0].item
        if all(j.budget.is_text_only for j in jobs):
            return held, text_plans(jobs), {}
        if item.video_path is None:
            raise DecodeError(f"item {item.item_id} has no video but the grid asks for frames")
        decoder = get_decoder(item_decoder(self.spec, item))
        info = (next(iter(held.values())).info if held else
                await asyncio.get_running_loop().run_in_executor(self.threads, decoder.probe, item.video_path))
        check_source_size(item.video_path, info, self.spec.decode.max_source_pixels)  # before any frame decodes
        plans, failed = plan_each(jobs, info.n_frames, info.fps)
        visual = [j for j in jobs if pkey(j) in plans and not j.budget.is_text_only]
        for pipeline in sorted({self.pipeline(j) for j in visual}):
            mine = [(j.budget, plans[pkey(j)].indices) for j in visual if self.pipeline(j) == pipeline]
            await self._pass(item.video_path, decoder.name, info, mine, held, pipeline)
        return held, plans, failed

    async def _pass(self, path: Path, decoder: str, info: VideoInfo,
                    budgets: list[tuple[BudgetPoint, np.ndarray]], held: Held, pipeline: str) -> None:
        """Decode the union of `budgets`' frames one pipeline lacks, in one pass, into `held[pipeline]`."""
        mine = held.get(pipeline)
        need = sizes_needed(info, budgets)
        if mine is not None:
            need = {s: ix for s, ix in ((s, np.setdiff1d(ix, mine.covered(s))) for s, ix in need.items()) if ix.size}
        if not need:
            return
        request = DecodeRequest.at_sizes(path, decoder, info, need)
        cached = pipeline == "cached"
        decoded: Video | None = None
        if self.pool is not None:  # a decode actor beside the engines; None: none is left
            near = mine.node_id if mine is not None else None
            decoded = await self.pool.decode(request, cached=cached, near=near)
        if decoded is None:
            decoded = await self._decode_here(request, cached)
        self.calls += 1
        self.frames += int(np.unique(np.concatenate(list(need.values()))).size)
        self.progress("decoded", 1)
        if mine is None:
            held[pipeline] = decoded
        else:
            mine.absorb(decoded)  # one kind per run (see the module docstring): by reference while remote

    async def _decode_here(self, request: DecodeRequest, cached: bool) -> Video:
        """One pass in this process's threads, its frames counted in `driver_bytes`; put in the object store when
        the run decodes on actors (so the run's videos stay of one kind)."""
        loop = asyncio.get_running_loop()
        local = await loop.run_in_executor(self.threads, decode_video, request, self.cache if cached else None)
        self.driver_bytes += local.nbytes
        if self.pool is None:
            return local
        return await loop.run_in_executor(self.threads, RemoteVideo.put, local, _DRIVER)

    def _drop(self, video: Video) -> None:
        self.driver_bytes += video.fetched_bytes
        video.release()

    def forget(self, held: Held, pipeline: str) -> None:
        """Drop what a pipeline holds (its frames were lost with their node): the next round decodes them again."""
        video = held.pop(pipeline, None)
        if video is not None:
            self._drop(video)

    def release(self, held: Held) -> None:
        """A video is done: its frames go (the in-flight cap bounds frame memory only if they do)."""
        for video in held.values():
            self._drop(video)
