"""A persistent local Ray cluster that outlives the command that started it (for warm engines).

`framesweep engines up` starts one with `ray start --head --block` in a session of its own, bound to
127.0.0.1, and records its address and process id in the framesweep cache folder. Later commands
(`run`, `cascade`, `predict`, `demo`) join the recorded cluster instead of starting a fresh one, so
the named engine actors on it can be reused. `engines down` ends that process (Ray then stops every
process of the cluster) and forgets the record. Nothing else on the machine is touched: the
cluster keeps its files in a temp folder of its own, never Ray's shared one.

Finding or starting the cluster, and stopping it, hold a file lock (`cluster.lock` beside the
record): two `engines up` at once start one cluster, the second joining the first. A cluster is
also known by its process (`ray start --head --block` with this cache's temp folder), so one
left without a record (by a version without the lock, or a record removed by hand) is still
found: `framesweep engines` names it and `engines down` stops it.
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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engine.runtime.atomic import exclusive_lock
from engine.runtime.output import write_json
from engine.runtime.paths import cache_dir
from engine.runtime.processes import pid_alive

__all__ = ["ClusterStartError", "local_cluster_env", "local_cluster_pids", "recorded_cluster", "start_local_cluster",
           "stop_local_cluster", "unrecorded_clusters"]

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


def _listening(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    with contextlib.suppress(OSError), socket.create_connection((host, int(port)), timeout=0.5):
        return True
    return False


def _read_record() -> dict[str, Any] | None:
    try:
        rec = json.loads(_record_path().read_text())
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) else None


def _is_cluster_cmd(cmd: list[str], temp: str | Path) -> bool:
    return f"--temp-dir={temp}" in cmd and {"start", "--head", "--block"} <= set(cmd)


def local_cluster_pids(temp: str | Path | None = None) -> list[int]:
    """Every running `ray start --head --block` process of a local cluster framesweep started with this cache
    folder (known by its command line: the cluster's own temp folder, else `temp`), recorded or not."""
    import psutil

    temp = temp or _temp_dir()
    found = {proc.pid: proc.info.get("ppid") for proc in psutil.process_iter(["cmdline", "status", "ppid"])
             if _is_cluster_cmd(proc.info.get("cmdline") or [], temp) and proc.info.get("status") != psutil.STATUS_ZOMBIE}
    # a child `ray start` forks carries its command line until it execs (seen under load): not another cluster
    return sorted(pid for pid, parent in found.items() if parent not in found)


def unrecorded_clusters() -> list[int]:
    """The `ray start` pids of local clusters framesweep started that the record does not name."""
    rec = _read_record() or {}
    return [pid for pid in local_cluster_pids() if pid != rec.get("pid")]


def recorded_cluster(wait_s: float = 0.0) -> dict[str, Any] | None:
    """The recorded local cluster, if its process still runs and answers (within `wait_s`: one starting, or
    slow under load, is waited for); a record whose process is gone is removed."""
    rec = _read_record()
    if rec is None:
        return None
    pid = int(rec.get("pid", -1))
    if not pid_alive(pid) or pid not in local_cluster_pids(rec.get("temp_dir")):
        log.info("the recorded local Ray cluster (pid %s) is gone; forgetting it", rec.get("pid"))
        if _read_record() == rec:  # not a record another process has written since
            _record_path().unlink(missing_ok=True)
        return None
    deadline = time.monotonic() + wait_s
    while not _listening(rec.get("address", "127.0.0.1:0")):
        if time.monotonic() >= deadline:
            log.warning("the recorded local Ray cluster (pid %d) runs but does not answer at %s", pid,
                        rec.get("address"))
            return None
        time.sleep(0.5)
    return dict(rec)


@contextlib.contextmanager
def _exclusive(timeout_s: float) -> Iterator[None]:
    """Hold the local cluster's lock: one process at a time finds-or-starts, or stops, the cluster."""
    path = _record_path().parent / "cluster.lock"
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(exclusive_lock(path, timeout_s))
        except TimeoutError:  # the wait only: an error of the caller's work passes through as it is
            raise ClusterStartError(f"another framesweep process has been starting or stopping the local Ray "
                                    f"cluster for {timeout_s:.0f}s (lock {path}); try again when it is done") from None
        yield


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_local_cluster(object_store_mb: int = 1024, timeout_s: float = 120.0, *,
                        dashboard: bool = False) -> dict[str, Any]:
    """Start a persistent local cluster (or return the recorded one); returns its record
    (`address`, `pid`, `log`, `started_at`, `dashboard`: its URL with `dashboard`, else None). Exclusive: a
    second caller meanwhile waits and gets the first's."""
    with _exclusive(timeout_s + 30.0):
        rec = recorded_cluster(wait_s=timeout_s)
        if rec is not None:
            return rec
        if (left := _read_record()) is not None:
            raise ClusterStartError(f"the recorded local Ray cluster (pid {left.get('pid')}) runs but does not "
                                    f"answer at {left.get('address')}; stop it with `framesweep engines down`")
        return _start(object_store_mb, timeout_s, dashboard)


def _ensure_token(cmd_head: list[str]) -> None:
    """With token authentication on (Ray's default), make sure a token exists before `ray start` reads it: on a
    machine that never ran Ray, `ray start --head` refuses to start without one (only `ray.init` creates it).
    Ray's own `get-auth-token --generate` writes it to its user folder; the token it prints is discarded."""
    env = local_cluster_env()
    if env.get("RAY_AUTH_MODE", "").lower() != "token" or env.get("RAY_AUTH_TOKEN") or env.get("RAY_AUTH_TOKEN_PATH"):
        return
    if (Path.home() / ".ray" / "auth_token").exists():
        return
    r = subprocess.run([*cmd_head, "get-auth-token", "--generate"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, timeout=60, check=False)
    if r.returncode != 0:
        raise ClusterStartError(f"could not create Ray's authentication token (`ray get-auth-token --generate` "
                                f"exit {r.returncode}): {r.stderr.decode(errors='replace')[-500:]}")


def _start(object_store_mb: int, timeout_s: float, dashboard: bool = False) -> dict[str, Any]:
    port = _free_port()
    board = _free_port() if dashboard else None
    address = f"127.0.0.1:{port}"
    logfile = _record_path().parent / "cluster.log"
    logfile.parent.mkdir(parents=True, exist_ok=True)
    temp = _temp_dir()
    temp.mkdir(parents=True, exist_ok=True)
    ray_cli = Path(sys.executable).with_name("ray")
    head = [str(ray_cli) if ray_cli.exists() else sys.executable, *([] if ray_cli.exists() else
            ["-c", "from ray.scripts.scripts import main; main()"])]
    _ensure_token(head)
    cmd = [*head, "start", "--head", "--block", f"--port={port}", "--node-ip-address=127.0.0.1",
           *(["--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={board}"] if board else
             ["--include-dashboard=false"]), "--disable-usage-stats", f"--temp-dir={temp}",
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
           "started_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "dashboard": f"http://127.0.0.1:{board}" if board else None}
    _record_path().parent.mkdir(parents=True, exist_ok=True)
    write_json(_record_path(), rec)
    log.info("local Ray cluster started at %s (pid %d)", address, proc.pid)
    return rec


def _session_pids(sid: int) -> list[int]:
    """The running processes of session `sid` (psutil's list; a zombie, one gone meanwhile, or one not ours to ask
    is skipped)."""
    import psutil

    pids = []
    for proc in psutil.process_iter(["status"]):
        with contextlib.suppress(OSError):
            if proc.info.get("status") != psutil.STATUS_ZOMBIE and os.getsid(proc.pid) == sid:
                pids.append(proc.pid)
    return pids


def _end_session(pid: int, timeout_s: float) -> None:
    """SIGTERM the `ray start --block` process (it stops the cluster's processes), then SIGKILL whatever of its
    session is left after `timeout_s`."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and [p for p in _session_pids(pid) if pid_alive(p)]:
        time.sleep(0.2)
    for p in _session_pids(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)


def stop_local_cluster(timeout_s: float = 30.0) -> int:
    """Stop the recorded local cluster and any other local cluster framesweep started with this cache folder
    (`unrecorded_clusters`: every process of their sessions) and forget the record; how many ran (0: none)."""
    with _exclusive(timeout_s + 30.0):
        rec = _read_record() or {}
        pids = sorted({*local_cluster_pids(), *(local_cluster_pids(rec["temp_dir"]) if rec.get("temp_dir") else [])})
        for pid in pids:
            _end_session(pid, timeout_s)
        _record_path().unlink(missing_ok=True)
        for temp in {_temp_dir(), Path(rec.get("temp_dir") or _temp_dir())}:
            if (pids or rec) and temp.name.startswith("fs-ray-"):
                shutil.rmtree(temp, ignore_errors=True)  # the clusters' own folder: sessions, logs, sockets
        others = [p for p in pids if p != rec.get("pid")]
        if others:
            log.warning("stopped %d local Ray cluster(s) without a record (pids %s)", len(others),
                        ", ".join(map(str, others)))
        if rec:
            log.info("local Ray cluster at %s stopped", rec.get("address"))
        return len(pids)
