"""CPU decode actors: frames stay in Ray's object store (the driver gets their facts and deserialises no
frame), equal to a local decode when read; a killed actor is restarted by Ray while its videos go to
the others; bad media keeps the decoder's message. An engine-side reader takes each budget's view from
the stored video where it runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from engine.frames.actors import DecodePool
from engine.frames.base import DecodeError
from engine.frames.decode import DecodeRequest, decode_video
from engine.frames.remote import FrameResolver, FramesLostError

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)

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
    local = decode_video(DecodeRequest(video, idx, "pyav", None, also))

    async def go():
        pool = DecodePool(2, cpus=0.25, revive_timeout_s=120)
        workers = await pool.start()
        assert len(workers) == 2 and len(set(workers)) == 2
        first = await pool.decode(DecodeRequest(video, idx, "pyav", None, also))
        victim = pool._pool.members[0]  # the one that decoded `first` (the first in rotation)
        ray.kill(victim, no_restart=False)  # the actor process dies; Ray restarts it
        after = [await pool.decode(DecodeRequest(video, idx, "pyav", None, also)) for _ in range(4)]
        for v in after:
            v.fetch()  # read here for the comparison (counted as frames entering this process)
        with pytest.raises(FramesLostError):  # the frames it put in the store died with it: decode them again
            FrameResolver(None, timeout_s=30)(first.frames(idx, (first.info.width, first.info.height)))
        deaths = pool._pool.deaths
        for _ in range(240):  # the restarted actor comes back into rotation
            if pool.healthy == 2:
                break
            await asyncio.sleep(0.5)
        healthy = pool.healthy
        with pytest.raises(DecodeError) as bad:
            await pool.decode(DecodeRequest(ASSETS / "truncated.mp4", idx))
        await pool.close()
        return after, deaths, healthy, pool.local_fallbacks, bad.value

    after, deaths, healthy, fallbacks, bad = asyncio.run(go())
    for remote in after:
        got = remote.fetch()
        assert remote.fetched_bytes == got.nbytes > 0
        assert np.array_equal(got.indices, local.indices) and np.array_equal(got.frames, local.frames)
        assert np.array_equal(got.view(also[(32, 24)], (32, 24)), local.view(also[(32, 24)], (32, 24)))
        assert np.allclose(got.timestamps, local.timestamps)
    assert deaths == 1, "the killed actor was noticed once and taken out of rotation"
    assert healthy == 2, "Ray restarted the killed actor and it was put back into rotation"
    assert fallbacks == 0, "the other actor took the videos meanwhile"
    assert "truncated.mp4" in str(bad) and "ray::" not in str(bad)


def test_frames_stay_in_the_store_and_each_budget_is_read_where_the_engine_runs(ray_local) -> None:
    from engine.frames.meter import FrameMeter

    ray = ray_local
    video = ASSETS / "tiny.mp4"
    small = (32, 24)
    first_idx = np.array([0, 4, 8], dtype=np.int64)
    later_idx = np.array([2, 6], dtype=np.int64)  # an adaptive round's new frames: a second part

    class Engine:
        """An engine's stand-in (defined here, so Ray ships it by value): reads frame references where it runs,
        as the vLLM worker does."""

        def read(self, refs: list) -> tuple[list[np.ndarray], int]:
            resolver = FrameResolver(ray.get_runtime_context().get_node_id())
            return [np.array(resolver(r)) for r in refs], resolver.pulled_bytes

    async def go():
        pool = DecodePool(1, cpus=0.25)
        await pool.start()
        with FrameMeter() as meter:
            remote = await pool.decode(DecodeRequest(video, first_idx, "pyav", None, {small: first_idx[:2]}))
            later = await pool.decode(DecodeRequest(video, later_idx), near=remote.node_id)
            remote.absorb(later)
            refs = [remote.frames(np.array([0, 2, 4, 6, 8]), (remote.info.width, remote.info.height)),
                    remote.frames(first_idx[:2], small)]
            refs.append(refs[0][3])  # one frame of the stack (an image-per-frame family's packing)
            engine = ray.remote(Engine).options(num_cpus=0.1).remote()
            answer = engine.read.remote(refs)
            await asyncio.to_thread(ray.wait, [answer], fetch_local=False)  # the engine has read them
        got, pulled = await answer  # the test's own copy of what the engine read (frames, on purpose)
        facts = (meter.arrays, meter.bytes, remote.fetched_bytes, remote.node_id, pool.healthy)
        remote.release()
        with pytest.raises(RuntimeError):
            remote.frames(first_idx, small)  # released: nothing more is handed out
        await pool.close()
        return refs, got, pulled, facts

    refs, got, pulled, (arrays, nbytes, driver_bytes, node, healthy) = asyncio.run(go())
    assert (arrays, nbytes, driver_bytes) == (0, 0, 0), "no frame was deserialised in (or kept by) the driver"
    assert node == ray.get_runtime_context().get_node_id() and healthy == 1
    local = decode_video(DecodeRequest(video, np.array([0, 2, 4, 6, 8]), "pyav", None, {small: first_idx[:2]}))
    assert np.array_equal(got[0], local.view(np.array([0, 2, 4, 6, 8])))  # frames of both parts, in order
    assert np.array_equal(got[1], local.view(first_idx[:2], small))
    assert np.array_equal(got[2], local.view(np.array([6]))[0]) and got[2].shape == refs[2].shape
    assert refs[0].shape == got[0].shape and len(refs[0]) == 5
    assert pulled == 0, "one node: nothing crossed between nodes"
