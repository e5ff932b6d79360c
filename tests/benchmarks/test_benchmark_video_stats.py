"""benchmarks/video_stats_cost.py runs end to end on a small generated clip and writes its JSON with the fixed keys
(its timings are measurements, not test results: nothing here asserts wall-clock)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)

ROOT = Path(__file__).resolve().parents[2]


def test_video_stats_cost_writes_its_json(tmp_path: Path) -> None:
    out = tmp_path / "vs.json"
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "video_stats_cost.py"), "--minutes", "0.1", "--width", "320",
         "--height", "180", "--repeats", "1", "--max-pixels", "12544", "--video-dir", str(tmp_path / "clips"),
         "--output-json", str(out)],
        check=False, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    data = json.loads(out.read_text())
    assert list(data) == ["clip", "frames_decoded", "sizes"]
    # 180 frames, budgets 16..256 uniform (256 repeats some): the union is every frame
    assert data["frames_decoded"] == 180
    assert [s["size"] for s in data["sizes"]] == ["148x84", "320x180"]  # 12,544 px cap, then the stored size
    for s in data["sizes"]:
        assert list(s) == ["size", "decode_with_s", "decode_without_s", "with_vs_without", "stats_s", "stats_share"]
        assert all(s[k] > 0 for k in ("decode_with_s", "decode_without_s", "stats_s"))
    assert "video statistics, 180 frames" in r.stdout  # the one summary line
