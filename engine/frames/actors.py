"""CPU decode actors: videos decoded anywhere in the Ray cluster, frames returned through the object store.

`DecodePool` keeps `n` `DecodeWorker` actors spread over the nodes. Each video goes
to the least busy one; its `DecodedVideo` (numpy frames) comes back through Ray's
object store (zero-copy on the driver's node). A worker that dies (its process or
its node) is restarted by Ray; the video is retried on another worker meanwhile,
and if none is left the caller decodes it itself, so decoding never stops a sweep.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from engine.frames.video import DecodedVideo
from engine.runtime.replicas import NoReplicaError, ReplicaPool, is_actor_death, revive_actor

__all__ = ["DecodePool", "DecodeWorker"]

log = logging.getLogger(__name__)


class DecodeWorker:
    """The actor body: `decode_union` (or the frame cache) in its own process."""

    def __init__(self, cache_root: str | None = None, cache_format: str = "jpeg") -> None:
        import engine as _fs  # noqa: F401  (installs the torchvision import hook in this process)
        from engine.frames.cache import FrameCache

        self.cache = FrameCache(cache_root, fmt=cache_format) if cache_root is not None else None  # type: ignore[arg-type]
        self.worker = f"{socket.gethostname()}:{os.getpid()}"
        self.videos = 0

    def info(self) -> dict[str, Any]:
        return {"worker": self.worker, "videos": self.videos}

    def decode(self, path: str, indices: np.ndarray, decoder: str, size: tuple[int, int] | None,
               also: Mapping[tuple[int, int], np.ndarray] | None, cached: bool = False) -> DecodedVideo:
        from engine.frames.cache import decode_video

        self.videos += 1
        return decode_video(self.cache if cached else None, path, indices, decoder, size, also)


class DecodePool:
    """`n` decode actors in the cluster with dynamic dispatch; see the module docstring.

    Args:
        n: Actors to start (spread over nodes).
        cpus: CPUs each reserves.
        cache_root: Frame cache folder for budgets of the cached pipeline (on a filesystem every node
            sees), None when no budget is cached.
        start_timeout_s: Actors not placed by then (the cluster lacks free CPUs) are dropped with a
            warning; the sweep goes on with the rest.
    """

    def __init__(self, n: int, cpus: float = 1.0, cache_root: Path | str | None = None, cache_format: str = "jpeg",
                 start_timeout_s: float = 120.0, revive_timeout_s: float = 300.0) -> None:
        self.n = n
        self.cpus = cpus
        self.cache_root = str(cache_root) if cache_root is not None else None
        self.cache_format = cache_format
        self.start_timeout_s = start_timeout_s
        self.revive_timeout_s = revive_timeout_s
        self._pool: ReplicaPool[Any] | None = None
        self.workers: list[str] = []
        self.local_fallbacks = 0

    def _new_actor(self) -> Any:
        import ray

        return ray.remote(DecodeWorker).options(
            num_cpus=self.cpus, max_restarts=-1, max_task_retries=0, scheduling_strategy="SPREAD",
        ).remote(self.cache_root, self.cache_format)

    async def start(self) -> list[str]:
        import ray

        actors = [self._new_actor() for _ in range(self.n)]
        ready = []
        for a, res in zip(actors, await asyncio.gather(
                *(asyncio.wait_for(a.info.remote(), self.start_timeout_s) for a in actors), return_exceptions=True)):
            if isinstance(res, BaseException):
                log.warning("a decode actor could not start (%s: %s); dropping it", type(res).__name__, res)
                ray.kill(a, no_restart=True)
            else:
                ready.append(a)
                self.workers.append(res["worker"])
        if not ready:
            log.warning("no decode actor could start; videos are decoded in this process")
        self._pool = ReplicaPool(ready, self._revive, name="decode actors")
        return list(self.workers)

    @property
    def healthy(self) -> int:
        return len(self._pool.members) if self._pool is not None else 0

    async def _revive(self, actor: Any) -> Any:
        """Wait for Ray's restart of the actor; start a new one if it is gone for good."""

        async def start_new() -> Any:
            return self._new_actor()

        # an actor that does not come back is killed rather than left waiting for resources in the cluster
        return (await revive_actor(actor, start_new, self.revive_timeout_s, "decode actor", kill_on_timeout=True))[0]

    async def decode(self, path: Path | str, indices: np.ndarray, decoder: str, size: tuple[int, int] | None,
                     also: Mapping[tuple[int, int], np.ndarray] | None, cached: bool = False) -> DecodedVideo | None:
        """The decoded video from some actor (through the frame cache when `cached`); None when no actor
        is left (decode it yourself)."""
        if self._pool is None:
            raise RuntimeError("decode pool not started")
        from ray.exceptions import RayTaskError

        while self._pool.members:  # none healthy (all restarting): decode here rather than wait
            try:
                return await self._pool.call(lambda a: a.decode.remote(str(path), indices, decoder, size, also, cached))
            except NoReplicaError:
                break
            except RayTaskError as err:  # the decode itself failed (bad media): the decoder's own error
                raise (err.cause if isinstance(err.cause, Exception) else err) from None
            except Exception as err:
                if not is_actor_death(err):
                    raise
                log.warning("%s: its decode actor died; retrying on another", path)
        self.local_fallbacks += 1
        return None

    async def close(self) -> None:
        import ray

        if self._pool is not None:
            members = self._pool.members
            await self._pool.close()
            for a in members:
                ray.kill(a, no_restart=True)
