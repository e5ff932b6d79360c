"""Several engine actors for one model, used as one backend (dynamic dispatch, retry elsewhere)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from engine.backends.base import BackendBase, EngineRequest, EngineResult, frames_node
from engine.backends.vllm_actor import VLLMActorBackend
from engine.runtime.replicas import ReplicaPool

__all__ = ["EnginePool"]


class EnginePool(BackendBase):
    """`Backend` over `VLLMActorBackend` replicas of one model.

    Each batch goes to a healthy replica on the node that holds its frames (by reference) if there
    is one, else (and among those) to the least busy. A replica whose actor or node dies raises to the
    scheduler (which counts the attempt and retries); the retry goes to a healthy replica while the
    dead one is revived in the background.
    """

    name = "vllm"

    def __init__(self, replicas: list[VLLMActorBackend], recover_timeout_s: float = 600.0) -> None:
        if not replicas:
            raise ValueError("an engine pool needs at least one replica")
        self.replicas = replicas
        self.recover_timeout_s = recover_timeout_s
        self.info: dict[str, Any] = {}
        self._pool: ReplicaPool[VLLMActorBackend] | None = None

    @property
    def concurrency(self) -> int:
        """Batches worth sending at once (one per replica)."""
        return len(self.replicas)

    @property
    def takes_frame_refs(self) -> bool:
        return all(r.takes_frame_refs for r in self.replicas)

    async def start(self) -> dict[str, Any]:
        started = await asyncio.gather(*(r.start() for r in self.replicas), return_exceptions=True)
        failed = [r for r in started if isinstance(r, BaseException)]
        if failed:  # the replicas that came up are closed: their GPUs go back before the error is raised
            await asyncio.gather(*(r.close() for r in self.replicas), return_exceptions=True)
            raise failed[0]
        infos: list[dict[str, Any]] = list(started)  # type: ignore[arg-type]
        self._pool = ReplicaPool(list(self.replicas), self._revive, name=f"engines of {self.replicas[0].model_path}")
        self.info = {**infos[0], "replicas": list(infos)}
        return self.info

    async def _revive(self, replica: VLLMActorBackend) -> VLLMActorBackend:
        await replica.recover(self.recover_timeout_s)
        return replica

    async def recover(self, timeout_s: float | None = None) -> None:
        """Return once some replica can take work (at once while any is healthy)."""
        if self._pool is None:
            raise RuntimeError("engine pool not started")
        await asyncio.wait_for(self._pool.wait_healthy(), timeout=timeout_s or self.recover_timeout_s)

    async def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        if self._pool is None:
            raise RuntimeError("engine pool not started")
        reqs = list(requests)
        node = frames_node(reqs)
        near = (lambda r: (r.node_id != node,)) if node is not None else None
        return await self._pool.call(lambda r: r.generate(reqs), rank=near)

    async def reset_caches(self) -> int:
        """Empty every replica's caches; returns the resets summed over the replicas."""
        return sum(await asyncio.gather(*(r.reset_caches() for r in self.replicas)))

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
        await asyncio.gather(*(r.close() for r in self.replicas), return_exceptions=True)
