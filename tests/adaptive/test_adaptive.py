"""The online confidence cascade with the real vLLM CPU engine on the synthetic benchmark.

One engine serves every scenario of this module: the online cascade against the offline
simulation, the cold-cache timing rounds of `run_cascade` (caches reset before each timed
policy, policies alternating, media uuids apart), and items' clips.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from helpers.specs import small_spec_dict

from engine.adaptive.cascade import CascadeSweep, cascade_budget_id, run_cascade
from engine.adaptive.cascade_report import online_decisions
from engine.config import parse_spec
from engine.datasets import registry as registry_module
from engine.results.store import scan_results
from engine.sweep import Sweep, start_backends

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)

STAGES = ["f2-nested", "f4-nested", "f8-nested"]


CLIP = (1.0, 2.0)  # seconds: frames 8..15 of the 8 fps synthetic videos


class _Clipped:
    """The synthetic adapter with every item restricted to CLIP."""

    def __init__(self, adapter: object) -> None:
        self._adapter = adapter

    def items(self):  # type: ignore[no-untyped-def]
        return [replace(it, clip=CLIP) for it in self._adapter.items()]  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._adapter, name)


def test_online_cascade_stage_paths_costs_and_offline_agreement(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 warm_engine: Path) -> None:
    d = small_spec_dict(tmp_path / "grid")
    d["budgets"] = [{"frames": 0}] + [{"frames": n, "policy": "nested"} for n in (2, 4, 8)]
    spec = parse_spec(d)

    async def go():
        import ray

        backends = await start_backends(spec)
        try:
            await Sweep(spec, backends=backends).run()
            first = scan_results(tmp_path / "grid").filter(pl.col("budget_id") == STAGES[0]).collect()
            tau = float(first["confidence"].median())  # some items stop at once, some escalate
            online = CascadeSweep(spec.with_out_dir(tmp_path / "solo"), spec.budgets[1:], tau, backends=backends)
            await online.run()
            report = await run_cascade(spec, STAGES, tau, tmp_path / "session", backends=backends, repeats=2)
            real = registry_module.build_adapter  # load_items builds every dataset's adapter through it
            monkeypatch.setattr(registry_module, "build_adapter", lambda ds: _Clipped(real(ds)))
            await CascadeSweep(spec.with_out_dir(tmp_path / "clipped"), spec.budgets[1:], tau, backends=backends).run()
            return tau, online, report
        finally:
            await asyncio.gather(*(b.close() for b in backends.values()))
            ray.shutdown()

    tau, online, report = asyncio.run(go())
    rows = scan_results(tmp_path / "solo").collect()
    decisions = rows.filter(pl.col("budget_id") == cascade_budget_id(tau))
    assert decisions.height == 9 and decisions["item_id"].n_unique() == 9
    stage_rows = rows.filter(pl.col("budget_id").is_in(STAGES))
    for dec in decisions.iter_rows(named=True):
        path = dec["stage_path"]
        assert path == STAGES[: len(path)]
        visited = stage_rows.filter(pl.col("item_id") == dec["item_id"]).sort("frames")
        assert visited["budget_id"].to_list() == path  # every visited stage was answered, no other
        conf = visited["confidence"].to_list()
        assert all(c < tau for c in conf[:-1])  # escalated only while unsure
        assert conf[-1] >= tau or len(path) == len(STAGES)
        assert dec["frames_processed"] == sum(visited["frames_sent"])
        # nested stages: the union of the visited stages is the last stage's frames
        union = set(np.concatenate(visited["frame_indices"].to_list()).tolist())
        assert dec["frames_decoded"] == len(union) == visited["frames_sent"][-1]
    assert 0 < decisions.filter(pl.col("stage_path").list.len() > 1).height  # some escalated
    # each frame of a video is decoded at most once, over all its stages and questions
    per_video = stage_rows.group_by("video_id").agg(pl.col("frame_indices").list.explode().unique().len())
    assert online.summary.frames_decoded == per_video["frame_indices"].sum()

    # the report: online vs offline simulation (same stages and tau, confidences of the grid sweep)
    assert report.n_items == 9 and report.offline["n_items"] == 9
    assert report.decision_agreement == 1.0
    assert report.accuracy == report.offline["accuracy"]
    assert report.mean_frames_processed == report.offline["mean_frames"]
    assert report.mean_frames_decoded == report.offline["mean_unique_frames"]
    assert report.fixed_budget == "f8-nested" and report.fixed_mean_frames == 8.0
    assert report.wall_s > 0 and report.fixed_wall_s > 0
    assert online_decisions(tmp_path / "session" / "round1" / "online", tau).collect().height == 9

    # cold-cache timing: rounds alternate which policy runs first, and every timed policy follows a reset
    # of the engine's prefix and multimodal caches (the count the engine actor reports, one engine here;
    # a warm engine starts from the resets of its earlier reuses)
    assert [r["order"] for r in report.rounds] == [["fixed", "cascade"], ["cascade", "fixed"]]
    first = report.rounds[0]["cache_resets"]["fixed"]
    assert first >= 1 and [r["cache_resets"] for r in report.rounds] == [
        {"fixed": first, "cascade": first + 1}, {"cascade": first + 2, "fixed": first + 3}]
    ratios = [r["cascade_wall_s"] / r["fixed_wall_s"] for r in report.rounds]
    assert [r["ratio"] for r in report.rounds] == ratios
    assert report.ratio_min == min(ratios) and report.ratio_max == max(ratios)
    assert report.ratio_median == pytest.approx(sum(ratios) / 2)
    # each timed run sent its media under its own namespace: no uuid is shared between policies or rounds
    uuids = {}
    for r in (1, 2):
        for policy, sub in (("fixed", "fixed"), ("cascade", "online")):
            got = scan_results(tmp_path / "session" / f"round{r}" / sub).filter(pl.col("frames") > 0).collect()
            assert got.height > 0
            assert all(u.startswith(f"{policy}-r{r}/") for u in got["media_uuid"])
            uuids[(policy, r)] = set(got["media_uuid"])
    assert sum(len(u) for u in uuids.values()) == len(set().union(*uuids.values()))

    # items' clips are respected: every stage sends frames of the clip only, named by the clip
    clipped = scan_results(tmp_path / "clipped").filter(pl.col("budget_id").is_in(STAGES)).collect()
    assert clipped.height >= 9
    frames = np.concatenate(clipped["frame_indices"].to_list())
    assert frames.min() >= 8 and frames.max() < 16
    assert all(u.endswith("@1-2") for u in clipped["media_uuid"])
    assert scan_results(tmp_path / "clipped").filter(pl.col("budget_id") == cascade_budget_id(tau)).collect().height \
        == 9
