"""The media plane inside the scheduler (a fake engine): one decode per video, bad media -> error rows."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from helpers.specs import small_spec_dict

from engine.backends.base import BackendBase, EngineRequest, EngineResult
from engine.config import parse_spec
from engine.datasets.synthetic import SyntheticBenchmark
from engine.frames.decode import DECODE_CALLS
from engine.results import ResultsDir
from engine.sweep import Sweep


class FakeEngine(BackendBase):
    """Answers "A" with certainty; records the frames it was sent."""

    name = "fake"

    def __init__(self) -> None:
        self.frames: list[np.ndarray | None] = []

    async def start(self) -> dict[str, Any]:
        return {}

    async def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        self.frames += [r.video for r in requests]
        return [EngineResult(r.request_id, text="A", letter_logprobs={"A": 0.0}) for r in requests]

    async def close(self) -> None:
        pass


def test_sweep_decodes_each_video_once_and_turns_bad_media_into_error_rows(tmp_path: Path) -> None:
    data = small_spec_dict(tmp_path / "out")
    data["dataset"]["root"] = str(tmp_path / "videos")
    data["budgets"] = [{"frames": 0}, {"frames": 2}, {"frames": 8, "max_pixels": 1536}, {"frames": 8}]
    spec = parse_spec(data)
    bench = SyntheticBenchmark(spec.dataset)  # type: ignore[arg-type]
    bench.ensure_videos()
    scripts = bench.scripts()
    broken = bench.root / f"{scripts[1].video_id}.mp4"
    broken.write_bytes(broken.read_bytes()[:2000])  # truncated: unreadable
    engine = FakeEngine()
    before = dict(DECODE_CALLS)
    summary = asyncio.run(Sweep(spec, backends={"tiny": engine}).run())
    calls = {k: v - before.get(k, 0) for k, v in DECODE_CALLS.items() if v - before.get(k, 0)}
    assert sorted(calls.values()) == [1, 1]  # one pass per good video; the broken one fails in the probe
    rows = ResultsDir.open(tmp_path / "out").scan().collect()
    bad = rows.filter(pl.col("video_id") == scripts[1].video_id)
    visual = bad.filter(pl.col("frames") > 0)
    assert visual.height == 3 * 3 and set(visual["status"]) == {"error"}
    assert set(visual["error_type"]) == {"DecodeError"}
    assert "Invalid data" in visual["error"][0]  # the decoder's own message
    assert set(bad.filter(pl.col("frames") == 0)["status"]) == {"ok"}  # text-only needs no media
    good = rows.filter(pl.col("video_id") != scripts[1].video_id)
    assert set(good["status"]) == {"ok"} and good.height == 2 * 3 * 4
    assert summary.jobs_ok == 24 + 3 and summary.jobs_failed == 9
    sizes = {f.shape[1:3] for f in engine.frames if f is not None}
    assert sizes == {(64, 96), (32, 48)}


def test_a_planning_error_fails_only_its_own_budget(tmp_path: Path) -> None:
    """A policy that cannot plan a video (here one registered by the test, failing on every video as
    `fps@inf` did before validation caught it) turns only its own budget's jobs into error rows."""
    from engine.frames.plan import POLICIES, register_policy

    @register_policy("test_divides_by_zero", "cap")
    def boom(n_frames: int, fps: float, budget: int, seed: int, param: float | None = None) -> np.ndarray:
        return np.arange(0, n_frames, 1 / 0)

    try:
        data = small_spec_dict(tmp_path / "out")
        data["budgets"] = [{"frames": 0}, {"frames": 2}, {"frames": 4, "policy": "test_divides_by_zero"}]
        summary = asyncio.run(Sweep(parse_spec(data), backends={"tiny": FakeEngine()}).run())
    finally:
        POLICIES.unregister("test_divides_by_zero")
    rows = ResultsDir.open(tmp_path / "out").scan().collect()
    assert rows.height == 3 * 3 * 3 and summary.jobs_failed == 9
    bad = rows.filter(pl.col("budget_id") == "f4-test_divides_by_zero")
    assert set(bad["status"]) == {"error"} and set(bad["error_type"]) == {"ZeroDivisionError"}
    assert all(e.startswith("frame plan: ") for e in bad["error"])
    good = rows.filter(pl.col("budget_id") != "f4-test_divides_by_zero")
    assert good.height == 18 and set(good["status"]) == {"ok"}
    assert set(good.filter(pl.col("budget_id") == "f2")["frames_sent"]) == {2}


class NoLogprobEngine(FakeEngine):
    """Answers text but no option-letter log-probabilities (an engine or server that dropped them)."""

    async def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        return [EngineResult(r.request_id, text="B") for r in requests]


def test_letter_scoring_without_a_distribution_is_an_error_row(tmp_path: Path) -> None:
    data = small_spec_dict(tmp_path / "out")
    data["budgets"] = [{"frames": 0}, {"frames": 2}]
    summary = asyncio.run(Sweep(parse_spec(data), backends={"tiny": NoLogprobEngine()}).run())
    rows = ResultsDir.open(tmp_path / "out").scan().collect()
    assert summary.jobs_ok == 0 and rows.height == 3 * 3 * 2
    assert set(rows["status"]) == {"error"} and set(rows["error_type"]) == {"NoLetterLogprobs"}
    assert rows["pred"].is_null().all() and rows["correct"].is_null().all()


def test_min_pixels_sends_enlarged_frames_beside_the_stored_and_shrunk_sizes(tmp_path: Path) -> None:
    d = small_spec_dict(tmp_path / "out")
    d["dataset"]["n_videos"] = 1
    d["budgets"] = [{"frames": 2, "min_pixels": 20000}, {"frames": 2}, {"frames": 4, "max_pixels": 1536}]
    engine = FakeEngine()
    asyncio.run(Sweep(parse_spec(d), backends={"tiny": engine}).run())
    # the 96x64 video: enlarged to 174x116 (>= 20,000 px), as stored, and shrunk to 48x32
    assert sorted({f.shape for f in engine.frames if f is not None}) == [(2, 64, 96, 3), (2, 116, 174, 3),
                                                                          (4, 32, 48, 3)]
    rows = ResultsDir.open(tmp_path / "out").scan().collect()
    sizes = set(rows.select("budget_id", "width", "height", "min_pixels").iter_rows())
    assert sizes == {("f2-min20000", 174, 116, 20000), ("f2", 96, 64, None), ("f4-px1536", 48, 32, None)}
