"""The long-video benchmark runs end to end on its --smoke clip and writes its JSON with the fixed keys (its timings
are measurements, not test results: nothing here asserts wall-clock). It starts Ray for the decode actors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.config import BudgetPoint
from engine.frames.plan import plan_budget, union_indices

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)

ROOT = Path(__file__).resolve().parents[2]


def test_long_video_writes_its_json(tmp_path: Path) -> None:
    out = tmp_path / "lv.json"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "long_video.py"), "--smoke", "--video-dir",
                        str(tmp_path / "clips"), "--output-json", str(out)],
                       capture_output=True, text=True, timeout=900, check=False)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    data = json.loads(out.read_text())
    fixed = ["long_union_vs_floor", "long_naive_vs_union", "long_getbatch_vs_union", "cached_vs_raw"]
    assert list(data)[:len(fixed)] == fixed and all(data[k] > 0 for k in fixed)
    # the smoke clip: 30 s at 30 fps, 320x180, a keyframe every 8 s (no scene-cut keyframes), B-frames
    assert (data["n_frames"], data["width"], data["height"], data["keyframes"]) == (900, 320, 180, 4)
    assert data["video"].endswith("-k8s-bf3.mp4") and data["size"] == [160, 90]
    plans = [plan_budget(BudgetPoint(frames=n), 900, 30.0) for n in (16, 32, 64, 128, 256)]
    assert data["frames_needed"] == union_indices(plans).size
    assert data["frames_requested"] == 16 + 32 + 64 + 128 + 256
    pics = data["pictures_decoded"]
    # the floor decodes the least; the union about as little (it decodes through a GOP boundary rather than seek
    # when the next keyframe is a few frames on), far less than the video; every per-budget way decodes more
    assert pics["floor"] <= pics["union"] < data["n_frames"]
    assert data["span_union"] < data["span_per_budget"]
    assert pics["union"] < pics["per_budget"] and pics["union"] < pics["naive"] == 5 * data["n_frames"]
    assert data["seeks"]["floor"] == 4  # one per GOP holding a needed frame
    a = data["actors"]
    assert a["parts"] >= 2 and all(a[k] > 0 for k in ("local_s", "actors_1_s", "actors_2_s", "efficiency_2"))
    assert "long_video long-0.5min" in r.stdout and "parallel efficiency" in r.stdout
