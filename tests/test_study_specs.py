"""The studies' shipped specs (grids/audit_study.toml, grids/temporal_trap.toml) pass `framesweep inspect`
against small fixtures in the benchmarks' released formats (dataset paths and the store overridden)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from conftest import write_toml
from study_fixtures import study_files
from typer.testing import CliRunner

from engine.cli import app
from engine.metrics.checkpoint_study import families, study_from_spec
from engine.spec import load_spec

GRIDS = Path(__file__).resolve().parents[1] / "grids"


def _overridden(tmp_path: Path, name: str) -> tuple[Path, dict]:
    data = tomllib.loads((GRIDS / name).read_text())
    files = study_files(tmp_path / "data")
    for ds in data["datasets"]:
        paths = {k: str(v) for k, v in files[ds["name"]].items() if k in ds or k == "image_cache"}
        ds.update(paths)
        if "references" in ds:  # the test references: dialogs of the same shape
            ds["references"] = paths["annotations"]
    data["store"] = {"out_dir": str(tmp_path / "out")}
    return write_toml(tmp_path / name, data), data


@pytest.mark.parametrize(("name", "datasets", "models"), [
    ("audit_study.toml", ["videomme_short", "videomme_medium", "videomme_long", "videomme_v2", "mlvu", "avsd"], 5),
    ("temporal_trap.toml", ["videomme", "mlvu", "mvbench", "video_mmmu", "mme", "pope", "mmstar", "mmbench"], 12),
])
def test_study_spec_passes_inspect_on_fixtures(tmp_path: Path, name: str, datasets: list[str], models: int) -> None:
    path, _ = _overridden(tmp_path, name)
    assert len(load_spec(GRIDS / name).models) == models  # the shipped file itself loads
    res = CliRunner().invoke(app, ["inspect", str(path)])
    assert res.exit_code == 0, res.output
    out = res.output
    for ds in datasets:
        assert re.search(rf"^{re.escape(ds)} \(", out, re.MULTILINE), ds
    assert out.count(" 0 missing") == len(datasets) and "missing:" not in out
    assert f"{len(datasets)} datasets:" in out
    assert not (tmp_path / "out").exists()  # inspect runs nothing


def test_audit_study_grid() -> None:
    spec = load_spec(GRIDS / "audit_study.toml")
    chains = {b.protocol_id for b in spec.budgets if not b.is_text_only}
    assert {"px200704", "px200704-cached", "px50176", "px451584", "px200704-segment_centre",
            "px200704-random-seed1"} <= chains
    main = sorted(b.frames for b in spec.budgets if b.protocol_id == "px200704")
    assert main == [16, 32, 64, 128, 256] and any(b.is_text_only for b in spec.budgets)
    iso = [b for b in spec.budgets if b.max_pixels and abs(b.frames * b.max_pixels - 9_700_000) < 256]
    assert sorted(b.frames for b in iso) == [32, 64, 128, 256]
    ceilings = {m.family: max(b.frames for b in spec.budgets_for(m)) for m in spec.models}
    assert len(ceilings) == 5 and min(ceilings.values()) == 64  # the matched grid {text, 16, 32, 64}


def test_temporal_trap_study() -> None:
    spec = load_spec(GRIDS / "temporal_trap.toml")
    study = study_from_spec(spec.model_dump(mode="json"))
    fams = families(study)
    assert [f[0] for f in fams] == ["qwen2.5-vl-3b", "qwen2.5-vl-7b"]
    for fam in fams:
        trained = [c.train_frames for c in study if c.model_id in fam[1:]]
        assert trained == [8, 16, 32, 64, "hybrid"]
    assert {c.size for c in study} == {"3B", "7B"}
