"""A local Ray cluster started off the main thread outlives that thread.

Ray starts a local instance's processes with PR_SET_PDEATHSIG (Linux): they are killed when the
*thread* that started them ends. A sweep starts Ray from an asyncio worker thread (while it loads
its dataset), and those threads end with the event loop; the cluster must not end with them. Run in
a fresh interpreter: the test process may already hold a Ray instance.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CHILD = """
import asyncio, json, psutil, ray
from engine.runtime.cluster import ensure_ray

async def start():
    await asyncio.to_thread(ensure_ray, None, num_cpus=1, object_store_mb=100)

asyncio.run(start())  # the loop's worker threads end here

@ray.remote
def square(x):
    return x * x

answer = ray.get(square.remote(7), timeout=120)
states = {}
for p in psutil.Process().children(recursive=True):
    try:
        states[p.name()] = p.status()
    except psutil.Error:
        pass
print(json.dumps({"answer": answer, "states": states}))
"""


def test_local_cluster_started_from_a_worker_thread_outlives_it(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    import json

    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["answer"] == 49
    assert got["states"].get("gcs_server") not in (None, "zombie"), got["states"]
    assert got["states"].get("raylet") not in (None, "zombie"), got["states"]
