"""The data plane off the driver, on a real engine: while decode actors are up, no frame array is
deserialised in the driver (the meter watches everything it receives), the engine reads the frames by
reference, and the answers are those of a sweep whose frames were decoded in the driver."""

from __future__ import annotations

import asyncio
from pathlib import Path

import polars as pl
import pytest
from helpers.specs import small_spec_dict

from engine.config import parse_spec
from engine.results import ResultsDir

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)


def test_no_frame_enters_the_driver_while_decode_actors_are_up(tmp_path: Path, warm_engine: Path) -> None:
    import ray

    from engine.frames.meter import FrameMeter
    from engine.sweep import Sweep, start_backends

    d = small_spec_dict(tmp_path / "actors")
    d["decode"] = {"actors": 2, "actor_cpus": 0.25, "max_videos_in_flight": 2}
    by_actors = parse_spec(d)
    d = small_spec_dict(tmp_path / "driver")
    d["decode"] = {"actors": 0, "max_videos_in_flight": 2}
    in_driver = parse_spec(d)

    async def go():
        backends = await start_backends(by_actors)
        try:
            with FrameMeter() as meter:
                remote = await Sweep(by_actors, backends=backends).run()
            with FrameMeter() as local_meter:
                local = await Sweep(in_driver, backends=backends).run()
            return meter, remote, local_meter, local, backends["tiny"].takes_frame_refs
        finally:
            await asyncio.gather(*(b.close() for b in backends.values()))
            ray.shutdown()

    meter, remote, local_meter, local, by_ref = asyncio.run(go())
    assert by_ref, "the engine reads frames by reference"
    assert remote.jobs_ok == local.jobs_ok == 3 * 3 * 4 and len(remote.decode_workers) == 2
    assert (meter.arrays, meter.bytes) == (0, 0), "no frame array was deserialised in the driver"
    assert remote.driver_frame_bytes == 0 and remote.internode_frame_bytes == 0
    # the fallback (no decode actor): frames are decoded in the driver and counted there; nothing to deserialise
    assert local.driver_frame_bytes > 0 and local_meter.arrays == 0
    a = ResultsDir.open(tmp_path / "actors").scan().collect().sort(["item_id", "budget_id"])
    b = ResultsDir.open(tmp_path / "driver").scan().collect().sort(["item_id", "budget_id"])
    assert (a["status"] == "ok").all()
    # the same frames reached the engine either way: the same prompts, media ids and answers
    for col in ("prompt_hash", "media_uuid", "option_probs", "frame_indices", "width", "height"):
        assert a[col].to_list() == b[col].to_list(), col
    assert a.filter(pl.col("frames") > 0)["media_uuid"].is_not_null().all()
