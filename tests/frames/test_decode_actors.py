"""CPU decode actors: frames come back through Ray's object store, equal to a local decode; a killed
actor is restarted by Ray while its videos go to the others; bad media keeps the decoder's message."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from engine.frames.actors import DecodePool
from engine.frames.base import DecodeError
from engine.frames.decode import decode_union

ASSETS = Path(__file__).resolve().parents[1] / "assets"


@pytest.fixture(scope="module")
def ray_local():
    import ray

    from engine.runtime.cluster import ensure_ray

    ensure_ray(num_cpus=2)
    yield ray
    ray.shutdown()


def test_decode_actors_match_local_decode_and_survive_a_kill(ray_local) -> None:
    ray = ray_local
    video = ASSETS / "tiny.mp4"
    idx = np.array([0, 3, 7, 11], dtype=np.int64)
    also = {(32, 24): np.array([0, 7], dtype=np.int64)}
    local = decode_union(video, idx, "pyav", None, also)

    async def go():
        pool = DecodePool(2, cpus=0.25, revive_timeout_s=120)
        workers = await pool.start()
        assert len(workers) == 2 and len(set(workers)) == 2
        first = await pool.decode(video, idx, "pyav", None, also)
        victim = pool._pool.members[0]
        ray.kill(victim, no_restart=False)  # the actor process dies; Ray restarts it
        after = [await pool.decode(video, idx, "pyav", None, also) for _ in range(4)]
        deaths = pool._pool.deaths
        for _ in range(240):  # the restarted actor comes back into rotation
            if pool.healthy == 2:
                break
            await asyncio.sleep(0.5)
        healthy = pool.healthy
        with pytest.raises(DecodeError) as bad:
            await pool.decode(ASSETS / "truncated.mp4", idx, "pyav", None, None)
        await pool.close()
        return first, after, deaths, healthy, pool.local_fallbacks, bad.value

    first, after, deaths, healthy, fallbacks, bad = asyncio.run(go())
    for got in (first, *after):
        assert np.array_equal(got.indices, local.indices) and np.array_equal(got.frames, local.frames)
        assert np.array_equal(got.view(also[(32, 24)], (32, 24)), local.view(also[(32, 24)], (32, 24)))
        assert np.allclose(got.timestamps, local.timestamps)
    assert deaths == 1, "the killed actor was noticed once and taken out of rotation"
    assert healthy == 2, "Ray restarted the killed actor and it was put back into rotation"
    assert fallbacks == 0, "the other actor took the videos meanwhile"
    assert "truncated.mp4" in str(bad) and "ray::" not in str(bad)
