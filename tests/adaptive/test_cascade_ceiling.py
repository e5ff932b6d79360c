"""The cascade and a model's context ceiling (`max_frames`), without an engine.

A model whose ceiling is below a stage (or the fixed budget) would have its cascade cut short
while the other models go on, and the fixed run and the offline simulation (which needs a
row at every stage) would not have it: it is left out of the cascade, and named.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from helpers.metric_rows import row
from helpers.specs import small_spec_dict

from engine.adaptive.cascade import CascadePolicy, run_cascade
from engine.adaptive.cascade_report import TimedRound, cascade_budget_id, cascade_report
from engine.config import parse_spec
from engine.items import Item
from engine.results.schema import ResultRow
from engine.results.store import ResultStore

STAGES = ["f2", "f4", "f8"]


def _spec(tmp_path: Path, ceilings: dict[str, int | None]):  # type: ignore[no-untyped-def]
    d = small_spec_dict(tmp_path / "out")
    base = d["models"][0]
    d["models"] = [{**base, "id": mid, "max_frames": cap} for mid, cap in ceilings.items()]
    d["budgets"] = [{"frames": 0}] + [{"frames": n} for n in (2, 4, 8)]
    return parse_spec(d)


def _item(k: int) -> Item:
    return Item(dataset="d", dataset_version="1", item_id=f"q{k}", video_id=f"v{k}", video_path=None,
                question="?", options=("a", "b"), answer="A")


def _answer(job, confidence: float) -> ResultRow:  # type: ignore[no-untyped-def]
    return row(job.model_id, "d", job.item.item_id, job.budget.budget_id, job.budget.frames, "1",
               confidence=confidence)


def test_a_model_below_a_stage_runs_no_cascade_and_the_others_run_every_stage(tmp_path: Path) -> None:
    spec = _spec(tmp_path, {"big": None, "small": 4, "fits": 8})
    stages = [b for b in spec.budgets if b.budget_id in STAGES]
    policy = CascadePolicy(stages, tau=1.01)  # never sure: every item climbs to the last stage
    assert policy.beyond_ceiling(spec.models[1]) == ["f8"]
    assert [m.id for m in policy.models(spec)] == ["big", "fits"]
    assert policy.expected(spec, [_item(0), _item(1)]) == {"big": {"cascade-tau1.01": 2}, "fits": {"cascade-tau1.01": 2}}

    jobs = [j for js in policy.plan(spec, [_item(0), _item(1)], set()).values() for j in js]
    seen: dict[str, list[str]] = {}
    decisions = []
    while jobs:
        for j in jobs:
            seen.setdefault(j.model_id, []).append(j.budget.budget_id)
        jobs, done = policy.next_round([(j, _answer(j, 0.1)) for j in jobs])
        decisions += done
    assert seen == {"big": ["f2", "f2", "f4", "f4", "f8", "f8"], "fits": ["f2", "f2", "f4", "f4", "f8", "f8"]}
    assert sorted((d.model_id, d.stage_path[-1]) for d in decisions) == [
        ("big", "f8"), ("big", "f8"), ("fits", "f8"), ("fits", "f8")]


def test_run_cascade_refuses_before_any_work_when_no_model_fits(tmp_path: Path) -> None:
    spec = _spec(tmp_path, {"small": 4})
    with pytest.raises(ValueError, match=r"no model of the spec can run the cascade: small: f8 above its max_frames"):
        asyncio.run(run_cascade(spec, STAGES, 0.5, tmp_path / "session", repeats=1))
    # the fixed budget counts too: stages within the ceiling, fixed above it
    with pytest.raises(ValueError, match=r"small: f8 above"):
        asyncio.run(run_cascade(spec, ["f2", "f4"], 0.5, tmp_path / "session", fixed_id="f8", repeats=1))
    assert not (tmp_path / "out").exists() and not (tmp_path / "session").exists()


def test_the_report_leaves_skipped_models_out_of_the_offline_simulation(tmp_path: Path) -> None:
    """Hand-made stores. Stages f2 -> f4, fixed f8: model "small" (ceiling 4) has grid rows at both
    stages, so only its being left out keeps it from the offline simulation the online run lacks."""
    grid, session = tmp_path / "grid", tmp_path / "session"
    stages, tau = ["f2", "f4"], 0.5
    rows = []
    for k in range(3):
        for b, n in (("f2", 2), ("f4", 4), ("f8", 8)):
            rows.append(row("big", "d", f"q{k}", b, n, "1", confidence=0.9 if k == 0 else 0.1))
        for b, n in (("f2", 2), ("f4", 4)):
            rows.append(row("small", "d", f"q{k}", b, n, "0", confidence=0.1))
    with ResultStore(grid) as store:
        store.add(rows)
        store.commit()
    decisions = [row("big", "d", f"q{k}", cascade_budget_id(tau), 2 if k == 0 else 4, "1", confidence=0.9,
                     stage_path=stages[:1] if k == 0 else stages, frames_processed=2 if k == 0 else 6,
                     frames_decoded=2 if k == 0 else 4) for k in range(3)]
    with ResultStore(session / "round1" / "online") as store:
        store.add(decisions)
        store.commit()
    with ResultStore(session / "round1" / "fixed") as store:
        store.add([row("big", "d", f"q{k}", "f8", 8, "1") for k in range(3)])
        store.commit()
    rounds = [TimedRound(round=1, order=["fixed", "cascade"], fixed_wall_s=2.0, cascade_wall_s=1.0)]
    rep = cascade_report(grid, session, stages, tau, "f8", rounds, decode_passes=3,
                         skipped_models={"small": ["f8"]})
    assert rep.skipped_models == {"small": ["f8"]} and rep.to_dict()["skipped_models"] == {"small": ["f8"]}
    assert rep.n_items == 3 and rep.offline["n_items"] == 3  # big's three items, as online
    assert rep.offline["accuracy"] == rep.accuracy == 1.0  # small (wrong everywhere) is not in it
    assert rep.offline["mean_frames"] == pytest.approx((2 + 6 + 6) / 3)
    assert rep.decision_agreement == 1.0
    # without the skip, the simulation would take small's items in: the comparison this prevents
    both = cascade_report(grid, session, stages, tau, "f8", rounds, decode_passes=3)
    assert both.offline["n_items"] == 6 and both.offline["accuracy"] == 0.5
