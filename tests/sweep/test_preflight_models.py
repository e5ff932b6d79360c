"""The preflight's model checks: a missing checkpoint folder named with the nearest existing one, and a hub id that
cannot be had offline (not in the local Hugging Face cache) failing before Ray or vLLM start."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.hub_cache import cache_model
from helpers.specs import small_spec_dict
from huggingface_hub import constants

from engine.config import SpecError, parse_spec
from engine.sweep.preflight import close_sibling, preflight


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_qwen25: Path) -> Path:
    """A hub cache holding `Org/Tiny-VL` (the tiny checkpoint's real config.json), downloads on."""
    cache = tmp_path / "hub"
    cache_model(cache, "Org/Tiny-VL", {"config.json": (tiny_qwen25 / "config.json").read_bytes()})
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    return cache


def _check(tmp_path: Path, path: str) -> str | None:
    d = small_spec_dict(tmp_path / "out")
    d["models"][0]["path"] = path
    try:
        preflight(parse_spec(d), "s.toml")
    except SpecError as err:
        return str(err)
    return None


@pytest.mark.parametrize("var", ["HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"])
def test_offline_a_hub_id_not_in_the_cache_fails_naming_the_id_and_the_cache(
        tmp_path: Path, hub: Path, monkeypatch: pytest.MonkeyPatch, var: str) -> None:
    assert _check(tmp_path, "Org/Tiny-VLL") is None  # downloads on: vLLM fetches it
    monkeypatch.setenv(var, "1")
    said = _check(tmp_path, "Org/Tiny-VLL")
    assert said is not None and f"models.0.path: Org/Tiny-VLL is no folder here, and as a hub id it is not in the " \
        f"local Hugging Face cache ({hub}); {var}=1 forbids downloading it" in said
    assert _check(tmp_path, "Org/Tiny-VL") is None  # cached: vLLM loads it offline


def test_a_missing_checkpoint_folder_names_the_nearest_one(tmp_path: Path) -> None:
    (tmp_path / "models" / "Qwen2.5-VL-3B").mkdir(parents=True)
    said = _check(tmp_path, str(tmp_path / "modles" / "Qwen2.5-VL-3B"))
    assert said is not None and f"no such checkpoint directory (did you mean {tmp_path / 'models' / 'Qwen2.5-VL-3B'}?)" \
        in said
    assert close_sibling(str(tmp_path / "models" / "Qwen2.5-VL-3b")) == str(tmp_path / "models" / "Qwen2.5-VL-3B")
    assert close_sibling(str(tmp_path / "modles" / "other")) == str(tmp_path / "models")  # the folder, then
    assert close_sibling(str(tmp_path / "zzzzzz")) is None
