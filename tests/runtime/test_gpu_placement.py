"""GPU placement, proven without GPUs: a real local Ray cluster that declares 4 GPUs (`ray start --head
--num-gpus=4`, on 127.0.0.1), engines placed through `VLLMActorBackend.start` (placement group, actor
options, restarts) while running the CPU build.

Most tests place a light stand-in for the engine actor (same constructor, same start path: only the
actor body differs) so four replicas fit in memory; one places the real vLLM CPU engine on a
declared GPU and has it answer. Ray gives an actor that holds GPUs their ids in
`CUDA_VISIBLE_DEVICES`; the CPU build must not mind.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

from engine.backends.pool import EnginePool
from engine.backends.vllm_actor import VLLMActorBackend
from engine.config import EngineSpec
from engine.runtime.placement import Placement, PlacementError, check_feasible, resolve_gpus

RAY = str(Path(sys.executable).with_name("ray"))
DECLARED_GPUS = 4

# This module joins a Ray cluster of its own, which the Ray state other test modules leave in a shared
# pytest process can break (seen as actors cancelled before they start); it runs whole in a fresh
# interpreter, started by tests/runtime/test_gpu_placement_isolated.py.
pytestmark = [pytest.mark.engine,
              pytest.mark.skipif(os.environ.get("FRAMESWEEP_GPU_PLACEMENT_ISOLATED") != "1",
                                 reason="runs in a fresh interpreter (tests/runtime/test_gpu_placement_isolated.py)")]


class StandIn:
    """Takes VLLMWorker's place in the actor: same constructor, reports where Ray put it."""

    def __init__(self, model_path: str, engine: Any, seed: int = 0, family_kwargs: Any = None) -> None:
        import ray

        ctx = ray.get_runtime_context()
        pg = ray.util.get_current_placement_group()
        self.facts = {"worker": f"{socket.gethostname()}:{os.getpid()}", "node_id": ctx.get_node_id(),
                      "gpu_ids": sorted(str(g) for g in ctx.get_accelerator_ids().get("GPU", [])),
                      "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
                      "placement_group": pg.id.hex() if pg else None}

    def info(self) -> dict[str, Any]:
        return self.facts


class StandInBackend(VLLMActorBackend):
    worker_cls = StandIn


class NoEngine(StandIn):
    """An engine whose start fails (as a model that does not load would)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("this engine does not load")


class NoEngineBackend(VLLMActorBackend):
    worker_cls = NoEngine


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kill_session(pid: int) -> None:
    for p in psutil.process_iter(["pid"]):
        try:
            if os.getsid(p.pid) == pid:
                os.kill(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _refresh_ray_config() -> None:
    from ray._raylet import Config

    Config.initialize("")


@pytest.fixture(scope="module")
def gpu_cluster(tmp_path_factory: pytest.TempPathFactory):
    """A one-node Ray cluster on 127.0.0.1 that declares 4 GPUs (none are real); this process joins it."""
    import ray
    from ray import cloudpickle

    from engine.runtime.cluster import ensure_ray

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the stand-in travels to the workers
    if ray.is_initialized():
        ray.shutdown()
    port = _free_port()
    address = f"127.0.0.1:{port}"
    saved = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")}
    os.environ["RAY_AUTH_MODE"] = "disabled"  # a throwaway test cluster; real clusters share the token
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # keep the node on 127.0.0.1
    _refresh_ray_config()  # Ray read RAY_AUTH_MODE at import: a driver still on `token` has its actors cancelled
    log = tmp_path_factory.mktemp("gpu-cluster") / "head.log"
    head = subprocess.Popen(
        [RAY, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}", f"--num-gpus={DECLARED_GPUS}",
         "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats", "--object-store-memory=300000000",
         "--block"],
        stdout=log.open("w"), stderr=subprocess.STDOUT, env=dict(os.environ), start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert head.poll() is None, f"ray start failed:\n{log.read_text()[-3000:]}"
            try:
                ensure_ray(address)
                break
            except Exception:  # noqa: BLE001 - the head is still starting
                if ray.is_initialized():
                    ray.shutdown()
                assert time.monotonic() < deadline, f"the head did not come up:\n{log.read_text()[-3000:]}"
                time.sleep(1.0)
        yield address
    finally:
        if ray.is_initialized():
            ray.shutdown()
        _kill_session(head.pid)
        head.wait(timeout=30)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _refresh_ray_config()
        current = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
        if current.exists() and current.read_text().strip() == address:
            current.unlink()
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def _run(coro: Any) -> Any:
    return asyncio.new_event_loop().run_until_complete(coro)


def _free_gpus() -> float:
    import ray

    for _ in range(50):  # resources come back asynchronously after a kill
        free = ray.available_resources().get("GPU", 0.0)
        if free == DECLARED_GPUS:
            break
        time.sleep(0.1)
    return free


def test_replicas_take_one_declared_gpu_each(gpu_cluster: str) -> None:
    # placing is slow on a loaded 2-core machine: generous for the replicas that fit, short for the one that cannot
    engine = EngineSpec(num_gpus=1, placement_timeout_s=120)
    pool = EnginePool([StandInBackend("m", engine) for _ in range(DECLARED_GPUS)])

    async def go() -> tuple[dict, str]:
        info = await pool.start()
        try:
            with pytest.raises(PlacementError) as err:  # a fifth: every GPU is held
                await StandInBackend("m5", engine.model_copy(update={"placement_timeout_s": 3})).start()
        finally:
            await pool.close()
        return info, str(err.value)

    info, message = _run(go())
    replicas = info["replicas"]
    visible = [r["cuda_visible_devices"] for r in replicas]
    assert sorted(visible) == [str(i) for i in range(DECLARED_GPUS)], visible
    assert all([r["cuda_visible_devices"]] == r["gpu_ids"] for r in replicas)
    assert len({r["placement_group"] for r in replicas}) == DECLARED_GPUS
    assert "an engine for m5" in message and "needs 1 GPU" in message
    assert f"0 of {DECLARED_GPUS} GPU are free" in message
    assert _free_gpus() == DECLARED_GPUS  # closing gave every GPU back


def test_tensor_parallel_engine_gets_one_group_of_two_gpus_on_one_node(gpu_cluster: str) -> None:
    import ray

    engine = EngineSpec(num_gpus=2, extra={"tensor_parallel_size": 2}, placement_timeout_s=120)
    a, b = StandInBackend("tp", engine), StandInBackend("tp", engine)

    async def go() -> tuple[dict, dict, dict, str]:
        ia, ib = await a.start(), await b.start()
        table = ray.util.placement_group_table(a._pg)
        try:
            with pytest.raises(PlacementError) as err:
                await StandInBackend("tp3", engine.model_copy(update={"placement_timeout_s": 3})).start()
        finally:
            await a.close()
            await b.close()
        return ia, ib, table, str(err.value)

    ia, ib, table, message = _run(go())
    assert len(ia["gpu_ids"]) == 2 and ia["cuda_visible_devices"] == ",".join(ia["gpu_ids"])
    assert not set(ia["gpu_ids"]) & set(ib["gpu_ids"])  # two groups, four distinct GPUs
    assert table["strategy"] == "STRICT_PACK"
    assert list(table["bundles"].values()) == [{"GPU": 2.0}]
    assert set(table["bundles_to_node_id"].values()) == {ia["node_id"]}
    assert ia["placement_group"] == table["placement_group_id"]
    assert "needs 2 GPU" in message and f"0 of {DECLARED_GPUS} GPU are free" in message
    assert _free_gpus() == DECLARED_GPUS


def test_engine_no_node_can_hold_fails_at_once_naming_the_resource(gpu_cluster: str) -> None:
    engine = EngineSpec(num_gpus=8, extra={"tensor_parallel_size": 8})
    with pytest.raises(PlacementError, match=r"needs 8 GPU on one node, and no node of the cluster has that many "
                                             r"\(GPU per alive node: 127\.0\.0\.1: 4\)"):
        _run(StandInBackend("big", engine).start())  # default timeout 300 s: it must not be waited for
    assert _free_gpus() == DECLARED_GPUS


def test_replica_that_fails_to_start_gives_every_gpu_back(gpu_cluster: str) -> None:
    # one replica's engine does not load: the pool's start fails, and the replica that came up is closed and
    # both placement groups removed, so a failed start holds no GPU until the driver exits
    engine = EngineSpec(num_gpus=1, placement_timeout_s=120)
    pool = EnginePool([StandInBackend("m", engine), NoEngineBackend("m", engine)])
    with pytest.raises(Exception, match="this engine does not load"):
        _run(pool.start())
    assert _free_gpus() == DECLARED_GPUS
    assert all(r._pg is None and r.actor is None for r in pool.replicas)


def test_auto_is_the_cpu_build_where_declared_gpus_have_no_cuda(gpu_cluster: str) -> None:
    # the probe runs on the node that declares the GPUs; the CPU build's torch sees no CUDA there
    assert resolve_gpus("auto", 1) == 0.0
    be = StandInBackend("auto", EngineSpec())
    info = _run(be.start())
    try:
        assert be._pg is None and info["gpu_ids"] == []
    finally:
        _run(be.close())


def test_auto_takes_the_world_size_where_cuda_is_visible() -> None:
    assert resolve_gpus("auto", 2, cuda_visible=lambda: True) == 2.0
    assert resolve_gpus("auto", 1, cuda_visible=lambda: False) == 0.0
    assert resolve_gpus(1, 1, cuda_visible=lambda: pytest.fail("a number needs no probe")) == 1.0


def test_gpu_request_on_a_cluster_without_gpus_names_gpu() -> None:
    nodes = [{"NodeManagerAddress": "10.0.0.1", "Resources": {"CPU": 8.0}}]
    with pytest.raises(PlacementError, match=r"needs 1 GPU on one node.*10\.0\.0\.1: 0.*--num-gpus"):
        check_feasible(Placement(gpus=1), "an engine for m", nodes)
    check_feasible(Placement(gpus=0), "an engine for m", nodes)  # the CPU build fits


def test_num_gpus_must_match_the_parallel_ranks() -> None:
    with pytest.raises(ValueError, match="tensor-parallel engine needs one GPU per rank"):
        EngineSpec(num_gpus=1, extra={"tensor_parallel_size": 2})
    assert EngineSpec(num_gpus="auto", extra={"tensor_parallel_size": 2}).world_size == 2


def test_compose_gpu_workers_declare_the_gpus_they_reserve() -> None:
    compose = yaml.safe_load((Path(__file__).resolve().parents[2] / "docker-compose.yml").read_text())
    worker, head = compose["services"]["gpu-worker"], compose["services"]["ray-head"]
    declared = [a.split("=", 1)[1] for a in worker["command"].split() if a.startswith("--num-gpus=")]
    devices = worker["deploy"]["resources"]["reservations"]["devices"]
    assert declared and [str(d["count"]) for d in devices] == declared
    assert "--num-gpus=0" in head["command"]  # the driver's node: engines go to the workers


def test_real_engine_on_a_declared_gpu_runs_the_cpu_build(gpu_cluster: str, tiny_qwen25: Path) -> None:
    import numpy as np

    from engine.backends.families import get_family
    from engine.frames.view import MediaView
    from engine.items import Item

    fam = get_family("qwen2_5_vl")
    be = VLLMActorBackend(tiny_qwen25, EngineSpec(num_gpus=1, max_model_len=4096, dtype="float32"),
                          family_kwargs=fam.engine_kwargs(None))
    item = Item(dataset="t", dataset_version="1", item_id="q1", video_id="v1", video_path=None,
                question="Which colour?", options=("red", "green", "blue", "yellow"), answer="B")
    frames = np.random.default_rng(0).integers(0, 255, (4, 64, 96, 3), dtype=np.uint8)
    media = MediaView(frames, np.arange(4), 8.0, 40, "v1:f4", "pyav")

    async def go() -> tuple[dict, list]:
        info = await be.start()
        try:
            res = await be.generate([fam.build("text", item, None, "letter", None, 1),
                                     fam.build("f4", item, media, "letter", None, 1)])
        finally:
            await be.close()
        return info, res

    info, res = _run(go())
    assert info["cuda_visible_devices"] in {str(i) for i in range(DECLARED_GPUS)}
    assert info["gpu_ids"] == [info["cuda_visible_devices"]]
    assert all(r.ok for r in res), [r.error for r in res]
    assert all(set(r.letter_logprobs) == {"A", "B", "C", "D"} for r in res)
    assert _free_gpus() == DECLARED_GPUS
