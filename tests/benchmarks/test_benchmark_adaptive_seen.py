"""The adaptive benchmark on the trained tiny model runs end to end (--smoke) and writes its JSON with the fixed keys,
its savings and agreement computed from its own counts (its accuracies and timings are measurements of a checkpoint,
not test results: nothing here asserts an accuracy value or wall-clock)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.engine  # starts a vLLM engine (see conftest: the fast tier)

ROOT = Path(__file__).resolve().parents[2]
STAGES = ["f4", "f8", "f16", "f32"]
TOP = ["model", "videos", "items", "seed", "budgets", "stages", "fixed_budget", "repeats", "errors", "accuracy",
       "accuracy_by_kind", "cascade", "predictor", "wall_s"]
CASCADE = ["tau", "matched", "n_items", "accuracy", "fixed_accuracy", "accuracy_delta", "mean_frames_processed",
           "mean_frames_decoded", "fixed_mean_frames", "frames_saved", "unique_frames_saved", "wall_s",
           "fixed_wall_s", "wall_ratio_median", "wall_ratio_min", "wall_ratio_max", "wall_saved", "rounds",
           "decision_agreement", "mean_requests", "stops_by_kind", "offline", "crossfit"]
PREDICTOR = ["n_items", "n_solvable", "n_unsolvable", "n_unparsed", "agreement", "n_agree", "n_under", "n_over",
             "accuracy", "mean_frames", "oracle_accuracy", "oracle_mean_frames", "cheapest_agreement", "fixed",
             "predicted_by_kind", "sufficient_by_kind"]
EPS = 2e-3  # the JSON's figures are rounded to 4 decimals


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    if not (ROOT / "engine" / "demo" / "weights" / "qwen2_5_vl_seen.safetensors").exists():
        pytest.skip("the trained tiny model's weights are not in this checkout")
    out = tmp_path_factory.mktemp("adaptive") / "out.json"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "adaptive_seen.py"), "--smoke",
                        "--output-json", str(out)], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    return json.loads(out.read_text()), r.stdout


def total(by_kind: dict[str, dict[str, int]]) -> int:
    return sum(n for counts in by_kind.values() for n in counts.values())


def test_fixed_keys_and_grid(smoke: tuple[dict, str]) -> None:
    data, stdout = smoke
    assert list(data) == TOP and list(data["cascade"]) == CASCADE and list(data["predictor"]) == PREDICTOR
    assert data["stages"] == STAGES and data["fixed_budget"] == "f32" and data["errors"] == 0
    assert data["items"] == data["videos"] * 5 and list(data["accuracy"]) == STAGES
    assert "cascade f4 -> f8 -> f16 -> f32" in stdout and "predictor: agreement" in stdout


def test_cascade_savings_follow_from_its_costs(smoke: tuple[dict, str]) -> None:
    data, _ = smoke
    c = data["cascade"]
    assert c["n_items"] == data["items"] == total(c["stops_by_kind"]) and len(c["rounds"]) == data["repeats"]
    assert c["fixed_mean_frames"] == 32  # nested@32: the fixed budget sends all 32 frames
    # every item visits the 4-frame stage; it processes at most all four stages but decodes each frame once
    assert 4 <= c["mean_frames_decoded"] <= c["mean_frames_processed"] <= 4 + 8 + 16 + 32
    assert c["mean_frames_decoded"] <= 32
    stops = [(b, n) for counts in c["stops_by_kind"].values() for b, n in counts.items()]
    visited = sum((STAGES.index(b) + 1) * n for b, n in stops) / c["n_items"]
    assert abs(c["mean_requests"] - visited) < EPS
    assert abs(c["frames_saved"] - (1 - c["mean_frames_processed"] / c["fixed_mean_frames"])) < EPS
    assert abs(c["unique_frames_saved"] - (1 - c["mean_frames_decoded"] / c["fixed_mean_frames"])) < EPS
    assert abs(c["wall_saved"] - (1 - c["wall_ratio_median"])) < EPS
    assert c["wall_ratio_min"] <= c["wall_ratio_median"] <= c["wall_ratio_max"]
    assert abs(c["accuracy_delta"] - (c["accuracy"] - c["fixed_accuracy"])) < EPS
    assert abs(c["crossfit"]["fixed_accuracy"] - data["accuracy"]["f32"]) < EPS
    if c["matched"]:  # the in-sample tau reaches the fixed budget's accuracy in the simulation
        assert c["offline"]["accuracy"] >= data["accuracy"]["f32"] - EPS
    assert 0 <= c["decision_agreement"] <= 1 and 0 <= c["tau"] <= 1


def test_predictor_agreement_follows_from_its_counts(smoke: tuple[dict, str]) -> None:
    data, _ = smoke
    p = data["predictor"]
    assert p["n_items"] == data["items"] == total(p["predicted_by_kind"]) == total(p["sufficient_by_kind"])
    assert p["n_solvable"] + p["n_unsolvable"] == p["n_items"]
    assert p["n_agree"] + p["n_under"] + p["n_over"] == p["n_solvable"]
    assert sum(k.get("none", 0) for k in p["sufficient_by_kind"].values()) == p["n_unsolvable"]
    if p["n_solvable"]:
        assert abs(p["agreement"] - p["n_agree"] / p["n_solvable"]) < EPS
        at_cheapest = sum(k.get("f4", 0) for k in p["sufficient_by_kind"].values())
        assert abs(p["cheapest_agreement"] - at_cheapest / p["n_solvable"]) < EPS
    assert abs(p["oracle_accuracy"] - p["n_solvable"] / p["n_items"]) < EPS
    assert [f["budget_id"] for f in p["fixed"]] == STAGES
    for f in p["fixed"]:
        assert abs(f["accuracy"] - data["accuracy"][f["budget_id"]]) < EPS
        assert abs(f["accuracy_delta"] - (p["accuracy"] - f["accuracy"])) < EPS
        assert abs(f["frames_saved"] - (1 - p["mean_frames"] / f["mean_frames"])) < EPS
    # the oracle answers every solvable item at its cheapest sufficient budget: no fixed budget beats it
    assert all(f["accuracy"] <= p["oracle_accuracy"] + EPS for f in p["fixed"])
