"""Registering one new family, adapter, sampling policy or decoder is enough for a sweep to use it.

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
from engine.datasets._base import ItemScore
from engine.datasets.registry import ADAPTERS, register_adapter
from engine.frames.base import DECODERS, DecodeRequest, FrameBatch, register_decoder
from engine.frames.decode_pyav import PyAVDecoder
from engine.frames.plan import POLICIES, register_policy
from engine.items import Item
from engine.results import ResultsDir
from engine.strict import StrictModel
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


class GreyDecoder(PyAVDecoder):
    """PyAV's frames, every pixel set to 7 (so a request shows which decoder made its frames)."""

    name = "grey"

    def decode_frames(self, request: DecodeRequest) -> FrameBatch:
        batch = super().decode_frames(request)
        batch.frames[...] = 7
        for by_index in batch.extra.values():
            for frame in by_index.values():
                frame[...] = 7
        return batch


def _every_third(n_frames: int, fps: float, budget: int, seed: int, param: float | None) -> np.ndarray:
    return np.arange(0, 3 * budget, 3)[:budget].clip(max=n_frames - 1)


@pytest.fixture
def registered() -> Iterator[None]:
    register_policy("every_third", short_video="cap")(_every_third)
    register_family("marked_family")(MarkedFamily)
    register_dataset_spec(TwoQuestionsSpec)
    register_adapter("two_questions")(TwoQuestions)
    register_decoder("grey")(GreyDecoder)
    try:
        yield
    finally:
        POLICIES.unregister("every_third")
        FAMILIES.unregister("marked_family")
        ADAPTERS.unregister("two_questions")
        unregister_dataset_spec(TwoQuestionsSpec)
        DECODERS.unregister("grey")


def _spec(out: Path, family: str = "marked_family", policy: str = "every_third") -> dict:
    d = small_spec_dict(out)
    d["models"][0]["family"] = family
    d["dataset"] = {"name": "two_questions", "video": str(ASSETS / "tiny.mp4")}
    d["budgets"] = [{"frames": 0}, {"frames": 4, "policy": policy}]
    d["prompt"] = {"scoring": "generate"}
    d["decode"] = {**d.get("decode", {}), "decoder": "grey"}
    return d


def test_a_new_family_adapter_policy_and_decoder_run_from_a_spec(tmp_path: Path, registered: None) -> None:
    spec = parse_spec(_spec(tmp_path / "out"))
    engine = Recorder()
    summary = asyncio.run(Sweep(spec, backends={"tiny": engine}).run())
    assert summary.jobs_ok == 4 and summary.jobs_failed == 0
    rows = ResultsDir.open(tmp_path / "out").scan().collect().sort("item_id", "frames")
    # the policy planned the frames
    visual = rows.filter(pl.col("frames") == 4)
    assert set(visual["policy"]) == {"every_third"}
    assert [list(x) for x in visual["frame_indices"]] == [[0, 3, 6, 9]] * 2
    # the decoder made every frame sent
    sent = [r.video for r in engine.requests if r.video is not None]
    assert len(sent) == 2 and all(np.asarray(v).size and (np.asarray(v) == 7).all() for v in sent)
    assert set(visual["decoder"]) == {"grey"}
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
