"""A set of interchangeable Ray actors (engines of one model, decode workers) with dynamic dispatch.

Each call goes to the healthy member with the fewest calls in flight, so work is
handed out as members become free (no static sharding). A member whose call fails
because its actor (or its whole node) died is taken out of rotation at once and
revived in the background (Ray restarts it, or a new one is started); callers
retry on the members that are still healthy. When none is healthy, a caller waits
for a revival, and gets `NoReplicaError` once every member is lost for good.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from engine.runtime.secrets import redact

__all__ = ["EngineHungError", "NoReplicaError", "ReplicaPool", "is_actor_death", "revive_actor"]

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


class NoReplicaError(RuntimeError):
    """Every member of a pool is dead and could not be revived."""


class EngineHungError(RuntimeError):
    """An actor answered nothing within its call's deadline; it was killed for Ray to restart (a death)."""


def is_actor_death(err: BaseException) -> bool:
    """True for the errors Ray raises when an actor's process or node is gone, and for a hung actor."""
    if isinstance(err, EngineHungError):
        return True
    try:
        from ray.exceptions import ActorUnavailableError, NodeDiedError, RayActorError, WorkerCrashedError
    except ImportError:  # no Ray: nothing can be an actor death
        return False
    return isinstance(err, (RayActorError, ActorUnavailableError, NodeDiedError, WorkerCrashedError))


async def revive_actor(actor: Any, start_new: Callable[[], Awaitable[Any]], timeout_s: float,
                       what: str, kill_on_timeout: bool = False) -> tuple[Any, dict[str, Any]]:
    """After `actor` died: wait until Ray's restart answers `info()`, or, if it is dead for good, kill it
    and use `start_new()` instead. Returns the live actor and its `info()`; TimeoutError after `timeout_s`
    (with `kill_on_timeout`, the actor still waiting to restart is killed first)."""
    import ray
    from ray.exceptions import ActorDiedError, RayActorError

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            info = await asyncio.wait_for(actor.info.remote(), timeout=max(1.0, deadline - time.monotonic()))
            log.warning("%s is back (%s)", what, info.get("worker"))
            return actor, info
        except ActorDiedError:
            log.warning("%s is dead for good; starting a new one", what)
            ray.kill(actor, no_restart=True)
            actor = await start_new()
        except (TimeoutError, RayActorError):  # still restarting (or its node is gone)
            await asyncio.sleep(1.0)
    if kill_on_timeout:
        ray.kill(actor, no_restart=True)
    raise TimeoutError(f"{what} did not come back within {timeout_s:.0f}s")


class ReplicaPool(Generic[T]):
    """Dispatch calls over `members`; see the module docstring.

    Args:
        members: The actors (or backends wrapping them).
        revive: Brings a dead member back (waits for Ray's restart, or starts a new actor) and returns
            the member to use from now on; raising means the member is lost.
        name: For log messages.
        is_death: Which exceptions mean the member died (others are the caller's business).
    """

    def __init__(self, members: list[T], revive: Callable[[T], Awaitable[T]], name: str,
                 is_death: Callable[[BaseException], bool] = is_actor_death) -> None:
        self.name = name
        self._revive = revive
        self._is_death = is_death
        self._healthy: list[T] = list(members)
        self._inflight: dict[int, int] = {id(m): 0 for m in members}
        self._last_call: dict[int, int] = {}  # id(member) -> the number of its latest call
        self._calls = 0
        self._reviving: set[asyncio.Task[None]] = set()
        self._changed = asyncio.Event()
        self.lost = 0
        self.deaths = 0

    @property
    def members(self) -> list[T]:
        """The members now in rotation."""
        return list(self._healthy)

    @property
    def reviving(self) -> int:
        return len(self._reviving)

    async def wait_healthy(self) -> None:
        """Return once some member is healthy; `NoReplicaError` when none is and none is being revived."""
        while not self._healthy:
            if not self._reviving:
                raise NoReplicaError(f"{self.name}: every member died and none could be revived "
                                     f"({self.lost} lost)")
            self._changed.clear()
            await self._changed.wait()

    async def call(self, fn: Callable[[T], Awaitable[R]], rank: Callable[[T], tuple[Any, ...]] | None = None) -> R:
        """`fn(member)` on the least busy healthy member (among equals, the one called longest ago, so idle
        members take turns); a member that dies during it is revived in the background and the error is
        raised (retry with another `call`). `rank(member)`, when given, is compared first (lowest wins): a
        caller's preference, such as the node that holds a batch's frames."""
        await self.wait_healthy()
        first = rank or (lambda m: ())
        member = min(self._healthy, key=lambda m: (*first(m), self._inflight.get(id(m), 0),
                                                   self._last_call.get(id(m), -1)))
        self._calls += 1
        self._last_call[id(member)] = self._calls
        self._inflight[id(member)] = self._inflight.get(id(member), 0) + 1
        try:
            return await fn(member)
        except Exception as err:
            if self._is_death(err):
                self._down(member, err)
            raise
        finally:
            self._inflight[id(member)] -= 1

    def _down(self, member: T, err: BaseException) -> None:
        if member not in self._healthy:
            return  # another caller already saw it die
        self._healthy.remove(member)
        self.deaths += 1
        first = (redact(str(err)).splitlines() or [""])[0][:200]  # redacted before it is cut
        log.warning("%s: a member died (%s: %s); %d healthy, reviving it in the background",
                    self.name, type(err).__name__, first, len(self._healthy))
        task = asyncio.create_task(self._bring_back(member))
        self._reviving.add(task)
        task.add_done_callback(self._reviving.discard)

    async def _bring_back(self, member: T) -> None:
        try:
            new = await self._revive(member)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # noqa: BLE001 - a member that cannot come back is dropped, the rest go on
            self.lost += 1
            log.error("%s: a member could not be revived (%s: %s); continuing with %d",
                      self.name, type(err).__name__, err, len(self._healthy))
        else:
            self._inflight.setdefault(id(new), 0)
            self._healthy.append(new)
            log.warning("%s: a member is back; %d healthy", self.name, len(self._healthy))
        finally:
            self._reviving.discard(asyncio.current_task())  # type: ignore[arg-type]
            self._changed.set()

    async def close(self) -> None:
        """Stop reviving (the members themselves are closed by their owner)."""
        for t in list(self._reviving):
            t.cancel()
        await asyncio.gather(*self._reviving, return_exceptions=True)
