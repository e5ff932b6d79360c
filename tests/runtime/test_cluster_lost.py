"""The watcher of a local cluster this process started (`engine.runtime.cluster`): its GCS and raylet killed, it says
so at once, and what would then ask the gone GCS does not (a placement group given back: Ray's call waited 60 s
for the GCS and then ended the process, exit 1). Each case runs in a process of its own: Ray ends the process that
waits on a gone GCS."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.engine  # starts a Ray cluster

_SCRIPT = textwrap.dedent("""
    import os, threading, time
    import ray
    from ray.util.placement_group import placement_group
    from engine.runtime.cluster import cluster_lost, ensure_ray, watching_cluster
    from engine.runtime.placement import release

    ensure_ray(num_cpus=1, object_store_mb=100)
    pg = placement_group([{"CPU": 1}])
    ray.get(pg.ready(), timeout=60)
    heard = threading.Event()
    with watching_cluster(heard.set):
        print("before:", cluster_lost(), flush=True)
        node = ray._private.worker._global_node
        for kind in ("gcs_server", "raylet"):
            for info in node.all_processes[kind]:
                info.process.kill()
        print("heard:", heard.wait(20), flush=True)
    print("lost:", cluster_lost(), flush=True)
    release(pg)
    print("released", flush=True)
    os._exit(0)
""")


def test_a_killed_local_cluster_is_heard_and_its_placement_group_left_alone() -> None:
    r = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=45, check=False)
    lines = r.stdout.splitlines()
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert lines[0] == "before: None" and lines[1] == "heard: True", r.stdout
    assert lines[2].startswith("lost: its GCS at 127.0.0.1:") and lines[2].endswith(" is gone and so is its raylet")
    assert lines[3] == "released"


def test_a_shutdown_is_no_loss() -> None:
    """`ray.shutdown` stops the instance's processes too: the watcher stays quiet."""
    script = textwrap.dedent("""
        import threading, time
        import ray
        from engine.runtime.cluster import cluster_lost, ensure_ray, watching_cluster
        ensure_ray(num_cpus=1, object_store_mb=100)
        heard = threading.Event()
        with watching_cluster(heard.set):
            ray.shutdown()
            time.sleep(1.0)
        print(heard.is_set(), cluster_lost(), flush=True)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0 and r.stdout.strip() == "False None", r.stdout[-2000:] + r.stderr[-3000:]
