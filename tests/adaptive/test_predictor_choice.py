"""The predictor's generated answer is held to its options by vLLM's structured outputs (guided choice); the
free-text parser stays as the fallback for servers without them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from helpers.specs import small_spec_dict

from engine.adaptive.predictor import _prediction, _question, predict_frames
from engine.backends.families import get_family
from engine.config import parse_spec
from engine.items import Item
from engine.sweep import start_backends

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)

ITEM = Item(dataset="t", dataset_version="1", item_id="q1", video_id="v1", video_path=None,
            question="How many times does the light flash?", options=("one", "two"), answer="A")
OPTIONS = ["no frames (text only)", "2 frames", "4 frames", "8 frames"]


def test_a_generated_predictor_answer_is_held_to_the_option_texts() -> None:
    fam = get_family("qwen2_5_vl")
    question = _question(ITEM, [0, 2, 4, 8])
    assert fam.build("r", question, None, "generate", None, 16).choices == OPTIONS
    assert fam.build("r", question, None, "letter", None, 1).choices is None  # letters: allowed_token_ids
    assert fam.build("r", ITEM, None, "generate", None, 16).choices is None  # a benchmark's own question: free


def test_a_held_answer_needs_no_parsing_and_free_text_is_still_parsed() -> None:
    row = {"status": "ok", "response": "4 frames", "pred": None}
    assert _prediction(row, [0, 2, 4, 8], "generate") == ("4 frames", 4, "choice")
    assert _prediction({**row, "response": "no frames (text only)"}, [0, 2, 4, 8], "generate")[1:] == (0, "choice")
    # a server without structured outputs answers freely: the parser reads it
    assert _prediction({**row, "response": "I'd say eight frames"}, [0, 2, 4, 8], "generate")[1:] == (8, "word")


def test_the_real_engine_answers_one_of_the_options(tmp_path: Path, warm_engine: Path) -> None:
    """The tiny random checkpoint answers anything at all; held to the options, every answer is one of them."""
    import ray

    d = small_spec_dict(tmp_path / "out")
    d["prompt"] = {"scoring": "generate"}
    spec = parse_spec(d)

    async def go():
        backends = await start_backends(spec)
        try:
            return await predict_frames(spec, "tiny", backends)
        finally:
            await asyncio.gather(*(b.close() for b in backends.values()))
            ray.shutdown()

    preds = asyncio.run(go())
    assert preds.height == 9
    assert set(preds["parse_status"]) == {"choice"}, preds.select("raw_answer", "parse_status").rows()
    assert set(preds["raw_answer"]) <= {"2 frames", "4 frames", "8 frames"}
    assert preds["predicted_frames"].to_list() == [int(r.split()[0]) for r in preds["raw_answer"]]
