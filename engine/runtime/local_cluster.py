"""A persistent local Ray cluster that outlives the command that started it (for warm engines).

`framesweep engines up` starts one with `ray start --head --block` in a session of its own, bound to
127.0.0.1, and records its address and process id in the framesweep cache folder. Later commands
(`run`, `cascade`, `predict`, `demo`) join the recorded cluster instead of starting a fresh one, so
the named engine actors on it can be reused. `engines down` ends that process (Ray then stops every
process of the cluster) and forgets the record. Nothing else on the machine is touched: the
cluster keeps its files in a temp folder of its own, never Ray's shared one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from engine.runtime.atomic import atomic_write
from engine.runtime.paths import cache_dir

__all__ = ["ClusterStartError", "local_cluster_env", "recorded_cluster", "start_local_cluster",
           "stop_local_cluster"]

log = logging.getLogger(__name__)


class ClusterStartError(RuntimeError):
    """The local cluster did not come up (the message holds the end of its log)."""


def _record_path() -> Path:
    return cache_dir() / "ray" / "cluster.json"


def _temp_dir() -> Path:
    """A short folder of the cluster's own (Ray's socket paths must stay under ~100 characters)."""
    tag = hashlib.sha256(str(cache_dir().resolve()).encode()).hexdigest()[:8]
    return Path(tempfile.gettempdir()) / f"fs-ray-{os.getuid()}-{tag}"


def local_cluster_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """What a local cluster and its drivers need: the node kept on 127.0.0.1, token auth on (Ray's default,
    said explicitly) unless the user set a mode."""
    out = dict(os.environ if env is None else env)
    out.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    out.setdefault("RAY_AUTH_MODE", "token")
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):  # a zombie (our own unreaped child) counts as gone
        return "Z" not in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[:1]
    return True


def _listening(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    with contextlib.suppress(OSError), socket.create_connection((host, int(port)), timeout=0.5):
        return True
    return False


def recorded_cluster() -> dict[str, Any] | None:
    """The recorded local cluster, if its process still runs (a stale record is removed)."""
    path = _record_path()
    try:
        rec = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if _alive(int(rec.get("pid", -1))) and _listening(rec.get("address", "127.0.0.1:0")):
        return dict(rec)
    log.info("the recorded local Ray cluster (pid %s) is gone; forgetting it", rec.get("pid"))
    path.unlink(missing_ok=True)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_local_cluster(object_store_mb: int = 1024, timeout_s: float = 120.0) -> dict[str, Any]:
    """Start a persistent local cluster (or return the recorded one); returns its record
    (`address`, `pid`, `log`, `started_at`)."""
    rec = recorded_cluster()
    if rec is not None:
        return rec
    port = _free_port()
    address = f"127.0.0.1:{port}"
    logfile = _record_path().parent / "cluster.log"
    logfile.parent.mkdir(parents=True, exist_ok=True)
    temp = _temp_dir()
    temp.mkdir(parents=True, exist_ok=True)
    ray_cli = Path(sys.executable).with_name("ray")
    cmd = [str(ray_cli) if ray_cli.exists() else sys.executable, *([] if ray_cli.exists() else
           ["-c", "from ray.scripts.scripts import main; main()"]),
           "start", "--head", "--block", f"--port={port}", "--node-ip-address=127.0.0.1",
           "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={temp}",
           f"--object-store-memory={object_store_mb * 1024 * 1024}"]
    with logfile.open("ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=local_cluster_env(), start_new_session=True)
    deadline = time.monotonic() + timeout_s
    while not _listening(address):
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                _end_session(proc.pid, 5.0)
            tail = logfile.read_text(errors="replace")[-2000:]
            raise ClusterStartError(f"the local Ray cluster did not start (exit {proc.poll()}); log {logfile}:\n{tail}")
        time.sleep(0.2)
    rec = {"address": address, "pid": proc.pid, "log": str(logfile), "temp_dir": str(temp),
           "started_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
    _record_path().parent.mkdir(parents=True, exist_ok=True)
    atomic_write(_record_path(), json.dumps(rec, indent=2))
    log.info("local Ray cluster started at %s (pid %d)", address, proc.pid)
    return rec


def _session_pids(sid: int) -> list[int]:
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[3]) == sid:
                    pids.append(int(d.name))
    return pids


def _end_session(pid: int, timeout_s: float) -> None:
    """SIGTERM the `ray start --block` process (it stops the cluster's processes), then SIGKILL whatever of its
    session is left after `timeout_s`."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and [p for p in _session_pids(pid) if _alive(p)]:
        time.sleep(0.2)
    for p in _session_pids(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)


def stop_local_cluster(timeout_s: float = 30.0) -> bool:
    """Stop the recorded local cluster (every process of its session) and forget it; False if none ran."""
    path = _record_path()
    try:
        rec = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    pid = int(rec.get("pid", -1))
    running = _alive(pid)
    if running:
        _end_session(pid, timeout_s)
    path.unlink(missing_ok=True)
    if rec.get("temp_dir") and Path(rec["temp_dir"]).name.startswith("fs-ray-"):
        shutil.rmtree(rec["temp_dir"], ignore_errors=True)  # the cluster's own folder: sessions, logs, sockets
    log.info("local Ray cluster at %s stopped", rec.get("address"))
    return running
