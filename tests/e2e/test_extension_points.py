"""Registering one new family, adapter or sampling policy is enough for a sweep to use it.

Each piece is registered here, in the test, through its registry alone (no other file is
edited), then a real sweep (real decoder, real Parquet store) runs a spec naming it. The
engine is a stand-in that records what it is sent: this test is about the registries'
wiring from spec to rows, not about the engine (the real engine runs every built-in family
in tests/backends/test_vllm_actor.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import polars as pl
import pytest
from helpers.specs import small_spec_dict
from pydantic import Field

from engine.backends.base import BackendBase, EngineRequest, EngineResult
from engine.backends.families import FAMILIES, Qwen25VL, register_family
from engine.config import SpecError, parse_spec, register_dataset_spec, unregister_dataset_spec
from engine.config.datasets import StrictModel
from engine.datasets import registry as dataset_registry
from engine.datasets._base import ItemScore
from engine.datasets.registry import register_adapter
from engine.frames.plan import POLICIES, register_policy
from engine.items import Item
from engine.results.store import scan_results
from engine.sweep import Sweep

ASSETS = Path(__file__).resolve().parents[1] / "assets"


class Recorder(BackendBase):
    """Answers "B" to everything and keeps every request."""

    name = "recorder"

    def __init__(self) -> None:
        self.requests: list[EngineRequest] = []

    async def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        self.requests += requests
        return [EngineResult(r.request_id, text="B", letter_logprobs={"B": 0.0}) for r in requests]


class TwoQuestionsSpec(StrictModel):
    name: Literal["two_questions"] = Field(description="Adapter name.")
    video: Path = Field(description="The one video both questions are about.")


class TwoQuestions:
    """Two questions over one video; right when the answer mentions "B" (this benchmark's own rule)."""

    name, version = "two_questions", "1"

    def __init__(self, spec: TwoQuestionsSpec) -> None:
        self.spec = spec

    def items(self) -> Iterator[Item]:
        for i, answer in enumerate(("A", "B")):
            yield Item(dataset=self.name, dataset_version=self.version, item_id=f"q{i}", video_id="tiny",
                       video_path=self.spec.video, question=f"Question {i}?", options=("x", "y"), answer=answer)

    def score(self, item: Item, response: str) -> ItemScore:
        pred = "B" if "B" in response else None
        return ItemScore(pred, pred == item.answer, float(pred == item.answer))


class MarkedFamily(Qwen25VL):
    name = "marked_family"

    def build(self, request_id: str, item: Item, media, mode: str, system: str | None,  # type: ignore[no-untyped-def]
              max_tokens: int) -> EngineRequest:
        req = super().build(request_id, item, media, mode, system, max_tokens)
        req.prompt = "[marked]" + req.prompt
        return req


def _every_third(n_frames: int, fps: float, budget: int, seed: int, param: float | None) -> np.ndarray:
    return np.arange(0, 3 * budget, 3)[:budget].clip(max=n_frames - 1)


@pytest.fixture
def registered() -> Iterator[None]:
    register_policy("every_third", short_video="cap")(_every_third)
    register_family("marked_family")(MarkedFamily)
    register_dataset_spec(TwoQuestionsSpec)
    register_adapter("two_questions")(TwoQuestions)
    try:
        yield
    finally:
        POLICIES.pop("every_third", None)
        FAMILIES.pop("marked_family", None)
        dataset_registry._REGISTRY.pop("two_questions", None)
        unregister_dataset_spec(TwoQuestionsSpec)


def _spec(out: Path, family: str = "marked_family", policy: str = "every_third") -> dict:
    d = small_spec_dict(out)
    d["models"][0]["family"] = family
    d["dataset"] = {"name": "two_questions", "video": str(ASSETS / "tiny.mp4")}
    d["budgets"] = [{"frames": 0}, {"frames": 4, "policy": policy}]
    d["prompt"] = {"scoring": "generate"}
    return d


def test_a_new_family_adapter_and_policy_run_from_a_spec(tmp_path: Path, registered: None) -> None:
    spec = parse_spec(_spec(tmp_path / "out"))
    engine = Recorder()
    summary = asyncio.run(Sweep(spec, backends={"tiny": engine}).run())
    assert summary.jobs_ok == 4 and summary.jobs_failed == 0
    rows = scan_results(tmp_path / "out").collect().sort("item_id", "frames")
    # the policy planned the frames
    visual = rows.filter(pl.col("frames") == 4)
    assert set(visual["policy"]) == {"every_third"}
    assert [list(x) for x in visual["frame_indices"]] == [[0, 3, 6, 9]] * 2
    # the family built every prompt
    assert len(engine.requests) == 4 and all(r.prompt.startswith("[marked]") for r in engine.requests)
    assert set(rows["model_family"]) == {"marked_family"}
    # the adapter's own rule scored the answers: "B" is right for q1 only
    assert dict(zip(rows["item_id"], rows["correct"], strict=True)) == {"q0": False, "q1": True}
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["dataset"] == "two_questions"


def test_unregistered_names_fail_listing_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="every_third"):
        parse_spec(_spec(tmp_path / "a"))
    with pytest.raises(KeyError, match="unknown model family 'marked_family'; known: .*qwen2_5_vl"):
        from engine.backends.families import get_family

        get_family("marked_family")
