"""The cascade and the predictor ride the sweep's pipeline, so an engine actor killed mid-run is
restarted and its batch retried for them too (not turned into error rows as a second code path would)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from helpers.specs import small_spec_dict

from engine.adaptive.cascade import CascadeSweep, cascade_budget_id
from engine.adaptive.predictor import QuestionPolicy, predict_frames
from engine.config import SweepSpec, parse_spec
from engine.results import ResultsDir
from engine.sweep import Sweep, start_backends

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)

STAGES = ["f2-nested", "f4-nested", "f8-nested"]


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> SweepSpec:
    d = small_spec_dict(tmp_path_factory.mktemp("grid"))
    d["dataset"]["n_videos"] = 6
    d["budgets"] = [{"frames": 0}] + [{"frames": n, "policy": "nested"} for n in (2, 4, 8)]
    return parse_spec(d)


async def _kill_when_under_way(sweep: Sweep, backends: dict[str, Any], run: asyncio.Task) -> bool:
    import ray

    while sweep.summary.jobs_ok == 0 and not run.done():
        await asyncio.sleep(0.02)
    killed = not run.done()
    ray.kill(backends["tiny"].actor, no_restart=False)  # the process dies; Ray restarts it
    return killed


def test_cascade_and_predictor_survive_an_engine_kill(spec: SweepSpec, tmp_path: Path) -> None:
    import ray

    tau = 1.01  # never sure: every item visits every stage, so the kill lands in a later round
    stages = [b for b in spec.budgets if b.budget_id in STAGES]

    async def go() -> tuple[Any, ...]:
        backends = await start_backends(spec)
        try:
            cascade = CascadeSweep(spec.with_out_dir(tmp_path / "online"), stages, tau, backends=backends)
            run = asyncio.create_task(cascade.run())
            killed_cascade = await _kill_when_under_way(cascade, backends, run)
            cascade_summary = await run

            frames = sorted({b.frames for b in spec.budgets})
            asked = Sweep(spec.with_out_dir(tmp_path / "asked"), backends=backends,
                          policy=QuestionPolicy("tiny", frames, spec.budgets[0]))
            run = asyncio.create_task(asked.run())
            killed_predictor = await _kill_when_under_way(asked, backends, run)
            asked_summary = await run
            preds = await predict_frames(spec.with_out_dir(tmp_path / "pred"), "tiny", backends)
            return killed_cascade, cascade_summary, killed_predictor, asked_summary, preds
        finally:
            await asyncio.gather(*(b.close() for b in backends.values()))
            ray.shutdown()

    killed_cascade, cascade_summary, killed_predictor, asked_summary, preds = asyncio.run(go())
    assert killed_cascade and killed_predictor, "the kill must land while the run is under way"

    rows = ResultsDir.open(tmp_path / "online").scan().collect()
    decisions = rows.filter(pl.col("budget_id") == cascade_budget_id(tau))
    assert cascade_summary.jobs_failed == 0 and (rows["status"] == "ok").all()
    assert decisions.height == 18 and set(decisions["stage_path"].list.len()) == {3}
    assert rows.filter(pl.col("attempt") == 2).height > 0, "the batch in flight at the kill was retried"
    assert len(set(rows["worker"].drop_nulls())) == 2  # answered by the first and the restarted process

    questions = ResultsDir.open(tmp_path / "asked").scan().collect()
    assert asked_summary.jobs_failed == 0 and questions.height == 18 and (questions["status"] == "ok").all()
    assert questions.filter(pl.col("attempt") == 2).height > 0
    assert preds.height == 18 and not preds["parse_status"].str.starts_with("unparsed").any()
