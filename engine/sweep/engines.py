"""Engine start-up: one backend per model of a spec (vLLM in Ray actors, replica pools, HTTP clients).

A vLLM engine whose settings match a live warm engine (`framesweep engines up`) exactly is reused
(`engine.backends.warm`); otherwise a new one starts, and the log says which. Start-up is
cancel-safe: whatever was started is closed again when the caller cancels (a sweep that finds
nothing pending).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from engine.backends.base import Backend
from engine.backends.families import get_family
from engine.backends.openai_http import OpenAIHTTPBackend
from engine.backends.pool import EnginePool
from engine.backends.tiny import resolve_model_path
from engine.backends.vllm_actor import VLLMActorBackend
from engine.backends.warm import engine_key, engine_settings, list_engines, warm_name
from engine.runtime.cluster import ensure_ray
from engine.runtime.placement import Placement, check_cpu_capacity, resolve_gpus
from engine.spec import ModelSpec, SweepSpec

__all__ = ["start_backends"]

log = logging.getLogger(__name__)


async def _vllm_backend(m: ModelSpec, detached: bool) -> Backend:
    path = await asyncio.to_thread(resolve_model_path, m.path)
    family_kwargs = get_family(m.family).engine_kwargs(m.max_frames)
    key = engine_key(engine_settings(path, m.engine, family_kwargs))
    replicas = [VLLMActorBackend(path, m.engine, family_kwargs=family_kwargs, warm_name=warm_name(key, i),
                                 detached=detached) for i in range(m.engine.replicas)]
    return replicas[0] if len(replicas) == 1 else EnginePool(replicas)


def _check_capacity(spec: SweepSpec, engines_only: bool) -> None:
    """CPU engines that the cluster could never hold all at once (beside the run's decode actors, unless
    only the engines start: `engines up`) fail here, before any of them starts."""
    import ray

    engines = {m.id: (m.engine.replicas, Placement(gpus=resolve_gpus(m.engine.num_gpus, m.engine.world_size)))
               for m in spec.models if m.backend != "openai"}
    d = spec.decode
    n_decode = d.actors if d.actors is not None else (
        sum(1 for n in ray.nodes() if n.get("Alive")) if spec.ray_address else 0)
    decode_cpus = n_decode * d.actor_cpus if any(b.frames for b in spec.budgets) and not engines_only else 0.0
    check_cpu_capacity(engines, decode_cpus, ray.cluster_resources().get("CPU", 0.0))


def _log_start(model_id: str, b: Backend) -> None:
    replicas = b.replicas
    reused = [r for r in replicas if r.reused]
    if reused:
        log.info("%s: reusing %d warm engine(s) (%s)", model_id, len(reused),
                 ", ".join(str(r.warm_name) for r in reused if isinstance(r, VLLMActorBackend)))
    if len(reused) < len(replicas) and isinstance(replicas[0], VLLMActorBackend):
        what = "warm engine" if replicas[0].detached else "engine"
        log.info("%s: started %d new %s(s) (key %s)", model_id, len(replicas) - len(reused), what,
                 replicas[0].warm_name)


async def start_backends(spec: SweepSpec, *, detached: bool = False) -> dict[str, Backend]:
    """Start one backend per model of the spec (vLLM in a Ray actor, or an HTTP client).

    `detached`: the vLLM engines started are warm engines (named by their settings, outliving this
    process); live warm engines with the same settings are reused either way.
    """
    backends: dict[str, Backend] = {}
    try:
        if any(m.backend != "openai" for m in spec.models):
            await asyncio.to_thread(ensure_ray, spec.ray_address)
            await asyncio.to_thread(_check_capacity, spec, detached)
        for m in spec.models:
            if m.backend == "openai":
                assert m.http is not None
                backends[m.id] = OpenAIHTTPBackend(m.http, m.path)
            else:
                backends[m.id] = await _vllm_backend(m, detached)
        starts = [asyncio.ensure_future(b.start()) for b in backends.values()]
        try:
            await asyncio.gather(*starts)
        except BaseException:
            for t in starts:
                t.cancel()
            await asyncio.gather(*starts, return_exceptions=True)
            raise
    except BaseException:  # a failed or cancelled start leaves nothing running
        await asyncio.gather(*(b.close() for b in backends.values()), return_exceptions=True)
        raise
    for mid, b in backends.items():
        _log_start(mid, b)
        await _explain_mismatch(mid, b)
    return backends


async def _explain_mismatch(model_id: str, b: Backend) -> None:
    """A new engine started while warm engines of the same model run with other settings: say which differ."""
    first = b.replicas[0]
    if not isinstance(first, VLLMActorBackend) or first.reused or first.detached:
        return
    mine = engine_settings(first.model_path, first.engine, first.family_kwargs, first.seed)
    for other in await list_engines(timeout_s=5.0):
        theirs = other.get("settings")
        if not theirs or theirs.get("model_path") != mine["model_path"]:
            continue
        diff = _diff(mine, theirs)
        log.warning("%s: warm engine %s serves %s with other settings (%s); a new engine was started for this "
                    "run", model_id, other["name"], mine["model_path"], "; ".join(diff[:6]) or "?")


def _diff(a: dict[str, Any], b: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for k in sorted(set(a) | set(b)):
        x, y = a.get(k), b.get(k)
        if isinstance(x, dict) and isinstance(y, dict):
            out += _diff(x, y, f"{prefix}{k}.")
        elif x != y:
            out.append(f"{prefix}{k}: {y!r} there, {x!r} here")
    return out
