"""A video whose rounds were decoded partly on a decode actor and partly in the driver (no actor was left) is held as
one kind (`engine.frames.held`): the pass decoded here is put in the object store and joins the actor's by reference,
so no pixel of the store is fetched into the driver to join them, and an engine reads both rounds' frames.

The decode pool is the real one (Ray, a real actor) except that on the chosen passes it says no actor is left: the
state a pool is in while every actor died and none is back yet, which a live pool cannot be put in on demand."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.specs import small_spec_dict

from engine.config import parse_spec
from engine.datasets import load_items
from engine.frames.actors import DecodePool
from engine.frames.decode import DecodeRequest, decode_video
from engine.frames.meter import FrameMeter
from engine.frames.remote import FrameResolver, RemoteVideo
from engine.frames.view import FrameRef
from engine.sweep.decoding import Decoding
from engine.sweep.policy import GridPolicy

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)


class NoneLeftOn(DecodePool):
    """The real pool, except that on the passes numbered in `gone` (0: the first) no actor is left."""

    def __init__(self, gone: set[int]) -> None:
        super().__init__(1, cpus=0.25)
        self.gone = gone
        self.passes = 0

    async def decode(self, request: DecodeRequest, cached: bool = False, near: str | None = None) -> Any:
        n, self.passes = self.passes, self.passes + 1
        if n in self.gone:
            self.local_fallbacks += 1
            return None
        return await super().decode(request, cached, near)


@pytest.fixture(scope="module")
def ray_local():
    import ray

    from engine.runtime.cluster import ensure_ray

    ensure_ray(num_cpus=2)
    yield ray
    ray.shutdown()


@pytest.mark.parametrize("here", [1, 0], ids=["actor-then-driver", "driver-then-actor"])
def test_rounds_from_an_actor_and_the_driver_join_without_fetching_pixels(tmp_path: Path, ray_local: Any,
                                                                          here: int) -> None:
    ray = ray_local
    d = small_spec_dict(tmp_path / "out")
    d["dataset"]["n_videos"] = 1
    d["budgets"] = [{"frames": 2}, {"frames": 4}]
    spec = parse_spec(d)
    _, items = load_items(spec.dataset_specs()[0])
    (jobs,) = GridPolicy().plan(spec, items, set()).values()
    rounds = [[j for j in jobs if j.budget.frames == n] for n in (2, 4)]

    async def go() -> tuple[Any, ...]:
        decoding = Decoding(spec, None, ThreadPoolExecutor(2))
        pool = NoneLeftOn({here})
        assert await pool.start()
        decoding.pool = pool
        held: dict[str, Any] = {}
        with FrameMeter() as meter:
            plans = [(await decoding.round(r, held))[1] for r in rounds]
            video = held["raw"]
            size = (video.info.width, video.info.height)
            union = np.unique(np.concatenate([p.indices for ps in plans for p in ps.values()]))
            ref, jpeg = video.budget(union, size, by_ref=True)
            facts = (meter.arrays, meter.bytes, video.fetched_bytes, decoding.calls, pool.local_fallbacks)
        read = ray.remote(lambda r: np.array(FrameResolver(None)(r))).options(num_cpus=0.1)
        got = await read.remote(ref)  # an engine's read, in another process (the test's own copy of the frames)
        video.release()
        await decoding.close()
        return video, ref, jpeg, union, got, facts

    video, ref, jpeg, union, got, (arrays, nbytes, fetched, calls, fallbacks) = asyncio.run(go())
    assert (calls, fallbacks) == (2, 1), "one pass on the actor, one in the driver"
    assert isinstance(video, RemoteVideo), "the run's decode actors hold every video in the store"
    assert (arrays, nbytes, fetched) == (0, 0, 0), "no pixel of the store entered the driver to join the rounds"
    assert isinstance(ref, FrameRef) and len(ref.parts) == 2 and jpeg is None, "both rounds, by reference"
    item = rounds[0][0].item
    local = decode_video(DecodeRequest(item.video_path, union, video.decoder))
    assert np.array_equal(got, local.view(union)), "the engine reads both rounds' frames, in order"
