"""Runs tests/runtime/test_gpu_placement.py in a fresh interpreter: its own Ray cluster with declared GPUs must not
meet the Ray state that other modules leave in the shared pytest process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)


def test_gpu_placement_module_passes_in_a_fresh_interpreter(fs_cache: Path, tiny_qwen25: Path) -> None:
    module = Path(__file__).with_name("test_gpu_placement.py")
    # fresh: none of the Ray settings this process made for its own clusters (RAY_AUTH_MODE=token and others)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["FRAMESWEEP_GPU_PLACEMENT_ISOLATED"] = "1"
    env["FRAMESWEEP_TEST_CACHE"] = str(fs_cache)  # the tiny checkpoint built here (not built again there)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=native", str(module)],
                          env=env, capture_output=True, text=True, timeout=1800, check=False,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and " failed" not in done.stdout
