"""Where framesweep keeps what it builds (tiny checkpoints, synthetic videos, frame cache)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]


def cache_dir() -> Path:
    """`$FRAMESWEEP_CACHE`, else `$XDG_CACHE_HOME/framesweep`, else `~/.cache/framesweep`."""
    env = os.environ.get("FRAMESWEEP_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "framesweep"
