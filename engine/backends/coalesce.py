"""Keep the engine's batches full: merge the requests of videos that are ready at the same time.

The scheduler sends one batch per video (every budget x question of it). While the
engine answers one batch, the next videos finish decoding; their batches queue here
and go to the engine together as one call, so the engine sees large batches (as a
single `LLM.generate` over the whole sweep would) instead of one video's worth at a
time. Each caller gets back exactly its own results, or the engine's exception.
Batches whose frames (by reference) lie on different nodes go in different calls,
so each call can go to an engine beside its frames (`frames_node`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from engine.backends.base import Backend, EngineRequest, EngineResult, frames_node

__all__ = ["CoalescingBackend"]


class CoalescingBackend:
    """Wraps a `Backend`: `concurrency` engine calls at a time (one per engine replica; default the
    backend's own `concurrency`, else 1), each carrying every batch queued meanwhile.

    The task that hands batches out runs only while batches are queued: an idle coalescer holds no
    pending task, so one dropped without `close` (a pipeline used for one answer) leaves none behind
    for the garbage collector to destroy pending. `close` cancels the calls in flight; their callers
    are cancelled too, never left waiting."""

    def __init__(self, backend: Backend, max_requests: int = 512, concurrency: int | None = None) -> None:
        self.backend = backend
        self.name = backend.name
        self.max_requests = max_requests
        self.concurrency = max(1, concurrency or int(backend.concurrency))
        self._calls: set[asyncio.Task[None]] = set()
        self._queue: list[tuple[list[EngineRequest], asyncio.Future[list[EngineResult]]]] = []
        self._slots = asyncio.Semaphore(self.concurrency)
        self._worker: asyncio.Task[None] | None = None
        self.calls = 0

    @property
    def takes_frame_refs(self) -> bool:
        return bool(self.backend.takes_frame_refs)

    async def start(self) -> dict[str, Any]:
        return await self.backend.start()

    async def reset_caches(self) -> int:
        return await self.backend.reset_caches()

    async def close(self) -> None:
        tasks = [t for t in (self._worker, *self._calls) if t is not None]
        self._worker = None
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        queued, self._queue = self._queue, []
        for _, fut in queued:
            fut.cancel()

    async def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        fut: asyncio.Future[list[EngineResult]] = asyncio.get_running_loop().create_future()
        self._queue.append((list(requests), fut))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._run())
        return await fut

    def _take(self) -> list[tuple[list[EngineRequest], asyncio.Future[list[EngineResult]]]]:
        """The queued batches for one call, oldest first, up to `max_requests`: those whose frames lie on the
        first one's node (or nowhere: text only, pixels); the others wait for the next call."""
        batch: list[tuple[list[EngineRequest], asyncio.Future[list[EngineResult]]]] = []
        rest = []
        n, node = 0, None
        for i, (reqs, fut) in enumerate(self._queue):
            if fut.cancelled():
                continue
            if batch and n + len(reqs) > self.max_requests:
                rest += self._queue[i:]
                break
            mine = frames_node(reqs)
            if mine is not None and node is not None and mine != node:
                rest.append((reqs, fut))
                continue
            batch.append((reqs, fut))
            n += len(reqs)
            node = node or mine
        self._queue = rest
        return batch

    async def _run(self) -> None:
        """Hand the queued batches out, as many per call as were queued while every slot was busy; return
        when nothing is queued (the next `generate` starts a new one)."""
        while self._queue:
            await self._slots.acquire()  # while every slot is busy, batches keep queueing (and merge)
            batch = self._take()
            if not batch:
                self._slots.release()
                continue
            task = asyncio.create_task(self._call(batch))
            self._calls.add(task)
            task.add_done_callback(self._call_done)

    def _call_done(self, task: asyncio.Task[None]) -> None:
        self._calls.discard(task)
        self._slots.release()

    async def _call(self, batch: list[tuple[list[EngineRequest], asyncio.Future[list[EngineResult]]]]) -> None:
        flat = [r for reqs, _ in batch for r in reqs]
        self.calls += 1
        try:
            results = await self.backend.generate(flat)
        except asyncio.CancelledError:  # closed: the callers are cancelled, not left waiting
            for _, fut in batch:
                fut.cancel()
            raise
        except Exception as err:  # noqa: BLE001 - every caller sees the engine's error
            for _, fut in batch:
                if not fut.done():
                    fut.set_exception(err)
            return
        i = 0
        for reqs, fut in batch:
            if not fut.done():
                fut.set_result(list(results[i:i + len(reqs)]))
            i += len(reqs)
