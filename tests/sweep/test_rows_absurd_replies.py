"""The score step turns a reply it cannot score into that job's error row, never an exception that ends the run.

The engine results here are built by hand: a real engine does not return a log-probability of 800 or a token
count that is a string on demand (the HTTP tests get such replies from a loopback server, the vLLM worker test
from its own output parser).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from helpers.specs import small_spec_dict

from engine.backends.base import EngineRequest, EngineResult
from engine.config import BudgetPoint, parse_spec
from engine.datasets._base import default_score
from engine.items import Item, Job
from engine.sweep.rows import JobContext, scored_row


def _ctx(mode: str = "letter", kind: str = "mcq") -> JobContext:
    item = Item(dataset="synthetic", dataset_version="v", item_id="v0/q", video_id="v0", video_path=None,
                question="Q?", options=("red", "green", "blue", "white"), answer="B" if kind == "mcq" else "red",
                kind=kind)  # type: ignore[arg-type]
    return JobContext(job=Job("tiny", item, BudgetPoint(frames=0)), model_family="qwen2_5_vl",
                      indices=np.zeros(0, dtype=np.int64), width=None, height=None, decoder=None, decode_s=None,
                      attempt=1, request=EngineRequest("r0", "Q?", letters=list("ABCD"), mode=mode))  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [800.0, 1e308, math.nan, math.inf])
def test_an_absurd_letter_logprob_is_an_error_row(tmp_path: Path, value: float) -> None:
    spec = parse_spec(small_spec_dict(tmp_path))
    row = scored_row(spec, _ctx(), EngineResult("r0", text="B", letter_logprobs={"B": value}), default_score)
    assert (row.status, row.error_type, row.error_kind) == ("error", "AbsurdLogprob", "transient")
    assert "option letter 'B'" in row.error and repr(value) in row.error, row.error
    assert row.pred is None and row.confidence is None


def test_a_valid_reply_is_still_scored(tmp_path: Path) -> None:
    spec = parse_spec(small_spec_dict(tmp_path))
    row = scored_row(spec, _ctx(), EngineResult("r0", text="B", letter_logprobs={"B": -0.1}), default_score)
    assert (row.status, row.pred, row.correct) == ("ok", "B", True)
    assert row.confidence == pytest.approx(math.exp(-0.1))


@pytest.mark.parametrize(("result", "error_type", "says"), [
    (EngineResult("r0", text="red", mean_logprob=900.0), "AbsurdLogprob", "mean log-probability"),
    (EngineResult("r0", text="red", prompt_tokens="12"), "ValueError", "prompt token count '12'"),  # type: ignore[arg-type]
    (EngineResult("r0", text=["red"]), "TypeError", "text is a list"),  # type: ignore[arg-type]
])
def test_a_generated_reply_holding_an_unusable_value_is_an_error_row(tmp_path: Path, result: EngineResult,
                                                                     error_type: str, says: str) -> None:
    """An overflowing mean log-probability (confidence exp(900)), a count the Int32 column cannot hold (the commit
    of the whole batch would fail) and a text that is no string each fail their own row."""
    spec = parse_spec(small_spec_dict(tmp_path))
    row = scored_row(spec, _ctx("generate", "open"), result, default_score)
    assert (row.status, row.error_type) == ("error", error_type) and says in row.error, row.error
