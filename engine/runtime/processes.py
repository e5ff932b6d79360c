"""Whether a process still runs, one rule for every caller (a lock's holder, a killed export, a cluster)."""

from __future__ import annotations

import psutil

__all__ = ["pid_alive"]


def pid_alive(pid: int) -> bool:
    """Whether process `pid` runs; a zombie (an unreaped child of ours) counts as gone, and a process of
    another user that we may not signal as running."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True
