"""The compaction benchmark runs end to end on a small directory and writes its JSON with the fixed keys (its
timings are measurements, not test results: nothing here asserts wall-clock)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)

ROOT = Path(__file__).resolve().parents[2]


def test_shard_compaction_writes_its_json(tmp_path: Path) -> None:
    out = tmp_path / "sc.json"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "shard_compaction.py"), "--shards", "40",
                        "--rows", "4", "--models", "1", "--work-dir", str(tmp_path), "--output-json", str(out)],
                       capture_output=True, text=True, timeout=900, check=False)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    data = json.loads(out.read_text())
    fixed = ["status_s_20k_shards", "status_s_before", "metrics_s_after", "metrics_s_before", "compact_s",
             "shards_before", "shards_after", "rows"]
    assert list(data)[:len(fixed)] == fixed
    assert (data["shards_before"], data["shards_after"], data["rows"]) == (40, 1, 160)
    # the same jobs counted before and after: compaction kept every row once
    assert data["status_done_before"] == data["status_done_after"] == 160 and data["metrics_groups_after"] == 1
    assert all(data[k] > 0 for k in fixed[:5])
    assert list(tmp_path.iterdir()) == [out]  # the copy it measured is gone
    assert "shard_compaction: 40 shards of 4 rows -> 1" in r.stdout
