"""The driver's ceiling benchmark runs small and writes its fixed keys, with the pipeline facts it exists to
show: with a decode actor up no frame reaches the driver (every visual request carries its frames by
reference); with none, the fallback decodes in the driver and says so. Nothing here asserts a timing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)

ROOT = Path(__file__).resolve().parents[2]
KEYS = ["driver_jobs_per_s", "driver_rss_growth", "driver_frame_bytes_per_job", "internode_frame_bytes_per_job"]


def _run(tmp_path: Path, name: str, *extra: str) -> dict:
    out = tmp_path / f"{name}.json"
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "driver_ceiling.py"), "--quick", "--jobs", "300", "--models", "2",
         "--work", str(tmp_path / "work"), "--output-json", str(out), *extra],
        capture_output=True, text=True, timeout=900, check=False)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    assert "jobs/s sustained" in r.stdout  # the one summary line
    return json.loads(out.read_text())


def test_driver_ceiling_keeps_frames_off_the_driver(tmp_path: Path) -> None:
    data = _run(tmp_path, "actors")
    assert list(data)[:4] == KEYS
    per_video = 2 * 6 * 3  # models x budgets (text and five frame counts) x questions
    visual = data["videos"] * 2 * 5 * 3
    assert data["jobs"] == data["jobs_ok"] == data["videos"] * per_video >= 300
    assert data["decode_actors"] == 1 and data["decode_calls"] == data["videos"]
    assert data["driver_frame_bytes_per_job"] == 0 and data["frame_arrays_deserialised"] == 0
    assert data["requests_by_ref"] == visual and data["requests_with_pixels"] == 0
    assert data["internode_frame_bytes_per_job"] is None and "two nodes" in data["internode_note"]
    assert set(data["rss_mb"]) == {"10%", "50%", "100%"} and data["driver_jobs_per_s"] > 0

    local = _run(tmp_path, "driver", "--decode-actors", "0")  # the fallback: decoded in the driver
    assert local["decode_actors"] == 0 and local["jobs_ok"] == data["jobs_ok"]
    assert local["driver_frame_bytes_per_job"] > 0 and local["requests_with_pixels"] == visual
