"""Where an engine actor runs: its GPUs, its placement group, and a clear error when it cannot be placed.

Ray schedules on declared resources. An engine that uses GPUs gets a placement group of one bundle
holding all its GPUs (so a tensor-parallel engine's GPUs are reserved together, on one node) and
runs inside it; Ray then sets the actor's `CUDA_VISIBLE_DEVICES` to exactly those GPUs. An engine
on the CPU build needs one CPU. Before anything waits on the cluster, the request is checked against
every alive node's totals: a request no node can ever hold fails at once, naming the resource; one
that could fit but finds the resource held by others fails after a timeout, saying how much is free.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Literal

from engine.runtime.cluster import cluster_lost

__all__ = ["Placement", "PlacementError", "actor_options", "check_cpu_capacity", "check_feasible",
           "cluster_cuda_visible", "place", "release", "resolve_gpus"]

log = logging.getLogger(__name__)

_CUDA_BY_CLUSTER: dict[str, bool] = {}


class PlacementError(RuntimeError):
    """An actor the cluster cannot place: the message names the missing resource."""


@dataclass(frozen=True)
class Placement:
    """What one engine actor asks of the cluster."""

    gpus: float  # 0: the CPU build
    cpus: float = 1.0  # used only by CPU-build engines (a GPU engine's CPU work is not counted)

    @property
    def resources(self) -> dict[str, float]:
        return {"GPU": self.gpus} if self.gpus else {"CPU": self.cpus}


def _torch_sees_cuda() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - no torch, or a broken CUDA install: both mean "no GPU here"
        return False


def cluster_cuda_visible(timeout_s: float = 120.0) -> bool:
    """True when the cluster declares GPUs and torch sees CUDA on a node that declares them.

    The driver may run on a node without GPUs (a head with `--num-gpus=0`), and a node may declare
    GPUs that are not real (a test cluster): so the check runs on a GPU node itself, as a task that
    takes no GPU (Ray leaves such a task the node's own `CUDA_VISIBLE_DEVICES`). Cached per cluster.
    """
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    key = ray.get_runtime_context().gcs_address
    if key in _CUDA_BY_CLUSTER:
        return _CUDA_BY_CLUSTER[key]
    gpu_nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("GPU", 0) > 0]
    seen = False
    if gpu_nodes:
        probe = ray.remote(_torch_sees_cuda).options(
            num_cpus=0, num_gpus=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(gpu_nodes[0]["NodeID"], soft=False))
        seen = bool(ray.get(probe.remote(), timeout=timeout_s))
        log.info("GPU node %s: CUDA %s", gpu_nodes[0].get("NodeManagerAddress"), "visible" if seen else "not visible")
    _CUDA_BY_CLUSTER[key] = seen
    return seen


def resolve_gpus(num_gpus: float | Literal["auto"], world_size: int = 1,
                 cuda_visible: Any = cluster_cuda_visible) -> float:
    """GPUs per engine actor: a number as given; `auto` is `world_size` GPUs where CUDA is visible on
    the cluster's GPU nodes, else 0 (the CPU build)."""
    if num_gpus != "auto":
        return float(num_gpus)
    return float(world_size) if cuda_visible() else 0.0


def _nodes() -> list[dict[str, Any]]:
    import ray

    return [n for n in ray.nodes() if n.get("Alive")]


def check_feasible(need: Placement, what: str, nodes: list[dict[str, Any]] | None = None) -> None:
    """Raise `PlacementError` at once when no alive node could ever hold `need`."""
    nodes = _nodes() if nodes is None else nodes
    for res, amount in need.resources.items():
        totals = {n.get("NodeManagerAddress", "?"): n.get("Resources", {}).get(res, 0.0) for n in nodes}
        if any(t >= amount for t in totals.values()):
            continue
        have = ", ".join(f"{addr}: {t:g}" for addr, t in totals.items()) or "no alive node"
        hint = (" Declare GPUs on the nodes that have them (`ray start --num-gpus=N`), or use the CPU build "
                "(num_gpus = 0, or \"auto\" on a cluster without CUDA)." if res == "GPU" else "")
        raise PlacementError(f"cannot place {what}: it needs {amount:g} {res} on one node, and no node of the "
                             f"cluster has that many ({res} per alive node: {have}).{hint}")


def check_cpu_capacity(engines: dict[str, tuple[int, Placement]], decode_cpus: float, total_cpus: float) -> None:
    """Raise `PlacementError` when the CPU-build engines and decode actors of one run ask for more CPU than
    the cluster has in all (such an engine would wait for a CPU forever: it is not held by a placement
    group with a timeout, as a GPU engine is).

    Args:
        engines: model id -> (replicas, what each replica asks); GPU engines are not counted.
        decode_cpus: The CPU the run's decode actors take.
        total_cpus: The CPU the cluster declares (every node, alive).
    """
    parts = [(mid, n, need.cpus) for mid, (n, need) in engines.items() if not need.gpus and n]
    wanted = sum(n * c for _, n, c in parts) + decode_cpus
    if not parts or wanted <= total_cpus + 1e-9:
        return
    listed = "; ".join(f"{mid}: {n} engine(s) x {c:g} CPU" for mid, n, c in parts)
    decode = f"; decode actors: {decode_cpus:g} CPU" if decode_cpus else ""
    raise PlacementError(
        f"cannot place the run's CPU engines: they need {wanted:g} CPU ({listed}{decode}) and the cluster has "
        f"{total_cpus:g} CPU in all. Lower models.N.engine.replicas (or decode.actors / decode.actor_cpus), "
        "or run on a cluster with more CPU (`--address`).")


async def place(need: Placement, what: str, timeout_s: float, detached: bool = False) -> Any:
    """Reserve `need` for one actor. Returns the placement group to run it in (None for a CPU engine,
    which is spread over the nodes instead).

    Raises `PlacementError` at once if no node could hold it, or after `timeout_s` if the resources
    exist but stay held by others. `detached`: the group outlives this driver (a warm engine's).
    """
    import ray
    from ray.util.placement_group import placement_group, remove_placement_group

    check_feasible(need, what)
    if not need.gpus:
        return None
    pg = placement_group([need.resources], strategy="STRICT_PACK", lifetime="detached" if detached else None)
    try:
        await asyncio.wait_for(asyncio.wrap_future(pg.ready().future()), timeout=timeout_s)
    except asyncio.CancelledError:  # the sweep needs no engine after all: give the GPUs back
        remove_placement_group(pg)
        raise
    except TimeoutError:
        remove_placement_group(pg)
        free = ray.available_resources().get("GPU", 0.0)
        total = ray.cluster_resources().get("GPU", 0.0)
        raise PlacementError(
            f"cannot place {what} within {timeout_s:g}s: it needs {need.gpus:g} GPU on one node; "
            f"{free:g} of {total:g} GPU are free (the rest are held by other actors or placement groups)"
        ) from None
    return pg


def actor_options(need: Placement, pg: Any) -> dict[str, Any]:
    """`ray.remote(...).options(**this)` for an actor placed by `place`."""
    if pg is None:
        return {"num_cpus": need.cpus, "num_gpus": 0, "scheduling_strategy": "SPREAD"}
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    return {"num_cpus": 0, "num_gpus": need.gpus,
            "scheduling_strategy": PlacementGroupSchedulingStrategy(pg, placement_group_bundle_index=0)}


def release(pg: Any) -> None:
    """Give a placement group's resources back (after its actor is gone); nothing to give back once the local
    cluster is gone (`cluster_lost`: asking its GCS would wait 60 s, and then Ray ends the process)."""
    if pg is None or cluster_lost() is not None:
        return
    from ray.util.placement_group import remove_placement_group

    try:
        remove_placement_group(pg)
    except Exception as err:  # noqa: BLE001 - the cluster may be gone already
        log.debug("removing a placement group failed: %s", err)
