"""A local Ray cluster started off the main thread outlives that thread.

Ray starts a local instance's processes with PR_SET_PDEATHSIG (Linux): they are killed when the
*thread* that started them ends. A sweep starts Ray from an asyncio worker thread (while it loads
its dataset), and those threads end with the event loop; the cluster must not end with them. Run in
a fresh interpreter: the test process may already hold a Ray instance.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)

CHILD = """
import asyncio, json, psutil, ray
from engine.runtime.cluster import ensure_ray

async def start():
    await asyncio.to_thread(ensure_ray, None, num_cpus=1, object_store_mb=100)

asyncio.run(start())  # the loop's worker threads end here

@ray.remote
def square(x):
    return x * x

answer = ray.get(square.remote(7), timeout=120)
states = {}
for p in psutil.Process().children(recursive=True):
    try:
        states[p.name()] = p.status()
    except psutil.Error:
        pass
print(json.dumps({"answer": answer, "states": states}))
"""


def test_local_cluster_started_from_a_worker_thread_outlives_it(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    import json

    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["answer"] == 49
    assert got["states"].get("gcs_server") not in (None, "zombie"), got["states"]
    assert got["states"].get("raylet") not in (None, "zombie"), got["states"]


# --- the persistent local cluster (`framesweep engines up`): one at a time, and every one found -----------

ROOT = Path(__file__).resolve().parents[2]

START = """
import json
from engine.runtime.local_cluster import start_local_cluster

print(json.dumps(start_local_cluster(object_store_mb=100)), flush=True)
"""


def _local_cache(tmp_path: Path, monkeypatch) -> dict[str, str]:
    import os

    monkeypatch.setenv("FRAMESWEEP_CACHE", str(tmp_path / "cache"))
    return dict(os.environ)


def test_two_starts_at_once_make_one_cluster(tmp_path: Path, monkeypatch) -> None:
    """Two `engines up` at once: before, each found no record and started its own cluster; `engines down`
    then stopped the recorded one and the other ran on unseen. Now the second waits for the first's
    start (a file lock) and joins it."""
    import json

    from engine.runtime.local_cluster import local_cluster_pids, stop_local_cluster, unrecorded_clusters

    env = _local_cache(tmp_path, monkeypatch)
    procs = [subprocess.Popen([sys.executable, "-c", START], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        recs = []
        for p in procs:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, err[-3000:]
            recs.append(json.loads(out.strip().splitlines()[-1]))
        assert recs[0] == recs[1]  # the same cluster: one address, one process
        assert local_cluster_pids() == [recs[0]["pid"]] and unrecorded_clusters() == []
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        stopped = stop_local_cluster()
    assert stopped == 1 and local_cluster_pids() == []


def test_a_cluster_without_a_record_is_named_and_stopped(tmp_path: Path, monkeypatch) -> None:
    """A local cluster framesweep started whose record is gone (what the race above left: the second record
    overwrote the first) is found by its process: `engines` names it, `engines down` stops it."""
    from typer.testing import CliRunner

    from engine.cli import app
    from engine.runtime.local_cluster import (
        _record_path,
        local_cluster_pids,
        recorded_cluster,
        start_local_cluster,
        stop_local_cluster,
    )

    _local_cache(tmp_path, monkeypatch)
    try:
        rec = start_local_cluster(object_store_mb=100)
        _record_path().unlink()
        assert recorded_cluster() is None and local_cluster_pids() == [rec["pid"]]
        listed = CliRunner().invoke(app, ["engines"])
        assert listed.exit_code == 0, listed.output
        assert "without a record" in " ".join(listed.output.split()) and str(rec["pid"]) in listed.output
        down = CliRunner().invoke(app, ["engines", "down"])
        assert down.exit_code == 0, down.output
        assert "local Ray cluster stopped" in down.output
        assert local_cluster_pids() == []
    finally:
        stop_local_cluster()


def test_a_machine_that_never_ran_ray_starts_its_local_cluster(tmp_path: Path, monkeypatch) -> None:
    """Token authentication is Ray's default, and `ray start --head` refuses to start without a token (only
    `ray.init` creates one): on a fresh machine `framesweep engines up` failed with Ray's AuthenticationError.
    The start now has Ray create the token first, in its user folder, and prints nothing of it."""
    import json
    import os

    from engine.runtime.local_cluster import local_cluster_pids, stop_local_cluster

    env = _local_cache(tmp_path, monkeypatch)
    home = tmp_path / "home"
    home.mkdir()
    for k in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_MODE"):
        env.pop(k, None)
    env["HOME"] = str(home)
    try:
        done = subprocess.run([sys.executable, "-c", START], env=env, cwd=ROOT, capture_output=True, text=True,
                              timeout=300, check=False)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        rec = json.loads(done.stdout.strip().splitlines()[-1])
        token = (home / ".ray" / "auth_token").read_text().strip()
        assert token and token not in done.stdout + done.stderr  # made, and never printed
        assert local_cluster_pids() == [rec["pid"]]
    finally:
        monkeypatch.setenv("HOME", str(home))
        assert os.environ["HOME"] == str(home)
        stop_local_cluster()
    assert local_cluster_pids() == []
