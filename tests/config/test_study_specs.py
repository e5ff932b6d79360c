"""The studies' shipped specs (grids/audit_study.toml, grids/temporal_trap.toml, grids/hybrid_predictor.toml)
pass `framesweep inspect` against small fixtures in the benchmarks' released formats (dataset paths and the
store overridden), and hold what each study's tables need."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.study_files import study_spec_on_fixtures
from typer.testing import CliRunner

from engine.cli import app
from engine.config import BudgetPoint, SweepSpec, load_spec
from engine.config.grid import realised_pixels
from engine.frames.plan import plan_budget
from engine.metrics.checkpoint_study import families, study_from_spec

GRIDS = Path(__file__).resolve().parents[2] / "grids"
README = Path(__file__).resolve().parents[2] / "docs" / "studies.md"  # the studies page


@pytest.mark.parametrize(("name", "datasets", "models"), [
    ("audit_study.toml", ["videomme_short", "videomme_medium", "videomme_long", "videomme_v2", "mlvu", "avsd"], 5),
    ("temporal_trap.toml", ["videomme", "mvbench", "tempcompass", "video_mmmu", "mme", "pope", "mmstar", "mmbench"],
     36),
    ("hybrid_predictor.toml", ["llava_video_178k"], 1),
])
def test_study_spec_passes_inspect_on_fixtures(tmp_path: Path, name: str, datasets: list[str], models: int) -> None:
    path, _ = study_spec_on_fixtures(tmp_path, GRIDS / name)
    assert len(load_spec(GRIDS / name).models) == models  # the shipped file itself loads
    res = CliRunner().invoke(app, ["inspect", str(path)])
    assert res.exit_code == 0, res.output
    out = res.output
    for ds in datasets:
        assert re.search(rf"^{re.escape(ds)} \(", out, re.MULTILINE), ds
    assert out.count(" 0 missing") == len(datasets) and "missing:" not in out
    assert f"{len(datasets)} datasets:" in out or len(datasets) == 1
    assert not (tmp_path / "out").exists()  # inspect runs nothing


def _same_size(a: BudgetPoint, b: BudgetPoint) -> bool:
    keys = ("frames", "max_pixels", "short_side", "min_pixels", "exact_pixels", "pipeline")
    return all(getattr(a, k) == getattr(b, k) for k in keys)


def test_audit_study_grid() -> None:
    spec = load_spec(GRIDS / "audit_study.toml")
    chains = {b.protocol_id for b in spec.budgets if not b.is_text_only}
    assert {"px200704", "px200704-cached", "px50176", "px451584", "px200704-segment_centre",
            "px200704-random-seed1", "px200704-random-seed2", "px200704-dense_head@0.25",
            "px200704-nested@128"} <= chains
    main = sorted(b.frames for b in spec.budgets if b.protocol_id == "px200704")
    assert main == [16, 32, 64, 128, 256] and any(b.is_text_only for b in spec.budgets)
    ceilings = {m.family: max(b.frames for b in spec.budgets_for(m)) for m in spec.models}
    assert len(ceilings) == 5 and min(ceilings.values()) == 64  # the matched grid {text, 16, 32, 64}
    assert sorted(set(ceilings.values())) == [64, 128, 256]


def test_every_model_has_every_alternate_policy_at_its_own_dearest_budget() -> None:
    """Sampling recovery reads alternates at a chain's dearest budget (same frames, size and pipeline, another
    policy or seed): the Qwen models' main chains end at 256, InternVL's at 128, LLaVA-NeXT-Video's at 64."""
    spec = load_spec(GRIDS / "audit_study.toml")
    for m in spec.models:
        mine = spec.budgets_for(m)
        top = max((b for b in mine if b.protocol_id == "px200704"), key=lambda b: b.frames)
        assert top.frames == (m.max_frames or 256)
        alts = {(b.policy, b.seed) for b in mine if _same_size(b, top) and b.protocol_id != top.protocol_id}
        assert {("segment_centre", 0), ("random", 1), ("random", 2), ("dense_head@0.25", 0)} <= alts, m.id


def test_the_cascade_stages_are_nested_and_the_readme_runs_the_cascade_on_them() -> None:
    """Stages 16 -> 128 of the nested chain decode 128 unique frames (each a subset of the next), its 128 is the
    main chain's f128 exactly; the README's cascade commands name those stages and that fixed budget."""
    spec = load_spec(GRIDS / "audit_study.toml")
    budgets = {b.budget_id: b for b in spec.budgets}
    text = README.read_text()
    commands = re.findall(r"--(?:cascade-)?stages ([^ `]+)", text[text.index("**The paired scaling audit**"):])
    assert len(commands) == 2
    for stages in commands:
        ids = stages.split(",")
        assert [budgets[i].frames for i in ids] == [16, 32, 64, 128]
        assert {budgets[i].protocol_id for i in ids} == {"px200704-nested@128"}
        for n_video in (3000, 200, 90):  # a long video, one shorter than 256 frames, one shorter than 128
            plans = [plan_budget(budgets[i], n_video, 30.0).indices for i in ids]
            assert all(np.isin(small, big).all() for small, big in itertools.pairwise(plans))
            assert np.unique(np.concatenate(plans)).size == np.unique(plans[-1]).size <= 128
            uniform = plan_budget(budgets["f128-px200704"], n_video, 30.0).indices
            assert np.array_equal(plans[-1], np.unique(uniform))
    assert "--cascade-match f128-px200704-nested@128" in text


def test_the_iso_compute_allocations_send_their_pixels_and_mlvu_generation_is_in() -> None:
    spec = load_spec(GRIDS / "audit_study.toml")
    iso = [b for b in spec.budgets if b.exact_pixels]
    assert sorted(b.frames for b in iso) == [32, 64, 128, 256]
    for w, h in ((640, 360), (1920, 1080), (480, 640)):  # smaller than 32 frames' share, larger, portrait
        sent = [realised_pixels(b, w, h) for b in iso]
        assert all(abs(p - 9_700_000) / 9_700_000 < 0.01 for p in sent), (w, h, sent)
    mlvu = next(d for d in spec.datasets if d.name == "mlvu")
    assert {"8_sub_scene", "9_summary"} <= set(mlvu.tasks)
    assert spec.prompt.max_new_tokens >= 128  # a summary is not cut at 16 tokens


def _models(spec: SweepSpec) -> dict[str, Any]:
    return {m.id: m for m in spec.models}


def test_temporal_trap_study() -> None:
    spec = load_spec(GRIDS / "temporal_trap.toml")
    study = study_from_spec(spec.model_dump(mode="json"))
    fams = families(study)
    assert [f[0] for f in fams] == ["qwen2.5-vl-3b", "qwen2.5-vl-7b", "qwen2.5-vl-32b", "qwen2.5-vl-72b",
                                    "llava-next-video-7b", "llava-1.5-7b"]
    for fam in fams:
        trained = [c.train_frames for c in study if c.model_id in fam[1:]]
        assert trained == [8, 16, 32, 64, "hybrid"]
    assert {c.size for c in study} == {"3B", "7B", "32B", "72B"}
    models = _models(spec)
    assert {models[f[0]].family for f in fams} == {"qwen2_5_vl", "llava_next_video", "llava_1_5"}
    for base, world in (("qwen2.5-vl-32b", 2), ("qwen2.5-vl-72b", 4)):  # tensor parallel, fine-tunes alike
        assert {models[i].engine.world_size for i in next(f for f in fams if f[0] == base)} == {world}
    names = [d.name for d in spec.datasets]
    assert "tempcompass" in names and "mlvu" not in names
    llava15 = spec.budgets_for(models["llava-1.5-7b"])
    assert [b.frames for b in llava15 if not b.is_text_only] == [4]  # six 576-token images fit its context


def test_the_hybrid_predictor_spec_and_the_readme_manifest_row() -> None:
    spec = load_spec(GRIDS / "hybrid_predictor.toml")
    assert [(m.id, m.family) for m in spec.models] == [("qwen3-vl-8b", "qwen3_vl")]
    assert spec.dataset is not None and spec.dataset.name == "llava_video_178k"
    assert [b.frames for b in spec.budgets] == [8, 16, 32, 64] and not spec.predictor.text_only_option
    row = next(line for line in README.read_text().splitlines() if line.startswith("| hybrid frame counts"))
    assert "framesweep predict grids/hybrid_predictor.toml --predictor qwen3-vl-8b" in row
