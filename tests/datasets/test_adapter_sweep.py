"""A real-format adapter through the scheduler: a missing video becomes error rows, nothing else stops.

The engine here is a stand-in that always answers "B": this test is about the scheduler's
handling of a media fault (a video file that is not there), not about generation, which
tests/e2e/test_sweep_e2e.py and tests/backends cover with the real vLLM engine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from helpers.dataset_files import videomme_fixture

from engine.backends.base import BackendBase, EngineRequest, EngineResult
from engine.config import parse_spec
from engine.demo.videos import write_h264
from engine.results import ResultsDir
from engine.sweep import Sweep


class AnswersB(BackendBase):
    """A fake engine that always answers "B" with certainty."""

    name = "fake"

    async def start(self) -> dict[str, Any]:
        return {}

    async def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        return [EngineResult(r.request_id, text="B", letter_logprobs={"B": 0.0}) for r in requests]

    async def close(self) -> None:
        pass


def test_missing_video_becomes_error_rows(tmp_path: Path) -> None:
    ann, media = videomme_fixture(tmp_path, present=())
    frames = [np.full((48, 64, 3), 40 * i, dtype=np.uint8) for i in range(6)]
    write_h264(media / "fFjv93ACGo8.mp4", iter(frames), fps=6, width=64, height=48)
    spec = parse_spec({
        "sweep_id": "adapter",
        "models": [{"id": "m", "family": "qwen2_5_vl", "path": "tiny:qwen2_5_vl"}],
        "dataset": {"name": "videomme", "annotations": str(ann), "media_root": str(media)},
        "budgets": [{"frames": 0}, {"frames": 2}],
        "store": {"out_dir": str(tmp_path / "out"), "commit_interval_s": 0.5},
    })
    asyncio.run(Sweep(spec, backends={"m": AnswersB()}).run())
    rows = ResultsDir.open(tmp_path / "out").scan().collect()
    assert rows.height == 6 * 2 and set(rows["dataset_version"]) == {"videomme-v1.fs1"}
    missing = rows.filter(pl.col("video_id") == "aBcD1234xyz")
    # The missing video's jobs that need frames are error rows naming the file; its text-only jobs
    # need no media and run; the present video's jobs all succeed.
    visual = missing.filter(pl.col("frames") > 0)
    assert set(visual["status"]) == {"error"} and set(visual["error_type"]) == {"DecodeError"}
    assert visual["error"].str.contains("aBcD1234xyz.mp4", literal=True).all()
    assert set(missing.filter(pl.col("frames") == 0)["status"]) == {"ok"}
    present = rows.filter(pl.col("video_id") == "fFjv93ACGo8")
    assert set(present["status"]) == {"ok"} and present["correct"].all()  # answers B to B questions
