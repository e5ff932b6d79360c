"""Timing whole `framesweep` processes from the outside: launch to the first committed row, and to exit.

Shared by the benchmarks. Every command runs with a framesweep cache folder of its own (the user's
checkpoints and synthetic data linked in), so a warm engine or local cluster started here is never
the user's, and `engines down` here stops only what was started here.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from engine.config.toml_out import write_spec_toml

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["engines_up", "private_cache", "timed_run", "write_spec_toml"]


@contextlib.contextmanager
def private_cache() -> Iterator[dict[str, str]]:
    """An environment whose framesweep cache is a fresh folder holding links to the user's checkpoints
    and synthetic data (nothing is rebuilt inside a timed span); its local cluster is stopped at the end."""
    from engine.runtime.paths import cache_dir

    real = cache_dir()
    tmp = Path(tempfile.mkdtemp(prefix="fs-bench-cache-"))
    for sub in ("checkpoints", "synthetic", "images"):
        (real / sub).mkdir(parents=True, exist_ok=True)
        (tmp / sub).symlink_to(real / sub)
    env = dict(os.environ, FRAMESWEEP_CACHE=str(tmp))
    try:
        yield env
    finally:
        framesweep(["engines", "down"], env, timeout_s=120)
        shutil.rmtree(tmp, ignore_errors=True)


def framesweep(args: list[str], env: dict[str, str], timeout_s: float = 1800) -> subprocess.CompletedProcess[str]:
    """Run the `framesweep` command (this interpreter) to the end."""
    return subprocess.run([sys.executable, "-m", "engine.cli", *args], cwd=ROOT, env=env, capture_output=True, check=False,
                          text=True, timeout=timeout_s)


def timed_run(spec: Path, out: Path, env: dict[str, str], timeout_s: float = 1800) -> dict[str, float]:
    """`framesweep run SPEC --out OUT` from launch: seconds to the first committed row (the first result
    shard in place) and to the process's exit."""
    shutil.rmtree(out, ignore_errors=True)
    results = out / "results"
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "engine.cli", "run", str(spec), "--out", str(out)], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    first = None
    while proc.poll() is None:
        if first is None and results.is_dir() and any(results.glob("part-*.parquet")):
            first = time.perf_counter() - t0
        if time.perf_counter() - t0 > timeout_s:
            proc.kill()
        time.sleep(0.02)
    total = time.perf_counter() - t0
    log = proc.stdout.read() if proc.stdout else ""
    if proc.returncode != 0:
        raise RuntimeError(f"framesweep run exited {proc.returncode}:\n{log[-3000:]}")
    if first is None and any(results.glob("part-*.parquet")):
        first = total
    return {"first_row_s": float(first if first is not None else "nan"), "process_s": total}


def engines_up(spec: Path, env: dict[str, str]) -> None:
    r = framesweep(["engines", "up", str(spec)], env)
    if r.returncode != 0:
        raise RuntimeError(f"framesweep engines up exited {r.returncode}:\n{r.stdout[-2000:]}{r.stderr[-3000:]}")
