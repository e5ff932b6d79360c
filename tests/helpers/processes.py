"""Waiting for processes the test does not own to end."""

from __future__ import annotations

import time
from collections.abc import Iterable

import psutil


def up(p: psutil.Process) -> bool:
    """Running and not a zombie (a zombie has ended; only its parent's wait is missing)."""
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def wait_gone(procs: Iterable[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Those of `procs` still up after `timeout` seconds, or none as soon as all have ended. `psutil.wait_procs`
    waits the whole timeout for a zombie whose parent (not this process) never waits for it."""
    procs = list(procs)
    deadline = time.monotonic() + timeout
    while (alive := [p for p in procs if up(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive
