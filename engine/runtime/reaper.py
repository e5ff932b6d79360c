"""Stop a local Ray instance's processes when the driver that started it dies, however it dies.

A driver killed with SIGKILL runs no code. Ray's GCS and raylet notice at once (their parent
death signal), but what they started lives on for a while: vLLM's worker polls for its parent
(about 25 s), Ray's dashboard and runtime-env agents time out (about 90 s), holding memory and
cores. The reaper is a small process of its own, started *before* the driver starts a new local
instance: it holds the read end of a pipe whose write end only the driver has, so it learns of
the driver's end by end-of-file, whatever the signal and whenever it comes.

While Ray starts, the reaper follows the driver's Ray processes itself (every child of the driver
run from Ray's package, and their descendants, looked at every 50 ms), and knows the instance's
session by its name, which Ray makes from the driver's pid (``session_<time>_<driver pid>``, on the
command line of every process it starts): a driver killed in the first seconds leaves nothing.
Once the instance is up the driver hands over its processes (Ray's own list,
`ray._private.worker._global_node.all_processes`) and the exact session name; from then on the
reaper follows those and all their descendants (agents, workers, vLLM's engine processes), every
second. At the driver's end it SIGKILLs every process it follows that still runs (the same
process, not a reused pid) and any process naming the session, with their children. It never
touches anything else: not a cluster the driver joined, not a warm engine's cluster, not the
driver's other children. It leaves by itself when the instance is shut down (`ray.shutdown`).

Run as ``python -m engine.runtime.reaper DRIVER_PID RAY_PACKAGE_DIR`` with the pipe on stdin; the
driver writes one JSON line ``{"roots": ["PID:CREATE_TIME", ...], "session": NAME}`` when Ray is up,
or ``reap`` when its start failed (what it left is stopped, then the reaper leaves).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO, Any, ClassVar

__all__ = ["Reaper"]

REFRESH_S = 1.0
STARTING_REFRESH_S = 0.05


class Reaper:
    """The driver's side: `begin()` before starting a local instance, then `attach(ray)` once it is up (or
    `abort()` when the start failed)."""

    _held: ClassVar[list[Reaper]] = []
    """Every reaper this process began: its pipe must stay open as long as this process lives (a pipe closed by
    the garbage collector would read as this driver's end)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        Reaper._held.append(self)

    @classmethod
    def begin(cls) -> Reaper:
        """Start the reaper for the local instance this process is about to start."""
        spec = importlib.util.find_spec("ray")
        ray_dir = str(Path(spec.origin).parent) if spec and spec.origin else ""
        # its own session: a Ctrl-C to the driver's terminal group is the driver's to handle, not the reaper's
        return cls(subprocess.Popen(
            [sys.executable, "-m", "engine.runtime.reaper", str(os.getpid()), ray_dir], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True))

    def attach(self, ray: Any) -> None:
        """Hand over the processes Ray started for this session, and its name."""
        import psutil

        node = ray._private.worker._global_node
        roots = []
        for pid in sorted({p.process.pid for infos in node.all_processes.values() for p in infos if p.process}):
            with contextlib.suppress(psutil.Error):
                roots.append(f"{pid}:{psutil.Process(pid).create_time()!r}")
        self._send(json.dumps({"roots": roots, "session": node.session_name}))

    def abort(self) -> None:
        """The start failed: stop whatever it left, and let the reaper go."""
        self._send("reap")

    def _send(self, line: str) -> None:
        stdin: IO[bytes] | None = self.proc.stdin
        with contextlib.suppress(OSError, ValueError):  # a reaper already gone: nothing to tell
            assert stdin is not None
            stdin.write(line.encode() + b"\n")
            stdin.flush()


def _is_ray(proc: Any, ray_dir: str) -> bool:
    """A process run from Ray's package (its binaries, its Python entry points) or titled by Ray."""
    try:
        if proc.name().startswith("ray::"):
            return True
        return bool(ray_dir) and any(ray_dir in arg for arg in proc.cmdline()[:3])
    except Exception:  # noqa: BLE001 - gone, or not ours to read
        return False


class _Watch:
    """The reaper's side: the processes it follows and the session they belong to."""

    def __init__(self, driver_pid: int, ray_dir: str) -> None:
        self.driver_pid = driver_pid
        self.ray_dir = ray_dir
        self.session = re.compile(rf"session_\d{{4}}-\d\d-\d\d_\d\d-\d\d-\d\d_\d+_{driver_pid}(?!\d)")
        self.roots: list[Any] | None = None  # None while Ray starts (the driver's Ray children are followed)
        self.known: dict[int, Any] = {}

    def refresh(self) -> None:
        import psutil

        if self.roots is None:
            with contextlib.suppress(psutil.Error):
                starters = [c for c in psutil.Process(self.driver_pid).children() if _is_ray(c, self.ray_dir)]
                _tracked(starters, self.known)
        else:
            _tracked(self.roots, self.known)

    def handed_over(self, message: dict[str, Any]) -> None:
        import psutil

        roots = []
        for arg in message.get("roots", []):
            pid, _, created = str(arg).partition(":")
            with contextlib.suppress(psutil.Error, ValueError):
                proc = psutil.Process(int(pid))
                if not created or abs(proc.create_time() - float(created)) < 1e-3:
                    roots.append(proc)
        self.roots = roots
        if message.get("session"):
            self.session = re.compile(re.escape(str(message["session"])) + r"(?!\d)")

    def reap(self) -> int:
        """SIGKILL what it follows and whatever names the session (twice: a parent killed in the first pass
        may have started a child meanwhile); how many were killed."""
        import time

        n = 0
        for _ in range(2):
            n += _reap({**self.known, **_naming(self.session)}, spare={os.getpid(), self.driver_pid})
            time.sleep(0.2)
        return n


def _naming(session: re.Pattern[str]) -> dict[int, Any]:
    """Every process whose command line names the session."""
    import psutil

    found = {}
    for proc in psutil.process_iter(["cmdline"]):
        if session.search(" ".join(proc.info.get("cmdline") or [])):
            found[proc.pid] = proc
    return found


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


def _reap(known: dict[int, Any], spare: set[int]) -> int:
    """SIGKILL every tracked process still running (and its children now), but those in `spare`."""
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
    n = 0
    for proc in victims.values():
        if proc.pid in spare:
            continue
        try:
            proc.send_signal(signal.SIGKILL)
            n += 1
        except psutil.Error:
            continue
    return n


def _any_running(known: dict[int, Any]) -> bool:
    import psutil

    for proc in known.values():
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                return True
        except psutil.Error:
            continue
    return False


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch = _Watch(int(argv[0]), argv[1] if len(argv) > 1 else "")
    fd, buf = sys.stdin.fileno(), b""
    while True:
        watch.refresh()
        if watch.roots is not None and not _any_running(watch.known):  # shut down (ray.shutdown): nothing to watch
            return 0
        ready, _, _ = select.select([fd], [], [], STARTING_REFRESH_S if watch.roots is None else REFRESH_S)
        if not ready:
            continue
        data = os.read(fd, 4096)
        if not data:  # end of file: the driver is gone
            break
        buf += data
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if line.strip() == b"reap":  # the driver's start failed: stop what it left, then leave
                watch.refresh()
                watch.reap()
                return 0
            with contextlib.suppress(ValueError):
                watch.handed_over(json.loads(line))
    watch.refresh()
    watch.reap()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
