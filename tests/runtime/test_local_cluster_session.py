"""Stopping a local cluster finds the processes of its `ray start` session through psutil (no /proc parsing)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from engine.runtime.local_cluster import _end_session, _session_pids
from engine.runtime.processes import pid_alive

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)


def test_a_session_and_its_child_are_found_then_ended() -> None:
    # a session leader (as `ray start --block` is) with a child that ignores SIGTERM: the leader goes on
    # SIGTERM, the child only on the SIGKILL that follows
    code = ("import signal, subprocess, sys, time; "
            "subprocess.Popen([sys.executable, '-c', 'import signal, time; signal.signal(signal.SIGTERM, "
            "signal.SIG_IGN); time.sleep(60)']); time.sleep(60)")
    leader = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while len(_session_pids(leader.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        found = _session_pids(leader.pid)
        assert leader.pid in found and len(found) == 2
        child = next(p for p in found if p != leader.pid)
        _end_session(leader.pid, timeout_s=1.0)
        leader.wait(timeout=10)
        deadline = time.monotonic() + 10
        while pid_alive(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not pid_alive(child) and _session_pids(leader.pid) == []
    finally:
        if leader.poll() is None:
            leader.kill()


def test_a_child_forked_by_the_clusters_process_is_not_another_cluster(tmp_path) -> None:
    """`ray start --head --block` forks children; until one execs it carries the same command line. Under load a
    suite run caught one: the cluster's pids were two, and `unrecorded_clusters` named the child as a second
    cluster. A stand-in process with a cluster's command line forks a child that keeps it (the fork window made
    long, which the real `ray start` cannot be made to do on demand): one cluster, the parent."""
    from engine.runtime.local_cluster import local_cluster_pids

    temp = tmp_path / "fs-ray-test"
    code = "import os, time; os.fork(); time.sleep(60)"  # parent and child both sleep with the same argv
    parent = subprocess.Popen([sys.executable, "-c", code, "start", "--head", "--block", f"--temp-dir={temp}"],
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while len(_session_pids(parent.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(_session_pids(parent.pid)) == 2  # the child is there, with the same command line
        assert local_cluster_pids(temp) == [parent.pid]
    finally:
        _end_session(parent.pid, timeout_s=1.0)
        parent.wait(timeout=10)
