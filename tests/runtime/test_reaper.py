"""The reaper: a local Ray instance's processes end with the driver that started it, however it ends.

Real Ray, in a child process that plays the driver (tests/e2e/test_sweep_e2e.py does the same with the
vLLM engine in a whole `framesweep run`)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from helpers.processes import wait_gone

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)

ROOT = Path(__file__).resolve().parents[2]

DRIVER = """
import json, os, sys, time
import psutil, ray
from engine.runtime.cluster import ensure_ray

ensure_ray(num_cpus=1)

@ray.remote
def pid():
    return os.getpid()

ray.get(pid.remote())  # a worker process too
mine = psutil.Process().children(recursive=True)
print(json.dumps({"session": [p.pid for p in mine if "engine.runtime.reaper" not in " ".join(p.cmdline())],
                  "reaper": [p.pid for p in mine if "engine.runtime.reaper" in " ".join(p.cmdline())]}), flush=True)
if sys.argv[1] == "shutdown":
    ray.shutdown()
    print("down", flush=True)
time.sleep(600)
"""


def _driver(mode: str) -> tuple[subprocess.Popen, dict]:
    proc = subprocess.Popen([sys.executable, "-c", DRIVER, mode], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout is not None
    return proc, json.loads(proc.stdout.readline())


def _running(pids: list[int]) -> list[psutil.Process]:
    out = []
    for pid in pids:
        try:
            p = psutil.Process(pid)
            if p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            continue
    return out


def test_a_sigkilled_drivers_ray_processes_are_gone_within_seconds() -> None:
    proc, pids = _driver("sleep")
    session = [psutil.Process(p) for p in pids["session"]]
    assert len(pids["reaper"]) == 1
    assert {"gcs_server", "raylet"} <= {p.name() for p in session} and any(p.name() == "ray::IDLE" for p in session)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    alive = wait_gone(session, timeout=15)
    left = [f"{p.pid} {p.name()}" for p in alive]
    for p in alive:
        p.kill()
    assert not left, f"still running 15 s after the driver's SIGKILL: {left}"  # without the reaper: 60-90 s
    wait_gone(_running(pids["reaper"]), timeout=15)
    assert not _running(pids["reaper"])  # its work done, it is gone too


def test_the_reaper_leaves_when_the_instance_is_shut_down() -> None:
    """A driver that shuts Ray down and goes on (a notebook, the test suite) keeps no reaper per instance."""
    proc, pids = _driver("shutdown")
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "down"
        assert not wait_gone([psutil.Process(p) for p in pids["reaper"]], timeout=15)
        assert proc.poll() is None  # the driver itself lives on
    finally:
        proc.kill()
        proc.wait(timeout=30)


STARTING = """
from engine.runtime.cluster import ensure_ray

ensure_ray(num_cpus=1)
print("UP", flush=True)
import time
time.sleep(600)
"""


def test_a_driver_killed_while_ray_starts_leaves_nothing() -> None:
    """SIGKILL the driver in the middle of `ray.init`, as soon as the raylet has started a process of its own
    (an agent or a worker). Before, the reaper started only once Ray was up: killed in that window, the
    driver left Ray's agents running (reproduced: 2 of them still up 10 s later). Now it starts first and
    follows the driver's Ray processes and the session named after the driver while Ray starts."""
    import re
    import time

    proc = subprocess.Popen([sys.executable, "-c", STARTING], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    driver = psutil.Process(proc.pid)
    seen: dict[int, psutil.Process] = {}
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:  # every process the driver's tree holds, until the raylet has a child
            kids = driver.children(recursive=True)
            for k in kids:
                seen.setdefault(k.pid, k)
            with_child = [k for k in kids if _name(k) == "raylet" and _children(k)]
            if with_child:
                for k in _children(with_child[0]):
                    seen.setdefault(k.pid, k)
                break
            time.sleep(0.01)
        else:
            raise AssertionError("the raylet started nothing within 120 s")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    session = re.compile(rf"session_[0-9_-]+_{proc.pid}(?!\d)")
    reaper = [p for p in seen.values() if "engine.runtime.reaper" in " ".join(_cmdline(p))]
    ray_procs = [p for p in seen.values() if p not in reaper]
    assert {"gcs_server", "raylet"} <= {_name(p) for p in ray_procs}
    left = wait_gone(ray_procs, timeout=15)
    left += [p for p in psutil.process_iter() if session.search(" ".join(_cmdline(p))) and p not in left]
    names = [f"{p.pid} {_name(p)}" for p in left]
    for p in left:
        with contextlib.suppress(psutil.Error):
            p.kill()
    assert not names, f"still running 15 s after the driver's SIGKILL during ray.init: {names}"
    assert len(reaper) == 1  # begun before Ray's own processes
    assert not wait_gone(reaper, timeout=15)  # its work done, it is gone too


def _name(p: psutil.Process) -> str:
    try:
        return p.name()
    except psutil.Error:
        return ""


def _cmdline(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline()
    except psutil.Error:
        return []


def _children(p: psutil.Process) -> list[psutil.Process]:
    try:
        return p.children()
    except psutil.Error:
        return []

