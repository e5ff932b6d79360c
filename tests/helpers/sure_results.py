"""A small results directory made in this process: the synthetic set answered by an engine that always says "A"
(the commands that read results are what the tests that use it check, not the answers)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine.backends.base import BackendBase, EngineRequest, EngineResult
from engine.config import parse_spec
from engine.sweep import Sweep
from helpers.specs import small_spec_dict


class SureEngine(BackendBase):
    """Answers "A" with certainty."""

    name = "fake"

    async def start(self) -> dict[str, Any]:
        return {}

    async def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        return [EngineResult(r.request_id, text="A", letter_logprobs={"A": 0.0}) for r in requests]


def sure_results(out: Path, n_videos: int = 2) -> Path:
    """`out` as the results directory of the small spec (`n_videos` videos x 3 questions x 4 budgets)."""
    d = small_spec_dict(out)
    d["dataset"]["n_videos"] = n_videos
    asyncio.run(Sweep(parse_spec(d), backends={"tiny": SureEngine()}).run())
    return out
