"""Warm engines: named, detached engine actors that outlive a run, found again by their settings.

An engine's key is a hash of everything that makes it answer the way it does: the model path,
the fingerprint of a local checkpoint's content (`engine.runtime.checkpoint`: the bytes of every
file that shapes an answer, weights included: a checkpoint edited or rebuilt at the same path is
another engine, an untouched one keeps its engine), every engine
setting of the spec (except `replicas`, the number of such engines), the model family's engine
arguments, the seed, and the code of the actor itself (`vllm_actor.py`, `vllm_args.py`,
`vllm_supervisor.py`: a warm engine started by other code is not the same engine). A run reuses a
live engine only when the key matches exactly; anything else starts a new one, and the log says which and why.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from engine.config import EngineSpec
from engine.runtime.atomic import file_sha256
from engine.runtime.checkpoint import checkpoint_fingerprint
from engine.runtime.secrets import redact

__all__ = ["NAMESPACE", "WarmEngineStoppedError", "checkpoint_fingerprint", "engine_key", "engine_settings",
           "engines_down", "find_engine", "join_engines_cluster", "list_engines", "stop_engines", "warm_name"]

log = logging.getLogger(__name__)

NAMESPACE = "framesweep"
"""The Ray namespace of warm engines."""


class WarmEngineStoppedError(RuntimeError):
    """A warm engine a run was using was stopped (`framesweep engines down`) while the run used it: the run
    ends (committed rows are kept) rather than start an engine of its own on a cluster going down."""

    def __init__(self, name: str) -> None:
        super().__init__(f"the warm engine {name} was stopped (`framesweep engines down`?) while the run used it; "
                         "committed rows are kept; rerun to continue")
        self.name = name
_PREFIX = "fs-engine-"
_CODE = [Path(__file__).with_name(name) for name in ("vllm_actor.py", "vllm_args.py", "vllm_supervisor.py")]
"""The engine actor's code (its body, its `vllm.LLM` arguments, its process watch): part of every engine's key."""


def engine_settings(model_path: str | Path, engine: EngineSpec, family_kwargs: dict[str, Any] | None,
                    seed: int = 0) -> dict[str, Any]:
    """What an engine's key is made of (also what `framesweep engines` lists).

    A local checkpoint folder adds its content fingerprint (`checkpoint_fingerprint`): a checkpoint whose
    config, processor, tokenizer, chat template, generation config or weights changed at the same path is
    another engine."""
    path = Path(model_path).expanduser().resolve()
    settings: dict[str, Any] = {
        "model_path": str(path),
        "engine": engine.model_dump(mode="json", exclude={"replicas"}),
        "family_kwargs": json.loads(json.dumps(family_kwargs or {}, sort_keys=True, default=str)),
        "seed": seed,
        "code": hashlib.sha256("".join(file_sha256(f) for f in _CODE).encode()).hexdigest()[:12],
    }
    if (fingerprint := checkpoint_fingerprint(path)) is not None:
        settings["checkpoint"] = fingerprint[:16]
    return settings


def engine_key(settings: dict[str, Any]) -> str:
    """The key of an engine with these settings (`engine_settings`)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


def warm_name(key: str, replica: int = 0) -> str:
    """The actor name of replica `replica` of the warm engine with key `key`."""
    return f"{_PREFIX}{key}-r{replica}"


def find_engine(name: str) -> Any | None:
    """The live named engine actor `name` in the connected cluster, or None."""
    import ray

    try:
        return ray.get_actor(name, namespace=NAMESPACE)
    except ValueError:
        return None


def _names() -> list[str]:
    import ray.util

    return sorted(a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                  if a.get("namespace") == NAMESPACE and a["name"].startswith(_PREFIX))


async def list_engines(timeout_s: float = 30.0) -> list[dict[str, Any]]:
    """Every warm engine of the connected cluster: name, key, settings, engine facts and memory
    (an engine that does not answer within `timeout_s`, e.g. still starting, is listed with its error)."""
    import ray

    async def one(name: str) -> dict[str, Any]:
        actor = find_engine(name)
        if actor is None:
            return {"name": name, "error": "gone"}
        try:
            return {"name": name, **await asyncio.wait_for(actor.describe.remote(), timeout_s)}
        except (TimeoutError, ray.exceptions.RayError) as err:
            return {"name": name, "error": redact(f"{type(err).__name__}: {err}")[:300]}

    return list(await asyncio.gather(*(one(n) for n in _names())))


def stop_engines(timeout_s: float = 10.0) -> list[str]:
    """Kill every warm engine of the connected cluster (and give its GPUs back); the names stopped."""
    import ray
    from ray.util.placement_group import remove_placement_group

    stopped = []
    for name in _names():
        actor = find_engine(name)
        if actor is None:
            continue
        try:  # a GPU engine runs in a placement group of its own, which outlives the actor unless removed
            pg = ray.get(actor.placement_group.remote(), timeout=timeout_s)
        except Exception:  # noqa: BLE001 - a hung or dying engine: kill it all the same
            pg = None
        ray.kill(actor, no_restart=True)
        if pg is not None:
            remove_placement_group(pg)
        stopped.append(name)
    return stopped


def join_engines_cluster(address: str | None = None) -> bool:
    """Join the warm engines' cluster (`address`, else the recorded local one); False when there is none
    to join (nothing was started)."""
    from engine.runtime.cluster import ensure_ray
    from engine.runtime.local_cluster import recorded_cluster

    if address is None and recorded_cluster() is None:
        return False
    ensure_ray(address)
    return True


def engines_down(address: str | None = None, *, keep_cluster: bool = False) -> tuple[list[str] | None, int]:
    """`framesweep engines down`: stop every warm engine of the cluster at `address` (else of the recorded
    local cluster), then, unless `keep_cluster` or `address` is given, that local cluster and any other local
    cluster framesweep started without a record (the engines first: the cluster then stops in seconds rather
    than after its kill timeout).

    Returns the names stopped (None: no cluster to join) and how many local clusters were stopped.
    """
    import ray

    from engine.runtime.local_cluster import stop_local_cluster, unrecorded_clusters

    local = address is None and not keep_cluster
    if not join_engines_cluster(address):
        return None, stop_local_cluster() if local and unrecorded_clusters() else 0
    stopped = stop_engines()
    if not local:
        return stopped, 0
    ray.shutdown()
    return stopped, stop_local_cluster()
