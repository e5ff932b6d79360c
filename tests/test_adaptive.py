"""The online confidence cascade with the real vLLM CPU engine on the synthetic benchmark."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import polars as pl
from conftest import small_spec_dict

from engine.adaptive.cascade import CascadeSweep, cascade_budget_id, run_cascade
from engine.adaptive.cascade_report import online_decisions
from engine.results.store import scan_results
from engine.spec import parse_spec
from engine.sweep import Sweep, start_backends

STAGES = ["f2-nested", "f4-nested", "f8-nested"]


def test_online_cascade_stage_paths_costs_and_offline_agreement(tmp_path: Path) -> None:
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
            report = await run_cascade(spec, STAGES, tau, tmp_path / "session", backends=backends)
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
    assert online.frames_decoded_total == per_video["frame_indices"].sum()

    # the report: online vs offline simulation (same stages and tau, confidences of the grid sweep)
    assert report.n_items == 9 and report.offline["n_items"] == 9
    assert report.decision_agreement == 1.0
    assert report.accuracy == report.offline["accuracy"]
    assert report.mean_frames_processed == report.offline["mean_frames"]
    assert report.mean_frames_decoded == report.offline["mean_unique_frames"]
    assert report.fixed_budget == "f8-nested" and report.fixed_mean_frames == 8.0
    assert report.wall_s > 0 and report.fixed_wall_s > 0
    assert online_decisions(tmp_path / "session" / "online", tau).collect().height == 9
