"""The store and large-frame benchmarks run on small inputs and write their JSON with the fixed keys (their
figures are measurements, not test results: nothing here asserts a time or a memory size)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)

ROOT = Path(__file__).resolve().parents[2]


def test_big_frames_reports_peak_rss_per_size_and_the_cap_refusing(tmp_path: Path) -> None:
    out = tmp_path / "bf.json"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "big_frames.py"), "--sizes", "128,256x192",
                        "--max-source-pixels", "40000", "--work", str(tmp_path / "work"), "--output-json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    data = json.loads(out.read_text())
    assert list(data)[:6] == ["sizes", "frames", "budgets", "questions", "max_source_pixels", "peak_rss_mb"]
    assert data["sizes"] == ["128x128", "256x192"] and all(v > 0 for v in data["peak_rss_mb"].values())
    small, big = data["runs"]
    assert small["rows"] == {"ok": 9} and big["rows"] == {"permanent": 9}  # 256x192 = 49,152 pixels > 40,000
    assert "max_source_pixels = 40000" in big["error"][0] and "peak=" in r.stdout


def test_shard_write_compares_the_two_writers(tmp_path: Path) -> None:
    out = tmp_path / "sw.json"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "shard_write.py"), "--rows", "50,100",
                        "--repeats", "2", "--output-json", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    data = json.loads(out.read_text())
    assert list(data) == ["rows", "repeats"] and list(data["rows"]) == ["50", "100"]
    for s in data["rows"].values():
        assert list(s) == ["polars_ms", "checksummed_ms", "ratio", "polars_bytes", "checksummed_bytes"]
        assert abs(s["ratio"] - s["checksummed_ms"] / s["polars_ms"]) < 1e-9 and s["checksummed_bytes"] > 0
