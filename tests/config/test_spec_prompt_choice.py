"""`ModelSpec.prompt`: how the in-process engine's prompt is written (the family's, checked against the checkpoint's
chat template at each engine start, or the checkpoint's template itself). An unknown value is one error at its field
naming the two choices; a server renders its own template, so `checkpoint_template` with `backend = "openai"` is
refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.config import SpecError, parse_spec


def _spec(out: Path, **model: Any) -> dict[str, Any]:
    return {"sweep_id": "s", "models": [{"id": "m", "family": "qwen2_5_vl", "path": "tiny:qwen2_5_vl", **model}],
            "dataset": {"name": "synthetic"}, "budgets": [{"frames": 4}], "store": {"out_dir": str(out)}}


def test_the_default_is_the_family_and_both_choices_parse(tmp_path: Path) -> None:
    assert parse_spec(_spec(tmp_path)).models[0].prompt == "family"
    assert parse_spec(_spec(tmp_path, prompt="checkpoint_template")).models[0].prompt == "checkpoint_template"


def test_an_unknown_choice_names_the_field_and_the_choices(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as err:
        parse_spec(_spec(tmp_path, prompt="chat_template"), "s.toml")
    assert "  models.0.prompt: Input should be 'family' or 'checkpoint_template'" in str(err.value).splitlines()


def test_checkpoint_template_with_a_server_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"prompt = 'checkpoint_template' with backend = 'openai'"):
        parse_spec(_spec(tmp_path, prompt="checkpoint_template", backend="openai",
                         http={"base_url": "http://localhost:8000/v1"}), "s.toml")
