"""Stop a local Ray instance's processes when the driver that started it dies, however it dies.

A driver killed with SIGKILL runs no code. Ray's GCS and raylet notice at once (their parent
death signal), but what they started lives on for a while: vLLM's worker polls for its parent
(about 25 s), Ray's dashboard and runtime-env agents time out (about 90 s), holding memory and
cores. The reaper is a small process of its own, started beside a new local instance: it holds
the read end of a pipe whose write end only the driver has, so it learns of the driver's end by
end-of-file, whatever the signal. Meanwhile it keeps a list of the instance's processes (the
ones Ray started for this session, `ray._private.worker._global_node.all_processes`, and all
their descendants: agents, workers, vLLM's engine processes), refreshed every second; at the
driver's end it SIGKILLs every listed process still running (the same process, not a reused
pid) and their children. It never touches anything else: not a cluster the driver joined, not
a warm engine's cluster.

Run as ``python -m engine.runtime.reaper ROOT_PID[:CREATE_TIME] ...`` with the pipe on stdin.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
from typing import Any

__all__ = ["start_reaper"]

_STARTED: dict[int, Any] = {}
_LOCK = threading.Lock()
REFRESH_S = 1.0


def start_reaper(ray: Any) -> None:
    """Start the reaper for the local instance this process just started (once per instance)."""
    import psutil

    node = ray._private.worker._global_node  # the processes Ray started for this session
    roots = sorted({p.process.pid for infos in node.all_processes.values() for p in infos if p.process})
    if not roots:
        return
    with _LOCK:
        if roots[0] in _STARTED:
            return
        args = []
        for pid in roots:
            try:
                args.append(f"{pid}:{psutil.Process(pid).create_time()!r}")
            except psutil.Error:
                continue
        # its own session: a Ctrl-C to the driver's terminal group is the driver's to handle, not the reaper's
        _STARTED[roots[0]] = subprocess.Popen(
            [sys.executable, "-m", "engine.runtime.reaper", *args], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)


def _tracked(roots: list[Any], known: dict[int, Any]) -> None:
    """Add the live roots and all their descendants to `known` (pid -> psutil.Process)."""
    import psutil

    for root in roots:
        try:
            if not root.is_running():
                continue
            known.setdefault(root.pid, root)
            for child in root.children(recursive=True):
                known.setdefault(child.pid, child)
        except psutil.Error:
            continue


def _reap(known: dict[int, Any]) -> int:
    """SIGKILL every tracked process still running (and its children now); how many were killed."""
    import psutil

    victims: dict[int, Any] = {}
    for proc in known.values():
        try:
            if proc.is_running():  # the same process: psutil compares the creation time too
                victims[proc.pid] = proc
                for child in proc.children(recursive=True):
                    victims.setdefault(child.pid, child)
        except psutil.Error:
            continue
    for proc in victims.values():
        try:
            proc.send_signal(signal.SIGKILL)
        except psutil.Error:
            continue
    return len(victims)


def main(argv: list[str]) -> int:
    import psutil

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    roots = []
    for arg in argv:
        pid, _, created = arg.partition(":")
        try:
            proc = psutil.Process(int(pid))
            if not created or abs(proc.create_time() - float(created)) < 1e-3:
                roots.append(proc)
        except (psutil.Error, ValueError):
            continue
    known: dict[int, Any] = {}
    fd = sys.stdin.fileno()
    while True:
        _tracked(roots, known)
        if not _any_running(known):  # the instance was shut down (ray.shutdown): nothing left to watch
            return 0
        ready, _, _ = select.select([fd], [], [], REFRESH_S)
        if ready and not os.read(fd, 4096):  # end of file: the driver is gone
            break
    _reap(known)
    return 0


def _any_running(known: dict[int, Any]) -> bool:
    import psutil

    for proc in known.values():
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                return True
        except psutil.Error:
            continue
    return False


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
