"""How a run ends when its Ray cluster goes, or a signal comes, for real: `framesweep run` on the tiny checkpoint with a
local Ray cluster of its own (no recorded cluster in its cache folder).

- SIGTERM: the clean stop (exit 130) without the native stack dump Ray's failure signal handler used to print.
- The run's own GCS, raylet and workers killed (what `ray stop` ends with): before, the driver waited 60 s for the GCS and
  Ray ended it with exit 1 and one line of its own; now one sentence, exit 7, what finished committed.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from helpers.processes import wait_gone
from helpers.specs import small_spec_dict, write_toml

from engine.results import ResultsDir

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)

NATIVE_STACK = re.compile(r"SIGTERM received at time|logging\.cc:\d+|^PC: @|^\s+@\s+0x", re.MULTILINE)


def _start(tmp_path: Path, fs_cache: Path, text_only: bool = False, **dataset: object) -> tuple[subprocess.Popen, Path]:
    out = tmp_path / "out"
    d = small_spec_dict(out)
    d["dataset"].update(dataset)
    if text_only:
        d["budgets"] = [{"frames": 0}]
    d["store"]["commit_interval_s"] = 0.25
    spec = write_toml(tmp_path / "spec.toml", d)
    env = {**os.environ, "FRAMESWEEP_CACHE": str(fs_cache)}  # no recorded cluster there: a cluster of its own
    env.pop("RAY_ADDRESS", None)
    with (tmp_path / "stdout").open("w") as stdout, (tmp_path / "stderr").open("w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "engine.cli", "run", str(spec)], stdout=stdout, stderr=stderr,
                                text=True, start_new_session=True, env=env)
    return proc, out


def _said(tmp_path: Path) -> tuple[str, str]:
    """What the run printed so far: (stdout, stderr)."""
    return (tmp_path / "stdout").read_text(), (tmp_path / "stderr").read_text()


def _end(proc: subprocess.Popen, tmp_path: Path, timeout: float = 120) -> tuple[str, str]:
    proc.wait(timeout=timeout)
    return _said(tmp_path)


def _started(proc: subprocess.Popen) -> list[psutil.Process]:
    """Every process the driver started (its reaper aside: it leaves after the driver)."""
    found = []
    for p in psutil.Process(proc.pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "engine.runtime.reaper" not in " ".join(p.cmdline()):
                found.append(p)
    return found


def _wait(proc: subprocess.Popen, tmp_path: Path, ready, what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            out, err = _said(tmp_path)
            pytest.fail(f"the run ended before {what} (exit {proc.returncode}):\n{out[-2000:]}\n{err[-4000:]}")
        assert time.monotonic() < deadline, f"no {what} in {timeout:.0f} s"
        time.sleep(0.1)


def test_sigterm_stops_the_run_without_rays_native_stack_dump(tmp_path: Path, fs_cache: Path) -> None:
    """SIGTERM once Ray is up (the engine loading): before, Ray's failure signal handler in the driver printed ten
    lines of C++ stack (`*** SIGTERM received at time=...`, `PC: @ ...`, twice over) above the clean exit 130."""
    proc, _ = _start(tmp_path, fs_cache)
    try:
        _wait(proc, tmp_path, lambda: "Ray: a new local cluster at" in _said(tmp_path)[1], "Ray's start")
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = _end(proc, tmp_path)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stdout[-2000:] + stderr[-4000:]
    assert "stopped early; rerun the same command to finish" in stderr, stderr[-4000:]
    assert not NATIVE_STACK.search(stderr), stderr[-4000:]


def test_killing_the_runs_own_gcs_and_raylet_ends_it_at_once_with_exit_7(tmp_path: Path, fs_cache: Path) -> None:
    """The GCS, the raylet and the workers (the engine actor among them) of the run's own cluster SIGKILLed by pid
    mid-run, as `ray stop` ends them (never `ray stop` itself, which would stop every cluster on the machine).
    Text-only budgets: no frame goes through Ray's object store, whose connection
    Ray answers, when the raylet is gone, by ending the driver itself at once (exit 1, a race no driver code can
    win; the README says so)."""
    proc, out = _start(tmp_path, fs_cache, text_only=True, n_videos=150)
    try:
        _wait(proc, tmp_path, lambda: any((out / "results").glob("part-*.parquet")), "a commit")
        started = _started(proc)
        victims = [p for p in started if p.name() in ("gcs_server", "raylet") or p.name().startswith("ray::")]
        names = {p.name() for p in victims}  # a worker's name is its task while it runs one (ray::VLLMWorker.generate)
        assert {"gcs_server", "raylet"} <= names and any(n.startswith("ray::VLLMWorker") for n in names), names
        t0 = time.monotonic()
        for p in victims:
            p.kill()
        stdout, stderr = _end(proc, tmp_path)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    said = " ".join(stderr.split())
    assert proc.returncode == 7, stdout[-2000:] + stderr[-4000:]
    assert took < 50, f"{took:.0f} s: a hang"  # a liveness bound only: Ray's own wait for the GCS is 60 s
    m = re.search(r"the run's Ray cluster stopped \(its (GCS at 127\.0\.0\.1:\d+|raylet \(pid \d+\)) is gone[^)]*\): "
                  r"(\d+) row\(s\) committed; rerun to continue", said)
    assert m, stderr[-4000:]
    assert "Failed to connect to GCS" not in said and "Traceback" not in said
    rows = ResultsDir.open(out).scan().collect()
    assert rows.height == int(m[2]) > 0 and (rows["status"] == "ok").all()
    left = wait_gone(started, timeout=30)  # what the run started goes with it (the reaper)
    names = [f"{p.pid} {p.name()}" for p in left]
    for p in left:
        with contextlib.suppress(psutil.Error):
            p.kill()
    assert not names, f"still running: {names}"
