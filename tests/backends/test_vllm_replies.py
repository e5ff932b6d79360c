"""The vLLM worker reads each output of a batch on its own: an absurd log-probability fails that request only.

The engine here is a stand-in (`_FakeLLM`), used only because vLLM never returns a log-probability above 0 (or NaN)
on demand; the worker's own batch path (`VLLMWorker._answer`) and output parser (`_result`) are the real ones.
Before, `_result` passed 800.0 through and the driver's scorer raised OverflowError, ending the run; an exception in
`_result` would have failed the whole batch, which the driver takes for a dead engine.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

from engine.backends.base import EngineRequest
from engine.backends.vllm_actor import VLLMWorker
from engine.backends.vllm_supervisor import EngineProcesses

LETTER_IDS = {"A": 11, "B": 12, "C": 13, "D": 14}


def _output(first: dict[str, float]) -> Any:
    """One vLLM RequestOutput-shaped answer: the first token is the most probable letter."""
    tid = max(first, key=lambda x: first[x])
    lps = {LETTER_IDS[x]: SimpleNamespace(logprob=lp, decoded_token=x) for x, lp in first.items()}
    comp = SimpleNamespace(text=tid, token_ids=[LETTER_IDS[tid]], logprobs=[lps])
    return SimpleNamespace(outputs=[comp], prompt_token_ids=[1, 2, 3])


class _FakeLLM:
    def __init__(self, outputs: list[Any]) -> None:
        self.outputs = outputs

    def generate(self, inputs: list[Any], params: list[Any], use_tqdm: bool = False) -> list[Any]:
        assert len(inputs) == len(self.outputs)
        return self.outputs


def _worker(outputs: list[Any]) -> VLLMWorker:
    w = object.__new__(VLLMWorker)  # no engine: the batch path and parser only
    w.llm, w._letter_ids, w.worker, w.version = _FakeLLM(outputs), dict(LETTER_IDS), "w", "vllm x"
    w.engine_procs = EngineProcesses([], "w")
    w._params = lambda r: None  # type: ignore[method-assign]
    return w


def test_one_absurd_output_fails_its_request_only() -> None:
    outs = [_output({"A": -0.1, "B": -3.0, "C": -4.0, "D": -5.0}), _output({"B": 800.0, "C": -1.0}),
            _output({"A": -2.0, "B": math.nan}), _output({"D": -0.2})]
    requests = [EngineRequest(f"r{i}", "Q?", letters=list("ABCD")) for i in range(4)]
    results = _worker(outs)._answer(requests)
    assert [r.request_id for r in results] == ["r0", "r1", "r2", "r3"]
    assert [r.error_type for r in results] == [None, "AbsurdLogprob", "AbsurdLogprob", None]
    assert "option letter 'B'" in results[1].error and "800.0" in results[1].error  # type: ignore[operator]
    assert "nan" in results[2].error  # type: ignore[operator]
    assert results[0].letter_logprobs == {"A": -0.1, "B": -3.0, "C": -4.0, "D": -5.0}
    assert results[3].letter_logprobs == {"D": -0.2} and results[3].text == "D"
