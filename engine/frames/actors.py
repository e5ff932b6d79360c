"""CPU decode actors: videos decoded beside the engines, their frames left in Ray's object store.

`DecodePool` keeps `n` `DecodeWorker` actors, placed on the cluster's nodes in turn (node affinity,
soft: a restarted actor may land elsewhere). A video goes to an actor on the node that should
answer it: the node of its earlier rounds, else a node with an engine, the one with the fewest
videos in flight, then the least busy actor. The actor puts the decoded frames in its node's object
store and returns their facts and a reference (`engine.frames.remote`): the driver plans with the
facts and hands the engines the reference, so frames go from decoder to engine without entering
the driver.

A worker that dies (its process or its node) is restarted by Ray; the video is retried on another
worker meanwhile, and if none is left the caller decodes it itself, so decoding never stops a sweep.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.frames.base import DecodeRequest
from engine.frames.decode import decode_video
from engine.frames.remote import DecodedPart, RemoteVideo
from engine.runtime.replicas import NoReplicaError, ReplicaPool, is_actor_death, revive_actor

__all__ = ["DecodePool", "DecodeWorker"]

log = logging.getLogger(__name__)


def _node_id() -> str | None:
    try:
        import ray

        return ray.get_runtime_context().get_node_id() if ray.is_initialized() else None
    except Exception:  # noqa: BLE001 - outside Ray: no node
        return None


class DecodeWorker:
    """The actor body: `decode_video` (through the frame cache or not) in its own process."""

    def __init__(self, cache_root: str | None = None, cache_format: str = "jpeg") -> None:
        import engine as _fs  # noqa: F401  (installs the torchvision import hook in this process)
        from engine.frames.cache import FrameCache

        self.cache = FrameCache(cache_root, fmt=cache_format) if cache_root is not None else None  # type: ignore[arg-type]
        self.worker = f"{socket.gethostname()}:{os.getpid()}"
        self.node_id = _node_id()
        self.videos = 0

    def info(self) -> dict[str, Any]:
        return {"worker": self.worker, "videos": self.videos, "node_id": self.node_id}

    def decode(self, request: DecodeRequest, cached: bool = False) -> tuple[DecodedPart, Any]:
        """The video's facts for the caller, and a reference to the video itself, put in this node's object store.

        Put, not returned: Ray hands a small return value to the caller inline (into the driver's memory),
        whereas a put object always stays in the store. This actor owns it: if its process dies, the object
        is lost with it, and the engine's read says so (`FramesLostError`: the driver decodes it again)."""
        import ray

        self.videos += 1
        decoded = decode_video(request, self.cache if cached else None)
        part = DecodedPart(decoded.facts(), decoded.held(), decoded.nbytes, self.node_id, self.worker)
        return part, ray.put(decoded)


class DecodePool:
    """`n` decode actors in the cluster with dynamic dispatch; see the module docstring.

    Args:
        n: Actors to start (placed on the alive nodes in turn).
        cpus: CPUs each reserves.
        cache_root: Frame cache folder for budgets of the cached pipeline (on a filesystem every node
            sees), None when no budget is cached.
        start_timeout_s: Actors not placed by then (the cluster lacks free CPUs) are dropped with a
            warning; the sweep goes on with the rest.

    Attributes:
        engine_nodes: Nodes that run an engine (set once the engines are up): videos are decoded there first.
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
        self.engine_nodes: set[str] = set()
        self._node: dict[int, str | None] = {}  # id(actor) -> its node
        self._videos_on: Counter[str | None] = Counter()  # videos whose frames a node holds now

    def _new_actor(self, node_id: str | None = None) -> Any:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        where = NodeAffinitySchedulingStrategy(node_id, soft=True) if node_id else "SPREAD"
        return ray.remote(DecodeWorker).options(
            num_cpus=self.cpus, max_restarts=-1, max_task_retries=0, scheduling_strategy=where,
        ).remote(self.cache_root, self.cache_format)

    async def start(self) -> list[str]:
        import ray

        nodes = [n["NodeID"] for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU")] or [None]
        actors = [self._new_actor(nodes[i % len(nodes)]) for i in range(self.n)]
        ready = []
        for a, res in zip(actors, await asyncio.gather(
                *(asyncio.wait_for(a.info.remote(), self.start_timeout_s) for a in actors), return_exceptions=True)):
            if isinstance(res, BaseException):
                log.warning("a decode actor could not start (%s: %s); dropping it", type(res).__name__, res)
                ray.kill(a, no_restart=True)
            else:
                ready.append(a)
                self.workers.append(res["worker"])
                self._node[id(a)] = res.get("node_id")
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
        actor, info = await revive_actor(actor, start_new, self.revive_timeout_s, "decode actor", kill_on_timeout=True)
        self._node[id(actor)] = info.get("node_id")  # a restart may have moved it
        return actor

    def _rank(self, near: str | None) -> Callable[[Any], tuple[Any, ...]]:
        """Order of preference among healthy actors: on `near` (where the video's frames are), on an engine's
        node, on the node with the fewest videos in flight."""

        def rank(actor: Any) -> tuple[Any, ...]:
            node = self._node.get(id(actor))
            return (near is not None and node != near, bool(self.engine_nodes) and node not in self.engine_nodes,
                    self._videos_on[node])

        return rank

    async def _decode_on(self, actor: Any, args: tuple[Any, ...]) -> RemoteVideo:
        part, frames = await actor.decode.remote(*args)
        node = part.node_id
        self._videos_on[node] += 1

        def done() -> None:
            self._videos_on[node] -= 1

        return RemoteVideo(part, frames, on_release=done)

    async def decode(self, request: DecodeRequest, cached: bool = False, near: str | None = None) -> RemoteVideo | None:
        """The `request`'s video decoded by some actor (through the frame cache when `cached`), its frames left in that
        actor's node's object store (`near`: the node preferred, e.g. the one holding the video's earlier
        rounds); None when no actor is left (decode it yourself)."""
        if self._pool is None:
            raise RuntimeError("decode pool not started")
        from ray.exceptions import RayTaskError

        args = (request, cached)
        while self._pool.members:  # none healthy (all restarting): decode here rather than wait
            try:
                return await self._pool.call(lambda a: self._decode_on(a, args), rank=self._rank(near))
            except NoReplicaError:
                break
            except RayTaskError as err:  # the decode itself failed (bad media): the decoder's own error
                raise (err.cause if isinstance(err.cause, Exception) else err) from None
            except Exception as err:
                if not is_actor_death(err):
                    raise
                log.warning("%s: its decode actor died; retrying on another", request.path)
        self.local_fallbacks += 1
        return None

    async def close(self) -> None:
        import ray

        if self._pool is not None:
            members = self._pool.members
            await self._pool.close()
            for a in members:
                ray.kill(a, no_restart=True)
