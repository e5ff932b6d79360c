"""An engine actor and a decode actor killed mid-sweep are restarted by Ray; the engine's jobs are
retried, the decode actor's videos go to the other one, and the sweep completes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import polars as pl
from conftest import small_spec_dict

from engine.results.store import scan_results
from engine.spec import parse_spec
from engine.sweep import Sweep, start_backends


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
        victim = sweep._decode_pool._pool.members[0]
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
        pool_facts = (again is not None and first["worker"] != again["worker"], sweep._decode_pool.local_fallbacks,
                      len(summary.decode_workers))
        info = backends["tiny"].info
        await asyncio.gather(*(b.close() for b in backends.values()))
        return summary, info, pool_facts

    try:
        summary, info, (decode_restarted, fallbacks, n_decoders) = asyncio.run(go())
    finally:
        ray.shutdown()
    assert summary.jobs_failed == 0 and summary.jobs_ok == 6 * 3 * 4
    rows = scan_results(tmp_path / "out").collect()
    assert rows.height == 72 and rows.select(["item_id", "budget_id"]).n_unique() == 72
    assert n_decoders == 2 and decode_restarted and fallbacks == 0
    assert (rows["status"] == "ok").all()
    retried = rows.filter(pl.col("attempt") == 2)
    assert retried.height > 0, "the jobs in flight when the engine died were retried"
    # the retried rows were answered by the restarted engine process, a different one from the first
    assert set(retried["worker"]) == {info["worker"]}
    assert len(set(rows["worker"])) == 2
