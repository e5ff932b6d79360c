"""The audit study (grids/audit_study.toml) end to end on the trained tiny model, so every metric of the audit runs
on answers that vary.

The shipped spec keeps its shape: the main chain with text only, the resolution variants, the alternate sampling
policies and seeds at every model's own dearest budget, the nested cascade chain, the cached pipeline and the
iso-compute allocations, its prompt and decoder. What changes is the scale: frame counts / 4 and pixels x 3/64, so
the main chain's frames are the 112 x 84 synthetic v2 frames unresized and the 64-frame clips hold its dearest
budget; the models are the trained tiny Qwen2.5-VL (``seen``, up to 64 frames) and its randomly initialised
architecture (``random``, up to 16, as the study's smaller-context model: the matched grid stops there). The
datasets are one of each kind of the study's (Video-MME short, Video-MME v2 with its relevance group, AVSD for
generation) on the study fixtures with real clips in place of their empty files, plus the synthetic v2 benchmark,
whose questions the trained model answers from what it sees.

Assertions: every registered metric (`engine.metrics.registry`) has a non-empty entry in the metrics document,
so a metric added later is held to it too; the trained model's flows are real (accuracy rises with frames,
some items rescued and some harmed, the random model's answers differ); the report renders every section.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from helpers.specs import write_toml
from helpers.study_files import study_spec_on_fixtures
from typer.testing import CliRunner

from engine.cli import app
from engine.config import load_spec
from engine.demo.videos import render_frames, seen_script, write_h264
from engine.metrics.registry import registered_metrics
from engine.metrics.sections import Figure, Table
from engine.results import ResultsDir
from engine.results.store import latest_rows
from engine.sweep import Sweep

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)

GRIDS = Path(__file__).resolve().parents[2] / "grids"
KEPT = ("videomme_short", "videomme_v2", "avsd")  # one dataset of each kind the study has (MCQ, groups, open)
PIXELS = 3 / 64  # 200704 (448 x 448) -> 9408 (112 x 84, the synthetic v2 frame)
MAIN = "px9408"
STAGES = ["f4-px9408-nested@32", "f8-px9408-nested@32", "f16-px9408-nested@32"]


def _scaled(data: dict[str, Any]) -> dict[str, Any]:
    """The study spec at the tiny model's scale (module docstring)."""
    def px(v: int) -> int:
        return round(v * PIXELS)

    for g in data["grids"]:
        g["frames"] = [f // 4 for f in g["frames"]]
        g["max_pixels"] = [px(p) for p in g["max_pixels"]]
        if "policies" in g:
            g["policies"] = [p.replace("nested@128", "nested@32") for p in g["policies"]]
    for b in data["budgets"]:
        b["frames"], b["max_pixels"] = b["frames"] // 4, px(b["max_pixels"])
    for iso in data["iso_compute"]:
        iso["total_pixels"], iso["frames"] = px(iso["total_pixels"]), [f // 4 for f in iso["frames"]]
    data["primary_protocol"] = MAIN
    engine = {"max_model_len": 4096, "max_num_seqs": 32, "dtype": "float32"}
    data["models"] = [
        {"id": "random", "family": "qwen2_5_vl", "path": "tiny:qwen2_5_vl", "max_frames": 16, "engine": engine},
        {"id": "seen", "family": "qwen2_5_vl", "path": "tiny:qwen2_5_vl_seen", "max_frames": 64, "engine": engine},
    ]
    data["datasets"] = [d for d in data["datasets"] if d.get("id", d["name"]) in KEPT]
    data["datasets"].append({"name": "synthetic", "version": 2, "n_videos": 3})
    data["prompt"]["max_new_tokens"] = 12  # AVSD's answers: short, the model was never trained to talk
    data["store"]["commit_interval_s"] = 1.0
    return data


def _real_clips(data: dict[str, Any]) -> int:
    """Every (empty) fixture video of the kept datasets becomes a real synthetic v2 clip; returns how many."""
    rng = np.random.default_rng(7)  # not an evaluation seed of the synthetic benchmark: other clips
    n = 0
    for ds in data["datasets"]:
        for path in sorted(Path(ds["media_root"]).rglob("*.mp4")) if "media_root" in ds else ():
            s = seen_script(rng, path.stem)
            write_h264(path, render_frames(s), s.fps, s.width, s.height)
            n += 1
    return n


def _non_empty(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, dict | list):
        return len(value) > 0 and any(_non_empty(v) for v in (value.values() if isinstance(value, dict) else value))
    return True


def _report_ids(doc: dict[str, Any]) -> set[str]:
    """The ids (less their numbers) of the tables and figures every metric's report hook gives for `doc`."""
    blocks: list[Any] = []
    for m in registered_metrics():
        if m.report is None:
            continue
        if m.scope == "group":
            blocks += [b for i, g in enumerate(doc["groups"]) for b in m.report(g, i)]
        else:
            entries = doc.get(m.name) or []
            keys = {(r.get("model_id"), r.get("dataset")) for r in entries}
            blocks += [b for k in keys for b in m.report([r for r in entries if (r.get("model_id"), r.get("dataset")) == k], 0)]
    ids = set()
    for b in blocks:
        for x in (b, *getattr(b, "then", ())):
            if isinstance(x, Table | Figure) and x.id:
                ids.add(re.sub(r"(-\d+)+$", "", x.id))
    return ids


def test_the_audit_study_runs_end_to_end_on_the_trained_model(tmp_path: Path, fs_cache: Path) -> None:
    _, data = study_spec_on_fixtures(tmp_path, GRIDS / "audit_study.toml")
    data = _scaled(data)
    assert _real_clips(data) == 5  # Video-MME (its folder holds all three durations), v2, AVSD
    spec = load_spec(write_toml(tmp_path / "audit_seen.toml", data))
    import ray

    try:
        summary = asyncio.run(Sweep(spec).run())
    finally:
        ray.shutdown()  # the sweep's driver: no later test in this worker finds Ray connected
    out = tmp_path / "out"
    rows = latest_rows(ResultsDir.open(out).scan()).collect()
    assert summary.jobs_failed == 0 and (rows["status"] == "ok").all(), rows.filter(pl.col("status") != "ok").head(3)
    assert set(rows["dataset"]) == {*KEPT, "synthetic"}
    assert rows.filter(pl.col("model_id") == "seen")["budget_id"].n_unique() == 45  # every budget of the grid

    doc_path = tmp_path / "metrics.json"
    res = CliRunner().invoke(app, ["metrics", str(out), "--json", str(doc_path), "--n-boot", "50",
                                   "--compare", "random:seen", "--cascade-stages", ",".join(STAGES),
                                   "--cascade-match", STAGES[-1]])
    assert res.exit_code == 0, res.output
    doc = json.loads(doc_path.read_text())

    # every metric of the audit has something to say on these rows
    empty = []
    for m in registered_metrics():
        if m.scope == "dataset":
            if not _non_empty(doc.get(m.name)):
                empty.append(m.name)
        else:
            empty += [f"{m.name}.{key}" for key in m.group_keys if not any(_non_empty(g.get(key)) for g in doc["groups"])]
    assert not empty, f"metrics with nothing on the audit study's rows: {empty}"

    # ... on answers that vary: the trained model's synthetic chain rises with frames, and rescues and harms
    main = {(g["model_id"], g["dataset"]): g for g in doc["groups"] if g["protocol_id"] == MAIN}
    seen = main[("seen", "synthetic")]
    acc = seen["fixed_accuracy"]
    assert acc["f16-px9408"] >= acc["text"] + 0.3, acc
    moves = [t for g in doc["groups"] if g["model_id"] == "seen" for t in g["transitions"]]
    assert any(t["rescue"] > 0 for t in moves) and any(t["harm"] > 0 for t in moves)
    assert seen["oracle_headroom"] is not None
    flows = [f for f in doc["checkpoint_flows"] if f["dataset"] == "synthetic" and f["budget_id"] == "f16-px9408"]
    assert flows and flows[0]["rescue"] > flows[0]["harm"]  # from random weights to the trained ones

    # the report renders every section a metric has for these rows, and the checkpoint section (random -> trained)
    report = tmp_path / "report.html"
    res = CliRunner().invoke(app, ["report", str(out), "-o", str(report), "--n-boot", "0", "--compare", "random:seen",
                                   "--cascade-stages", ",".join(STAGES), "--cascade-match", STAGES[-1],
                                   "--checkpoint-models", "random,seen"])
    assert res.exit_code == 0, res.output
    html = report.read_text()
    wanted = _report_ids(doc)
    assert {"table-official", "table-low-level", "table-robustness", "table-cascade-match", "table-iso",
            "table-letter-prior", "fig-accuracy", "fig-flow", "fig-cascade", "fig-iso"} <= wanted, wanted
    missing = sorted(i for i in wanted if f'id="{i}-' not in html)
    assert not missing, f"report sections the metrics have but the report lacks: {missing}"
    assert "table-checkpoints" in html and "Checkpoints: temporal trap (random, seen)" in html
