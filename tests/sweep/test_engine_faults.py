"""An engine actor and a decode actor killed mid-sweep are restarted by Ray; the engine's jobs are
retried, the decode actor's videos go to the other one, and the sweep completes. The same for vLLM's
engine-core process killed (the actor notices) or hung (the batch deadline expires).

The actor test runs the CPU build's default, the engine core in the actor's process (a crash of
either is one crash); the engine-core tests ask for the core in its own process
(`engine_core = "process"`, vLLM's default and the GPU default), the one the actor must watch."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

import polars as pl
import pytest
from helpers.specs import small_spec_dict

from engine.config import parse_spec
from engine.results import ResultsDir
from engine.sweep import Sweep, start_backends

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)


@pytest.fixture(scope="module", autouse=True)
def cluster():
    """One local Ray cluster for the module: each test's engines and decode actors start (and end) on it."""
    import ray

    from engine.runtime.cluster import ensure_ray

    ensure_ray()
    yield
    ray.shutdown()


def test_engine_actor_killed_mid_run_restarts_and_completes(tmp_path: Path) -> None:
    import ray

    d = small_spec_dict(tmp_path / "out")
    d["dataset"]["n_videos"] = 6
    d["decode"] = {"actors": 2, "actor_cpus": 0.25, "max_videos_in_flight": 2}
    spec = parse_spec(d)

    async def go():
        backends = await start_backends(spec)
        actor = backends["tiny"].actor
        sweep = Sweep(spec, backends=backends)
        run = asyncio.create_task(sweep.run())
        # crash the engine (the actor process dies; Ray restarts it) once the sweep is under way
        while sweep.summary.jobs_ok == 0:
            await asyncio.sleep(0.05)
        ray.kill(actor, no_restart=False)
        victim = sweep.decoding.pool._pool.members[0]
        first = await victim.info.remote()
        ray.kill(victim, no_restart=False)  # and one decode actor
        # Ray restarts the decode actor (a new process) while the sweep goes on; whether the sweep noticed
        # the death depends on whether it called that actor before the restart finished
        # (tests/frames/test_decode_actors.py covers that case)
        again = None
        for _ in range(240):  # until the restarted process answers (the kill itself is asynchronous)
            try:
                again = await victim.info.remote()
                if again["worker"] != first["worker"]:
                    break
            except ray.exceptions.RayActorError:
                pass
            await asyncio.sleep(0.5)
        summary = await run
        pool_facts = (again is not None and first["worker"] != again["worker"], sweep.decoding.pool.local_fallbacks,
                      len(summary.decode_workers))
        info = backends["tiny"].info
        await asyncio.gather(*(b.close() for b in backends.values()))
        return summary, info, pool_facts

    summary, info, (decode_restarted, fallbacks, n_decoders) = asyncio.run(go())
    assert info["engine_core"] == "in_process" and info["engine_pids"] == []  # the CPU build's default
    assert summary.jobs_failed == 0 and summary.jobs_ok == 6 * 3 * 4
    rows = ResultsDir.open(tmp_path / "out").scan().collect()
    assert rows.height == 72 and rows.select(["item_id", "budget_id"]).n_unique() == 72
    assert n_decoders == 2 and decode_restarted and fallbacks == 0
    assert (rows["status"] == "ok").all()
    retried = rows.filter(pl.col("attempt") == 2)
    assert retried.height > 0, "the jobs in flight when the engine died were retried"
    # the retried rows were answered by the restarted engine process, a different one from the first
    assert set(retried["worker"]) == {info["worker"]}
    assert len(set(rows["worker"])) == 2


def _engine_core(pids: list[int], info: dict) -> int:
    """The engine-core process the actor watches: the one vLLM's client started, among the watched pids."""
    core = info["engine_core_pid"]
    assert core is not None and core in pids, f"the actor does not watch vLLM's engine core: {info}"
    return int(core)


def _gone(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.fixture(scope="module")
def core_engine(tmp_path_factory: pytest.TempPathFactory):
    """(spec, backends, loop): one engine with vLLM's engine core in its own process, for the module's engine-core
    faults (each restarts it; the next fault hits the restarted one). Its batch deadline is short enough that the
    hung core is caught in about 20 s, long enough for every normal batch of this spec."""

    d = small_spec_dict(tmp_path_factory.mktemp("core") / "out")
    d["dataset"]["n_videos"] = 4
    d["models"][0]["engine"].update(deadline_base_s=10.0, deadline_per_request_s=0.5, deadline_per_frame_s=0.05,
                                    engine_core="process")
    spec = parse_spec(d)
    loop = asyncio.new_event_loop()
    try:
        backends = loop.run_until_complete(start_backends(spec))
        yield spec, backends, loop

        async def close() -> None:
            await asyncio.gather(*(b.close() for b in backends.values()))

        loop.run_until_complete(close())
    finally:
        loop.close()


def _run_with_engine_fault(core_engine, out: Path, fault) -> tuple:  # type: ignore[no-untyped-def]
    """Run the module's spec into `out` on its engine; once some job is answered, `fault(the engine actor's info)`
    hits the engine core."""
    spec, backends, loop = core_engine

    async def go():
        first = dict(backends["tiny"].info)
        sweep = Sweep(spec.with_out_dir(out), backends=backends)
        run = asyncio.create_task(sweep.run())
        while sweep.summary.jobs_ok == 0:
            await asyncio.sleep(0.05)
        fault(first)
        summary = await run
        return summary, first, dict(backends["tiny"].info)

    return loop.run_until_complete(go())


def _assert_completed_after_one_restart(out: Path, summary, first: dict, info: dict) -> None:  # type: ignore[no-untyped-def]
    assert summary.jobs_failed == 0 and summary.jobs_ok == 4 * 3 * 4
    rows = ResultsDir.open(out).scan().collect()
    assert rows.height == 48 and rows.select(["item_id", "budget_id"]).n_unique() == 48
    assert (rows["status"] == "ok").all()
    retried = rows.filter(pl.col("attempt") == 2)
    assert retried.height > 0, "the batch in flight when the engine core died was retried"
    assert info["worker"] != first["worker"] and set(retried["worker"]) == {info["worker"]}
    assert set(info["engine_pids"]).isdisjoint(first["engine_pids"])
    assert all(_gone(p) for p in first["engine_pids"]), "the old engine processes were left running"


def test_engine_core_killed_mid_run_is_detected_and_the_batch_retried(core_engine, tmp_path: Path) -> None:
    """SIGKILL of vLLM's EngineCore process (the actor's child; the actor itself stays alive, and vLLM's
    client would wait for outputs forever): the actor notices, ends, Ray restarts it, the batch is retried."""
    summary, first, info = _run_with_engine_fault(
        core_engine, tmp_path / "out", lambda info: os.kill(_engine_core(info["engine_pids"], info), signal.SIGKILL))
    _assert_completed_after_one_restart(tmp_path / "out", summary, first, info)


def test_hung_engine_core_misses_the_batch_deadline_and_is_restarted(core_engine, tmp_path: Path) -> None:
    """SIGSTOP of the EngineCore: every process is alive but nothing answers. The batch's deadline (from
    its requests and frames) expires; the actor is killed, restarted by Ray, and the batch retried."""
    stopped: list[int] = []

    def stop(info: dict) -> None:
        stopped.extend(info["engine_pids"])
        os.kill(_engine_core(info["engine_pids"], info), signal.SIGSTOP)

    try:
        summary, first, info = _run_with_engine_fault(core_engine, tmp_path / "out", stop)
    finally:
        for pid in stopped:  # a stopped process cannot notice its parent's death: end it here
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    time.sleep(1.0)
    _assert_completed_after_one_restart(tmp_path / "out", summary, first, info)
