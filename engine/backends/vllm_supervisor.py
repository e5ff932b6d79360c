"""The engine actor's watch over vLLM's processes: find them, tell whether they live, end the actor when one dies.

With the engine core in its own process (`engine_core = "process"`, vLLM's default on a GPU), a core that dies
leaves vLLM's client waiting for outputs forever. `EngineProcesses` finds the core and its workers under the actor
(by vLLM's own handle, and by the ``VLLM::`` titles vLLM gives them), and a watchdog thread ends the actor's
process when one of them dies (`die`: exit status `ENGINE_DIED_EXIT`), so Ray restarts the actor (a fresh engine)
and the driver retries the batch. An in-process core has no process to watch: its crash is the actor's crash.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from typing import Any, NoReturn

__all__ = ["ENGINE_DIED_EXIT", "FIND_CORE_S", "EngineProcesses", "children_described", "core_pids", "tree_rss_mb"]

log = logging.getLogger(__name__)

ENGINE_DIED_EXIT = 75
"""The actor's exit status when its engine process died (Ray restarts it)."""

FIND_CORE_S = 20.0
"""How long a new engine actor looks for its engine processes when vLLM's client shows none (by VLLM:: title)."""


def core_pids(llm: Any) -> list[int]:
    """The engine-core processes vLLM's client started (its process manager's), or none (in process, or
    another vLLM layout)."""
    try:
        manager = llm.llm_engine.engine_core.resources.engine_manager
        return [int(p.pid) for p in manager.processes if p.pid is not None]
    except (AttributeError, TypeError):
        return []


def _engine_processes(llm: Any = None) -> list[Any]:
    """vLLM's engine processes under this one (EngineCore and its workers; none for an in-process engine).

    The engine core's process as vLLM's client holds it (`llm`), and every process under this one
    that vLLM titled (setproctitle: ``VLLM::EngineCore``, ``VLLM::Worker``). The title alone was
    once not found under a loaded test suite although the core ran: the client's handle does not
    depend on it."""
    import psutil

    procs: dict[int, Any] = {}
    for pid in core_pids(llm):
        try:
            procs[pid] = psutil.Process(pid)
        except psutil.Error:
            continue
    for p in psutil.Process().children(recursive=True):
        try:
            if p.name().startswith("VLLM::"):
                procs.setdefault(p.pid, p)
        except psutil.Error:
            continue
    return list(procs.values())


def children_described() -> str:
    """Every process under this one, as `pid 'name' 'command line'` (for the engine's facts and the log)."""
    import psutil

    out = []
    for p in psutil.Process().children(recursive=True):
        try:
            out.append(f"{p.pid} {p.name()!r} {' '.join(p.cmdline())[:80]!r}")
        except psutil.Error as err:
            out.append(f"{p.pid} ({type(err).__name__})")
    return "; ".join(out) or "none"


def _alive(proc: Any) -> bool:
    import psutil

    try:
        return bool(proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def tree_rss_mb() -> float:
    """Resident memory of this process and its children (the engine core and workers), MiB."""
    import psutil

    procs = [psutil.Process(), *psutil.Process().children(recursive=True)]
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            continue
    return total / 2**20


class EngineProcesses:
    """vLLM's engine processes under this actor, and the watchdog over them.

    Args:
        procs: The processes watched (empty: an in-process core, or none found).
        worker: The actor (host:pid), for the log.
    """

    def __init__(self, procs: list[Any], worker: str = "?") -> None:
        self.procs = procs
        self.worker = worker

    @classmethod
    def find(cls, llm: Any, separate_core: bool, worker: str = "?", find_s: float = FIND_CORE_S) -> EngineProcesses:
        """The engine processes of `llm`; with the core in its own process (`separate_core`), looked for up to
        `find_s` while vLLM's client shows none (another vLLM layout leaves only the titles), with a warning when
        none is found (a dead core is then caught by the batch deadline only)."""
        procs = _engine_processes(llm)
        deadline = time.monotonic() + find_s
        while separate_core and not procs and time.monotonic() < deadline:
            time.sleep(0.2)
            procs = _engine_processes(llm)
        if separate_core and not procs:
            log.warning("no VLLM:: process found under the engine actor (children: %s): a dead engine core will "
                        "be caught by the batch deadline only", children_described())
        return cls(procs, worker)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def alive(self) -> bool:
        """Whether every watched process still runs."""
        return all(_alive(p) for p in self.procs)

    def watch(self, interval_s: float = 0.5) -> None:
        """Start the watchdog thread (when there is a process to watch): `die` once one is gone."""
        if self.procs:
            threading.Thread(target=self._watch, args=(interval_s,), daemon=True, name="engine-watchdog").start()

    def _watch(self, interval_s: float) -> None:
        while True:
            if not self.alive():
                self.die()
            time.sleep(interval_s)

    def die(self) -> NoReturn:
        """End this actor's process (its engine is gone): Ray restarts the actor, the driver retries the batch. The
        surviving engine processes are killed first (they would wait on the dead one forever)."""
        dead = [str(p.pid) for p in self.procs if not _alive(p)]
        log.error("engine process %s died; ending actor %s so that it is restarted", ", ".join(dead) or "?",
                  self.worker)
        for p in self.procs:
            with contextlib.suppress(Exception):  # already gone
                p.kill()
        os._exit(ENGINE_DIED_EXIT)
