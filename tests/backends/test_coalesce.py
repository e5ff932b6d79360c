"""Batches queued while the engine is busy go to it together; each caller gets its own results."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from engine.backends.base import BackendBase, EngineRequest, EngineResult
from engine.backends.coalesce import CoalescingBackend


class SlowEcho(BackendBase):
    """An engine stand-in that records its call sizes (the test is about batching, not generation)."""

    name = "echo"

    def __init__(self, fail_on: str | None = None) -> None:
        self.sizes: list[int] = []
        self.fail_on = fail_on

    async def start(self) -> dict:
        return {}

    async def close(self) -> None:
        pass

    async def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        self.sizes.append(len(requests))
        await asyncio.sleep(0.05)
        if self.fail_on and any(r.request_id == self.fail_on for r in requests):
            raise RuntimeError("engine died")
        return [EngineResult(r.request_id, text=r.request_id) for r in requests]


def _reqs(tag: str, n: int) -> list[EngineRequest]:
    return [EngineRequest(f"{tag}{i}", "p") for i in range(n)]


def test_queued_batches_merge_and_split_back() -> None:
    engine = SlowEcho()
    merged = CoalescingBackend(engine)

    async def go():
        first = asyncio.create_task(merged.generate(_reqs("a", 3)))
        await asyncio.sleep(0.01)  # the engine is busy with "a"; b, c and d queue meanwhile
        rest = await asyncio.gather(*(merged.generate(_reqs(t, 2)) for t in "bcd"))
        return await first, rest

    first, rest = asyncio.run(go())
    assert engine.sizes == [3, 6]  # b, c and d went in one call
    assert [r.text for r in first] == ["a0", "a1", "a2"]
    assert [[r.text for r in part] for part in rest] == [["b0", "b1"], ["c0", "c1"], ["d0", "d1"]]


def test_engine_error_reaches_every_caller_of_that_call() -> None:
    merged = CoalescingBackend(SlowEcho(fail_on="b0"))

    async def go():
        a = asyncio.create_task(merged.generate(_reqs("a", 1)))
        await asyncio.sleep(0.01)
        b = asyncio.create_task(merged.generate(_reqs("b", 1)))
        c = asyncio.create_task(merged.generate(_reqs("c", 1)))
        return await asyncio.gather(a, b, c, return_exceptions=True)

    a, b, c = asyncio.run(go())
    assert a[0].text == "a0"
    assert isinstance(b, RuntimeError) and isinstance(c, RuntimeError)


def test_max_requests_splits_calls() -> None:
    engine = SlowEcho()
    merged = CoalescingBackend(engine, max_requests=4)

    async def go():
        first = asyncio.create_task(merged.generate(_reqs("a", 1)))
        await asyncio.sleep(0.01)
        await asyncio.gather(*(merged.generate(_reqs(t, 3)) for t in "bcd"))
        await first

    asyncio.run(go())
    assert engine.sizes == [1, 3, 3, 3]  # never more than max_requests in one call


def test_one_call_in_flight_per_replica() -> None:
    class Replicated(SlowEcho):
        concurrency = 2

        def __init__(self) -> None:
            super().__init__()
            self.active = self.peak = 0

        async def generate(self, requests):
            self.active += 1
            self.peak = max(self.peak, self.active)
            try:
                return await super().generate(requests)
            finally:
                self.active -= 1

    engine = Replicated()
    merged = CoalescingBackend(engine)

    async def go():
        a = asyncio.create_task(merged.generate(_reqs("a", 3)))
        await asyncio.sleep(0.01)
        b = asyncio.create_task(merged.generate(_reqs("b", 2)))  # a free slot: goes at once
        await asyncio.sleep(0.01)
        rest = [asyncio.create_task(merged.generate(_reqs(t, 1))) for t in "cd"]  # both slots busy: queue
        return await a, await b, await asyncio.gather(*rest)

    _, b, rest = asyncio.run(go())
    assert engine.peak == 2 and engine.sizes == [3, 2, 2]
    assert [r.text for r in b] == ["b0", "b1"] and [[r.text for r in x] for x in rest] == [["c0"], ["d0"]]


def test_an_idle_coalescer_dropped_without_close_leaves_no_pending_task(caplog) -> None:  # type: ignore[no-untyped-def]
    """A pipeline used for one answer (the cascade's warm-up) drops its coalescer without closing it. Its
    dispatching task used to wait for the next batch forever, and the garbage collector destroyed it pending
    ("Task was destroyed but it is pending!" on every cascade run); it now ends once nothing is queued."""
    import gc
    import logging

    async def use() -> list[str]:
        merged = CoalescingBackend(SlowEcho())
        return [r.text for r in await merged.generate(_reqs("a", 2))]

    async def go() -> tuple[list[str], int]:
        texts = await use()
        await asyncio.sleep(0)  # the finished call's callbacks run
        gc.collect()
        await asyncio.sleep(0)
        return texts, len(asyncio.all_tasks())

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        texts, tasks = asyncio.run(go())
        gc.collect()
    assert texts == ["a0", "a1"] and tasks == 1  # only the test's own
    assert "destroyed but it is pending" not in caplog.text, caplog.text


def test_close_cancels_the_calls_in_flight_and_their_callers() -> None:
    merged = CoalescingBackend(SlowEcho())

    async def go():  # type: ignore[no-untyped-def]
        caller = asyncio.create_task(merged.generate(_reqs("a", 1)))
        await asyncio.sleep(0.01)  # in the engine
        queued = asyncio.create_task(merged.generate(_reqs("b", 1)))  # waits for the slot
        await asyncio.sleep(0)
        await merged.close()
        done = await asyncio.wait_for(asyncio.gather(caller, queued, return_exceptions=True), 5)  # never hangs
        return done, len(asyncio.all_tasks())

    done, tasks = asyncio.run(go())
    assert all(isinstance(d, asyncio.CancelledError) for d in done), done
    assert tasks == 1


def _on(node: str | None, tag: str, n: int) -> list[EngineRequest]:
    """Requests whose frames lie (by reference) on `node`; None: text only."""
    import numpy as np

    from engine.frames.view import FrameRef

    ref = FrameRef((f"obj-{tag}",), np.arange(2), (8, 8), node) if node else None
    return [EngineRequest(f"{tag}{i}", "p", video=ref) for i in range(n)]


def test_batches_whose_frames_lie_on_other_nodes_go_in_separate_calls() -> None:
    """Each call holds the frames of one node (and text-only requests), so it can go to an engine beside them."""
    from engine.backends.base import frames_node

    class Recorder(SlowEcho):
        def __init__(self) -> None:
            super().__init__()
            self.nodes: list[str | None] = []

        async def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
            self.nodes.append(frames_node(requests))
            return await super().generate(requests)

    engine = Recorder()
    merged = CoalescingBackend(engine)

    async def go():
        first = asyncio.create_task(merged.generate(_on("n1", "a", 1)))
        await asyncio.sleep(0.01)  # busy: the next four queue
        return await asyncio.gather(first, *(merged.generate(_on(node, tag, 2)) for node, tag in
                                             (("n1", "b"), ("n2", "c"), (None, "d"), ("n1", "e"))))

    results = asyncio.run(go())
    assert engine.sizes == [1, 6, 2] and engine.nodes == ["n1", "n1", "n2"]  # b, d and e together; c alone
    assert [[r.text for r in part] for part in results] == [["a0"], ["b0", "b1"], ["c0", "c1"], ["d0", "d1"],
                                                            ["e0", "e1"]]
