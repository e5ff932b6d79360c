"""Where framesweep keeps what it builds (tiny checkpoints, synthetic videos, frame cache).

A tiny checkpoint's folder is named here, below every package that looks for one: `engine.demo.tiny`
builds into it, `engine.runtime.checkpoint.model_folder` finds it (for the warm key, the answer fingerprint and
the export's model hash) without importing the generation package.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

__all__ = ["TINY_BUILD_VERSION", "TRAINED_WEIGHTS", "cache_dir", "tiny_checkpoint_dir"]

TINY_BUILD_VERSION = 1
"""The tiny checkpoints' build version, part of their folder's name: a new version is built beside the old."""


def cache_dir() -> Path:
    """`$FRAMESWEEP_CACHE`, else `$XDG_CACHE_HOME/framesweep`, else `~/.cache/framesweep`."""
    env = os.environ.get("FRAMESWEEP_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "framesweep"


TRAINED_WEIGHTS = Path(__file__).resolve().parents[1] / "demo" / "weights"
"""The committed weights of the trained tiny checkpoints, `<family>.safetensors` (package data)."""


@functools.lru_cache(maxsize=16)
def _digest(path: Path, size: int, mtime_ns: int) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def tiny_checkpoint_dir(family: str, seed: int = 0) -> Path:
    """The folder of the tiny checkpoint of `family` (`tiny:<family>` in a spec), built or not. A trained one's
    name ends with its weights' digest, so retrained weights build a new folder instead of reusing the old."""
    name = f"tiny-{family}-v{TINY_BUILD_VERSION}-seed{seed}"
    weights = TRAINED_WEIGHTS / f"{family}.safetensors"
    if weights.is_file():
        st = weights.stat()
        name += f"-w{_digest(weights, st.st_size, st.st_mtime_ns)}"
    return cache_dir() / "checkpoints" / name
