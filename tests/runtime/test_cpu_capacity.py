"""CPU-build engines the cluster can never hold at once fail before any starts, naming what they need.

A CPU engine is not held by a placement group with a timeout (a GPU engine is): without this check, a
run asking for more CPU engines (beside its decode actors) than the cluster has CPUs waited forever on
an actor that Ray could never place.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.specs import small_spec_dict, write_toml

from engine.config import parse_spec
from engine.runtime.placement import Placement, PlacementError, check_cpu_capacity

FRAMESWEEP = [sys.executable, "-m", "engine.cli"]


def test_engines_and_decode_actors_beyond_the_cluster_cpus_are_refused() -> None:
    with pytest.raises(PlacementError) as err:
        check_cpu_capacity({"a": (2, Placement(gpus=0)), "b": (1, Placement(gpus=0, cpus=0.5))},
                           decode_cpus=1.0, total_cpus=3.0)
    msg = str(err.value)
    assert "need 3.5 CPU" in msg and "has 3 CPU" in msg
    assert "a: 2 engine(s) x 1 CPU" in msg and "b: 1 engine(s) x 0.5 CPU" in msg and "decode actors: 1 CPU" in msg
    assert "models.N.engine.replicas" in msg


def _refused(engines: dict, decode_cpus: float, total_cpus: float) -> bool:
    try:
        check_cpu_capacity(engines, decode_cpus=decode_cpus, total_cpus=total_cpus)
    except PlacementError:
        return True
    return False


def test_what_fits_exactly_and_gpu_engines_pass() -> None:
    # each case beside the one just over it: the line is drawn where the cluster is full, not before
    assert not _refused({"a": (2, Placement(gpus=0))}, 1.0, 3.0)  # exactly full
    assert _refused({"a": (2, Placement(gpus=0))}, 1.5, 3.0)
    assert not _refused({"g": (8, Placement(gpus=1))}, 0.0, 1.0)  # GPUs: placement groups, not counted here
    assert _refused({"g": (8, Placement(gpus=0))}, 0.0, 1.0)
    assert not _refused({}, 4.0, 1.0)  # no engine: nothing to wait for
    assert _refused({"a": (1, Placement(gpus=0))}, 4.0, 1.0)


@pytest.mark.engine
def test_run_with_more_cpu_engines_than_the_local_cluster_holds_exits_2_naming_them(tmp_path: Path) -> None:
    out = tmp_path / "out"
    d = small_spec_dict(out)
    n_cpus = os.cpu_count() or 2  # Ray's local cluster declares at most this many
    d["models"][0]["engine"]["replicas"] = n_cpus
    d["decode"] = {"actors": 2, "actor_cpus": 0.5, "max_videos_in_flight": 1}
    parse_spec(d)
    spec = write_toml(tmp_path / "spec.toml", d)
    t0 = time.monotonic()
    done = subprocess.run([*FRAMESWEEP, "run", str(spec)], capture_output=True, text=True, timeout=300,
                          check=False)
    took = time.monotonic() - t0
    text = done.stdout + done.stderr
    assert done.returncode == 2, text
    assert "cannot place the run's CPU engines" in text and f"tiny: {n_cpus} engine(s) x 1 CPU" in text, text
    assert "decode actors: 1 CPU" in text, text
    assert "Traceback" not in text, text
    assert not list(out.glob("results/part-*.parquet")), "nothing was answered"
    print(f"refused in {took:.1f}s")
