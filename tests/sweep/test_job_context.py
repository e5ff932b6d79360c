"""A job's context (`engine.sweep.rows.JobContext`) is immutable and built by keyword in one place, the request
step's `RequestBuilder.context`; sending it (`sent`) and retrying it after its engine died (`retried`) give new ones
and leave the old one as it was."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from helpers.specs import small_spec_dict
from helpers.sure_results import SureEngine

from engine.backends.base import EngineRequest, EngineResult
from engine.backends.coalesce import CoalescingBackend
from engine.config import parse_spec
from engine.datasets import load_items
from engine.frames.decode import DecodeRequest, decode_video, get_decoder
from engine.sweep.decoding import pkey, plan_each
from engine.sweep.policy import GridPolicy
from engine.sweep.requests import RequestBuilder
from engine.sweep.retry import generate_with_retries
from engine.sweep.rows import JobContext

ENGINE = Path(__file__).resolve().parents[2] / "engine"


def _builder_and_jobs(tmp_path: Path) -> tuple[RequestBuilder, list]:
    d = small_spec_dict(tmp_path / "out")
    d["dataset"]["n_videos"] = 1
    spec = parse_spec(d)
    _, items = load_items(spec.dataset_specs()[0])
    (jobs,) = GridPolicy().plan(spec, items, set()).values()
    return RequestBuilder(spec), jobs


def test_a_context_cannot_be_patched_nor_built_by_position(tmp_path: Path) -> None:
    builder, jobs = _builder_and_jobs(tmp_path)
    ctx = builder.context(jobs[0], None, None)
    for field, value in [("attempt", 2), ("width", 64), ("request", EngineRequest("r", "Q?")), ("pipeline", "x")]:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(ctx, field, value)
    with pytest.raises(TypeError):
        JobContext(jobs[0], "qwen2_5_vl", np.empty(0, np.int64), 1)  # type: ignore[misc]


def test_the_request_step_builds_each_context_whole(tmp_path: Path) -> None:
    """What used to be patched in after construction (the frames' size, the video's facts, the pipeline, the
    fingerprint) is in the context as built."""
    builder, jobs = _builder_and_jobs(tmp_path)
    job = next(j for j in jobs if j.budget.frames == 4)
    text = next(j for j in jobs if j.budget.is_text_only)
    info = get_decoder("pyav").probe(job.item.video_path)
    plans, _ = plan_each([job], info.n_frames, info.fps)
    plan = plans[pkey(job)]
    video = decode_video(DecodeRequest(job.item.video_path, plan.indices, "pyav"))
    ctx = builder.context(job, video, plan)
    assert np.array_equal(ctx.indices, plan.indices) and ctx.indices.size == 4
    assert (ctx.attempt, ctx.width, ctx.height, ctx.pipeline, ctx.repeated) == (1, 96, 64, "raw", False)
    assert (ctx.decode_s, ctx.video_frames) == (video.decode_s, video.info.n_frames) and ctx.request is None
    assert builder.context(job, video, plan, attempt=3).attempt == 3
    bare = builder.context(text, None, None)
    assert (bare.width, bare.decode_s, bare.indices.size, bare.pipeline, bare.repeated) == (None, None, 0, "raw", None)


def test_contexts_are_constructed_only_by_the_request_step() -> None:
    calls = []
    for path in sorted(ENGINE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "JobContext":
                calls.append((str(path.relative_to(ENGINE)), [a for a in node.args]))
    assert [p for p, _ in calls] == ["sweep/requests.py"] and calls[0][1] == [], "one keyword-built construction"


class DiesOnce(SureEngine):
    """Answers "A", but its first call raises as a dead engine's does: the fault a live engine cannot show on
    demand (tests/sweep/test_engine_faults.py kills a real one)."""

    def __init__(self) -> None:
        self.calls = 0
        self.recovered = 0

    async def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("engine core died")
        return await super().generate(requests)

    async def recover(self) -> None:
        self.recovered += 1


def test_a_retried_batch_is_sent_on_new_contexts_and_the_first_ones_stay(tmp_path: Path) -> None:
    builder, jobs = _builder_and_jobs(tmp_path)
    text = [j for j in jobs if j.budget.is_text_only]
    ready, failed = builder.build("tiny", [builder.context(j, None, None) for j in text], {}, by_ref=False)
    assert failed == [] and all(c.request is not None for c in ready)
    engine = DiesOnce()
    sent, results = asyncio.run(generate_with_retries(engine, CoalescingBackend(engine), ready, 3,
                                                      lambda: False, "tiny"))
    assert not isinstance(results, BaseException) and [r.text for r in results] == ["A"] * len(text)
    assert [c.attempt for c in sent] == [2] * len(text) and [c.attempt for c in ready] == [1] * len(text)
    assert [c.request for c in sent] == [c.request for c in ready] and (engine.calls, engine.recovered) == (2, 1)
