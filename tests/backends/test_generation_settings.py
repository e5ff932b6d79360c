"""A generated request's stop strings and temperature (an lmms-eval task's generation_kwargs, `engine.items.Generation`)
reach what each backend sends: vLLM's sampling parameters and the OpenAI-compatible request body. Letter scoring
reads the greedy distribution of one token whatever the item says."""

from __future__ import annotations

import asyncio

import pytest

from engine.backends.base import EngineRequest
from engine.backends.openai_http import OpenAIHTTPBackend
from engine.backends.vllm_actor import VLLMWorker
from engine.config import HTTPSpec

MESSAGES = [{"role": "user", "content": [{"type": "text", "text": "Q?"}]}]


def _request(**fields: object) -> EngineRequest:
    return EngineRequest("r", "Q?", mode="generate", max_tokens=7, messages=MESSAGES, **fields)  # type: ignore[arg-type]


@pytest.mark.engine  # importing vLLM runs a process (uname)
def test_vllm_sampling_parameters_carry_the_stop_strings_and_temperature() -> None:
    params = VLLMWorker._params(None, _request(stop=["END", "\n\n"], temperature=0.5))  # type: ignore[arg-type]
    assert (params.max_tokens, params.stop, params.temperature) == (7, ["END", "\n\n"], 0.5)
    plain = VLLMWorker._params(None, _request())  # type: ignore[arg-type]
    assert (plain.stop, plain.temperature) == ([], 0.0)


def test_the_http_body_carries_the_stop_strings_and_temperature() -> None:
    backend = OpenAIHTTPBackend(HTTPSpec(base_url="http://127.0.0.1:9"), "m")  # the body only: nothing is sent
    body = asyncio.run(backend._body(_request(stop=["END"], temperature=0.5)))
    assert (body["max_tokens"], body["stop"], body["temperature"]) == (7, ["END"], 0.5)
    plain = asyncio.run(backend._body(_request()))
    assert "stop" not in plain and plain["temperature"] == 0.0
