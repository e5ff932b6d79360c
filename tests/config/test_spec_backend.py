"""`ModelSpec.backend` is validated against the backend registry (`engine.config.backends.BACKENDS`): an unknown
name is one error at its field listing the registered backends, and a backend registered later is accepted with no
other edit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.backends.kinds import BACKENDS, BackendKind, register_backend
from engine.config import SpecError, parse_spec


def _spec(out: Path, backend: str) -> dict[str, Any]:
    return {"sweep_id": "s", "models": [{"id": "m", "family": "qwen2_5_vl", "path": "tiny:qwen2_5_vl",
                                         "backend": backend}],
            "dataset": {"name": "synthetic"}, "budgets": [{"frames": 4}], "store": {"out_dir": str(out)}}


async def _build(model: Any, detached: bool) -> Any:
    raise AssertionError("never built: the spec is only parsed")


@pytest.fixture
def replay() -> Iterator[str]:
    register_backend("replay", BackendKind(_build))
    try:
        yield "replay"
    finally:
        BACKENDS.unregister("replay")


def test_an_unknown_backend_names_the_field_and_the_registered_ones(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as err:
        parse_spec(_spec(tmp_path, "tgi"), "s.toml")
    assert ("  models.0.backend: Value error, backend 'tgi' is not a registered backend; registered: openai, vllm"
            in str(err.value).splitlines())


def test_a_registered_backend_is_accepted_and_listed(replay: str, tmp_path: Path) -> None:
    assert parse_spec(_spec(tmp_path, replay), "s.toml").models[0].backend == "replay"
    with pytest.raises(SpecError, match="registered: openai, replay, vllm"):
        parse_spec(_spec(tmp_path, "tgi"), "s.toml")


def test_the_built_in_backends_are_the_kinds_the_engines_start_with() -> None:
    from engine.backends import kinds

    assert BACKENDS.get("vllm") is kinds.VLLM and BACKENDS.get("vllm").in_cluster
    assert BACKENDS.get("openai") is kinds.OPENAI and not BACKENDS.get("openai").in_cluster
