"""`FRAMESWEEP_TEST_CPU=FILE pytest`: the machine's CPU seconds and the wall time per test and per module
(tests/conftest.py), the measure that bounds the suite's time on 2 cores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.engine  # runs pytest in a process of its own

ROOT = Path(__file__).resolve().parents[1]


def test_the_cpu_report_has_every_test_and_module_most_cpu_first(tmp_path: Path) -> None:
    report = tmp_path / "cpu.json"
    r = subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-q", "-p", "no:cacheprovider",
                        "tests/test_registry.py"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, FRAMESWEEP_TEST_CPU=str(report)))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    passed = int(r.stdout.strip().splitlines()[-1].split(" passed")[0].split()[-1])
    data = json.loads(report.read_text())
    assert list(data["modules"]) == ["tests/test_registry.py"]
    assert len(data["tests"]) == passed and all(t.startswith("tests/test_registry.py::") for t in data["tests"])
    cpu = [row["cpu_s"] for row in data["tests"].values()]
    assert cpu == sorted(cpu, reverse=True) and all(c >= 0 for c in cpu)
    assert all(row["wall_s"] >= 0 for row in data["tests"].values())
    assert data["total_cpu_s"] == pytest.approx(sum(cpu), abs=0.1 * len(cpu))
    assert data["modules"]["tests/test_registry.py"]["cpu_s"] == pytest.approx(data["total_cpu_s"], abs=0.1)
