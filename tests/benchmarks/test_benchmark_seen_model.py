"""benchmarks/seen_model.py: its goals are decided as its docstring says (on hand-made tables), and a smoke run
through the real engine writes its JSON with the fixed keys, each accuracy the rows' own."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("seen_model", ROOT / "benchmarks" / "seen_model.py")
assert _spec and _spec.loader
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _table(flash: tuple[float, float, float], texture_full: list[float], texture_low: list[float],
           one_frame: float = 1.0, text: list[float] | None = None) -> dict:
    def kinds(f: list[float], tex: list[float]) -> dict:
        return {"flash_count": f, "first_colour": [one_frame] * 3, "last_colour": [one_frame] * 3,
                "static_shape": [one_frame] * 3, "texture": tex}
    return {"f0": {"all": text or [0.25, 0.18, 0.32]},
            "f4": kinds([flash[0], flash[0] - 0.1, flash[0] + 0.1], texture_full),
            "f8": kinds([flash[1], flash[1] - 0.1, flash[1] + 0.1], texture_full),
            "f16": kinds([flash[2], flash[2] - 0.05, flash[2] + 0.05], texture_full),
            "f16-s42": kinds([0.9, 0.8, 1.0], texture_low)}


def test_the_goals_are_met_only_as_the_docstring_says() -> None:
    good = _table((0.35, 0.55, 0.95), [0.8, 0.68, 0.92], [0.25, 0.12, 0.4])
    assert bench.goals(good) == dict.fromkeys(("text_only_at_chance", "one_frame_at_16", "flash_rises",
                                               "resolution_question"), True)
    assert not bench.goals(_table((0.35, 0.55, 0.95), [0.8, 0.68, 0.92], [0.25, 0.12, 0.4],
                                  text=[0.5, 0.4, 0.6]))["text_only_at_chance"]
    assert not bench.goals(_table((0.35, 0.55, 0.95), [0.8, 0.68, 0.92], [0.25, 0.12, 0.4],
                                  one_frame=0.8))["one_frame_at_16"]
    assert not bench.goals(_table((0.55, 0.5, 0.95), [0.8, 0.68, 0.92], [0.25, 0.12, 0.4]))["flash_rises"]
    assert not bench.goals(_table((0.8, 0.85, 0.9), [0.8, 0.68, 0.92], [0.25, 0.12, 0.4]))["flash_rises"]  # overlap
    assert not bench.goals(_table((0.35, 0.55, 0.95), [0.8, 0.68, 0.92], [0.6, 0.45, 0.75]))["resolution_question"]
    assert not bench.goals(_table((0.35, 0.55, 0.95), [0.5, 0.3, 0.7], [0.25, 0.12, 0.4]))["resolution_question"]


@pytest.mark.engine
def test_a_smoke_run_writes_the_fixed_keys(tmp_path: Path, fs_cache: Path) -> None:
    out = tmp_path / "seen.json"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "seen_model.py"), "--smoke", "--reps", "50",
                        "--out-dir", str(tmp_path / "run"), "--output-json", str(out)],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    data = json.loads(out.read_text())
    assert list(data) == ["model", "videos", "items", "seed", "budgets", "accuracy", "goals", "all_goals_met",
                          "errors", "wall_s"]
    assert data["items"] == 4 * 5 and data["errors"] == 0
    assert data["budgets"] == ["f0", "f4", "f8", "f16", "f32", "f16-s42"]
    assert set(data["goals"]) == {"text_only_at_chance", "one_frame_at_16", "flash_rises", "resolution_question"}
    assert data["all_goals_met"] == all(data["goals"].values())
    import polars as pl

    from engine.results.directory import ResultsDir

    rows = ResultsDir.open(tmp_path / "run").rows().collect()
    f16 = rows.filter((pl.col("frames") == 16) & pl.col("short_side").is_null() & (pl.col("task_type") == "texture"))
    assert data["accuracy"]["f16"]["texture"][0] == pytest.approx(f16["correct"].mean(), abs=1e-4)
    for kinds in data["accuracy"].values():
        for acc, low, high in kinds.values():
            assert low <= acc <= high
