"""`[models.engine] extra` keys are checked against the installed vLLM's engine arguments when the spec loads."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest
from helpers.specs import small_spec_dict, write_toml
from typer.testing import CliRunner

from engine.cli import app
from engine.config import SpecError, load_spec
from engine.config.vllm_args import vllm_engine_args

runner = CliRunner()


def _spec(tmp_path: Path, extra: dict) -> Path:
    d = small_spec_dict(tmp_path / "out")
    d["models"][0]["engine"]["extra"] = extra
    return write_toml(tmp_path / "s.toml", d)


def test_a_typo_in_extra_fails_at_spec_time_naming_the_key_and_the_closest(tmp_path: Path) -> None:
    path = _spec(tmp_path, {"max_model_lenn": 4096, "enable_chunked_prefill": True})
    with pytest.raises(SpecError) as err:
        load_spec(path)
    text = str(err.value)
    assert "models.0.engine.extra" in text and "max_model_lenn (did you mean max_model_len?)" in text
    assert "enable_chunked_prefill" not in text  # a real engine argument passes
    res = runner.invoke(app, ["run", str(path)])
    assert res.exit_code == 2 and "max_model_lenn" in res.output
    assert not (tmp_path / "out").exists()  # nothing started, nothing written


def test_real_engine_arguments_pass(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path, {"enable_chunked_prefill": True, "tensor_parallel_size": 1,
                                      "limit_mm_per_prompt": {"video": 1}}))
    assert spec.models[0].engine.extra["enable_chunked_prefill"] is True


@pytest.mark.engine
def test_the_arguments_read_from_vllm_source_are_what_vllm_takes() -> None:
    from vllm import LLM
    from vllm.engine.arg_utils import EngineArgs

    taken = {f.name for f in dataclasses.fields(EngineArgs)}
    taken |= {p for p in inspect.signature(LLM.__init__).parameters if p not in ("self", "kwargs")}
    assert vllm_engine_args() == frozenset(taken)
