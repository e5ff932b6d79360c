"""`--dashboard`: the address framesweep prints for Ray's dashboard answers, on both ways a local cluster starts.

`run --dashboard` starts a new local cluster inside the run (`ray.init(include_dashboard=True)`) and prints the
dashboard's address once Ray is up; `engines up --dashboard` starts the persistent local cluster
(`ray start --head --include-dashboard=true`) and prints the address of its record. Skipped where Ray's dashboard
is not installed (`ray[default]`), as Ray itself then starts without one.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from helpers.specs import small_spec_dict, write_toml

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)


def _dashboard_missing() -> str | None:
    from ray._private.utils import get_dashboard_dependency_error

    err = get_dashboard_dependency_error()
    return f"Ray's dashboard is not installed (pip install 'ray[default]'): {err}" if err is not None else None


needs_dashboard = pytest.mark.skipif(_dashboard_missing() is not None, reason=str(_dashboard_missing()))


def _answers(url: str, alive: subprocess.Popen[str] | None = None, timeout_s: float = 60.0) -> str:
    """The dashboard's page at `url` (retried while it starts; while `alive` runs). Its API answers 401 without
    Ray's token (token authentication, Ray's default); the page itself is served to anyone on loopback."""
    deadline, last = time.monotonic() + timeout_s, ""
    while time.monotonic() < deadline and (alive is None or alive.poll() is None):
        try:
            with urllib.request.urlopen(f"{url}/", timeout=5) as reply:
                return reply.read().decode(errors="replace")
        except (urllib.error.URLError, OSError) as err:
            last = repr(err)
        time.sleep(0.5)
    raise AssertionError(f"{url} did not answer: {last}")


@needs_dashboard
def test_run_dashboard_prints_an_address_that_answers(tiny_qwen25: Path, tmp_path: Path) -> None:
    spec = write_toml(tmp_path / "s.toml", small_spec_dict(tmp_path / "out", budgets=[{"frames": 0}],
                                                           dataset={"name": "synthetic", "n_videos": 1,
                                                                    "seconds": 2.0, "fps": 8, "width": 96,
                                                                    "height": 64}))
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "COLUMNS")}
    env["FRAMESWEEP_CACHE"] = str(tmp_path / "cache")  # no local cluster of `engines up` to join: a new one
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "checkpoints").symlink_to(tiny_qwen25.parent)
    proc = subprocess.Popen([sys.executable, "-m", "engine", "run", str(spec), "--dashboard"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    said = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # "Ray: a new local cluster at ...; Ray's logs: ...; dashboard: http://..."
            said.append(line)
            if m := re.search(r"; dashboard: (http://\S+)$", line.rstrip()):
                assert line.startswith("Ray: a new local cluster"), line
                assert "<html" in _answers(m[1], alive=proc).lower()  # while the run still holds its cluster
                break
        else:
            raise AssertionError("no dashboard address printed:\n" + "".join(said)[-3000:])
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, "".join(said)[-2000:] + err[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@needs_dashboard
def test_engines_up_dashboard_records_an_address_that_answers(tmp_path: Path, monkeypatch) -> None:
    """The local cluster of `engines up --dashboard` (its start without the engines); the CLI prints the
    record's address."""
    from engine.runtime.local_cluster import local_cluster_pids, start_local_cluster, stop_local_cluster

    monkeypatch.setenv("FRAMESWEEP_CACHE", str(tmp_path / "cache"))
    try:
        rec = start_local_cluster(object_store_mb=100, dashboard=True)
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", rec["dashboard"]), rec
        assert "<html" in _answers(rec["dashboard"]).lower()
    finally:
        stop_local_cluster()
    assert local_cluster_pids() == []
