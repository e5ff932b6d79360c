"""Engine start-up: one backend per model of a spec (vLLM in Ray actors, replica pools, HTTP clients)."""

from __future__ import annotations

import asyncio

from engine.backends.base import Backend
from engine.backends.families import get_family
from engine.backends.openai_http import OpenAIHTTPBackend
from engine.backends.pool import EnginePool
from engine.backends.tiny import resolve_model_path
from engine.backends.vllm_actor import VLLMActorBackend
from engine.runtime.cluster import ensure_ray
from engine.spec import SweepSpec

__all__ = ["start_backends"]


async def start_backends(spec: SweepSpec) -> dict[str, Backend]:
    """Start one backend per model of the spec (vLLM in a Ray actor, or an HTTP client)."""
    backends: dict[str, Backend] = {}
    for m in spec.models:
        if m.backend == "openai":
            assert m.http is not None
            backends[m.id] = OpenAIHTTPBackend(m.http, m.path)
            continue
        ensure_ray(spec.ray_address)
        path = await asyncio.to_thread(resolve_model_path, m.path)
        family_kwargs = get_family(m.family).engine_kwargs(m.max_frames)
        replicas = [VLLMActorBackend(path, m.engine, family_kwargs=family_kwargs) for _ in range(m.engine.replicas)]
        backends[m.id] = replicas[0] if len(replicas) == 1 else EnginePool(replicas)
    await asyncio.gather(*(b.start() for b in backends.values()))
    return backends
