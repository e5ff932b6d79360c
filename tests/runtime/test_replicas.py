"""Dynamic dispatch over replicas: least busy first, a dead member out of rotation and revived.

The members are plain asyncio objects whose death is injected (a real actor death is covered by
tests/e2e/test_two_nodes.py and tests/frames/test_decode_actors.py; here the timing is controlled).
"""

from __future__ import annotations

import asyncio

import pytest

from engine.runtime.replicas import NoReplicaError, ReplicaPool


class Died(RuntimeError):
    pass


class Member:
    def __init__(self, name: str) -> None:
        self.name, self.calls, self.dead = name, 0, False

    async def work(self, delay: float = 0.02) -> str:
        self.calls += 1
        await asyncio.sleep(delay)
        if self.dead:
            raise Died(self.name)
        return self.name


def _pool(members, revive):
    return ReplicaPool(members, revive, name="test", is_death=lambda e: isinstance(e, Died))


def test_least_busy_member_gets_each_call() -> None:
    a, b, c = Member("a"), Member("b"), Member("c")

    async def go():
        pool = _pool([a, b, c], revive=lambda m: asyncio.sleep(0, m))
        return await asyncio.gather(*(pool.call(lambda m: m.work()) for _ in range(6)))

    assert sorted(asyncio.run(go())) == ["a", "a", "b", "b", "c", "c"]


def test_idle_members_take_turns_when_calls_come_one_at_a_time() -> None:
    # a sweep whose batches arrive one after another finds every member idle each time: without turns the
    # first member would answer everything and the others (a second node's engine) would sit idle
    a, b, c = Member("a"), Member("b"), Member("c")

    async def go():
        pool = _pool([a, b, c], revive=lambda m: asyncio.sleep(0, m))
        return [await pool.call(lambda m: m.work(0)) for _ in range(7)]

    assert asyncio.run(go()) == ["a", "b", "c", "a", "b", "c", "a"]


def test_dead_member_leaves_rotation_until_revived() -> None:
    a, b = Member("a"), Member("b")
    back = asyncio.Event()

    async def revive(m: Member) -> Member:
        await back.wait()
        m.dead = False
        return m

    async def go():
        pool = _pool([a, b], revive)
        a.dead = True
        with pytest.raises(Died):
            await pool.call(lambda m: m.work())  # goes to a (first of two idle members) and fails
        names = [await pool.call(lambda m: m.work()) for _ in range(3)]  # only b meanwhile
        assert pool.members == [b] and pool.reviving == 1
        back.set()
        for _ in range(50):
            if len(pool.members) == 2:
                break
            await asyncio.sleep(0.01)
        both = await asyncio.gather(*(pool.call(lambda m: m.work()) for _ in range(2)))
        return names, sorted(both), pool.deaths

    names, both, deaths = asyncio.run(go())
    assert names == ["b", "b", "b"] and both == ["a", "b"] and deaths == 1


def test_waits_for_a_revival_then_gives_up_when_all_are_lost() -> None:
    a = Member("a")

    async def revive_ok(m: Member) -> Member:
        await asyncio.sleep(0.05)
        m.dead = False
        return m

    async def revive_fail(m: Member) -> Member:
        raise TimeoutError("gone")

    async def go(revive):
        a.dead = True
        pool = _pool([a], revive)
        with pytest.raises(Died):
            await pool.call(lambda m: m.work())
        return await pool.call(lambda m: m.work())  # waits for the revival (or learns it failed)

    assert asyncio.run(go(revive_ok)) == "a"
    with pytest.raises(NoReplicaError):
        asyncio.run(go(revive_fail))


def test_a_callers_rank_comes_before_the_load() -> None:
    """A preference (e.g. the member beside a batch's frames) wins over an idler member; among equals, the load."""
    a, b, c = Member("a"), Member("b"), Member("c")
    near = {"b", "c"}

    async def go():
        pool = _pool([a, b, c], revive=lambda m: asyncio.sleep(0, m))
        busy = asyncio.create_task(pool.call(lambda m: m.work(0.1), rank=lambda m: (m.name not in near,)))
        await asyncio.sleep(0.01)
        second = await pool.call(lambda m: m.work(), rank=lambda m: (m.name not in near,))
        return await busy, second

    assert asyncio.run(go()) == ("b", "c")  # both near ones, the idle one second; never the idle far one
    assert a.calls == 0
