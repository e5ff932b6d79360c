"""`framesweep run` without a spec file, and the overrides a spec file takes on the command line (no engine
starts here: the quick path's real run is in test_cli_run_observed.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.specs import small_spec_dict, write_toml
from typer.testing import CliRunner

from engine.cli import app
from engine.cli.quick import load_with_overrides, quick_spec
from engine.config import SpecError, dataset_spec_classes
from engine.datasets.sources import known_sources

runner = CliRunner()


def test_the_quick_flags_build_a_spec_with_the_data_folders_layout(tmp_path: Path) -> None:
    (tmp_path / "vmme").mkdir()
    spec, doc = quick_spec(model="tiny:qwen2_5_vl", family=None, dataset="videomme", data=tmp_path / "vmme",
                           frames="32,0,8", limit=20, out=tmp_path / "out")
    ds = spec.dataset_specs()[0]
    assert ds.annotations == tmp_path / "vmme" / "videomme" / "test-00000-of-00001.parquet"
    assert ds.media_root == tmp_path / "vmme" / "data" and ds.limit == 20
    assert [b.budget_id for b in spec.budgets] == ["text", "f8", "f32"]
    assert spec.models[0].family == "qwen2_5_vl" and spec.store.out_dir == tmp_path / "out"
    assert doc["dataset"]["name"] == "videomme"


def test_the_family_comes_from_the_checkpoints_config(tmp_path: Path) -> None:
    ckpt = tmp_path / "Qwen3-VL-2B"
    ckpt.mkdir()
    (ckpt / "config.json").write_text(json.dumps({"model_type": "qwen3_vl"}))
    spec, _ = quick_spec(model=str(ckpt), family=None, dataset="synthetic", data=None, frames="0,4", limit=None,
                         out=tmp_path / "out")
    assert spec.models[0].family == "qwen3_vl" and spec.models[0].id == "Qwen3-VL-2B"
    (ckpt / "config.json").write_text(json.dumps({"model_type": "opt"}))
    with pytest.raises(SpecError, match=r"--family: give the model family of .*model_type 'opt'"):
        quick_spec(model=str(ckpt), family=None, dataset="synthetic", data=None, frames="0", limit=None,
                   out=tmp_path / "out")


@pytest.mark.parametrize(("args", "said"), [
    (["--model", "tiny:qwen2_5_vl", "--dataset", "synthetic"], "or --out for a run without one"),
    (["--dataset", "synthetic", "--out", "o"], "or --model for a run without one"),
    (["--model", "tiny:qwen2_5_vl", "--dataset", "nope", "--out", "o"], "--dataset: unknown dataset 'nope'"),
    (["--model", "tiny:qwen2_5_vl", "--dataset", "synthetic", "--frames", "0,x", "--out", "o"], "--frames: give"),
    (["--model", "tiny:qwen2_5_vl", "--dataset", "synthetic", "--models", "a", "--out", "o"],
     "--models and --budgets choose from a spec file"),
])
def test_quick_path_mistakes_are_one_sentence(tmp_path: Path, args: list[str], said: str) -> None:
    res = runner.invoke(app, ["run", *args])
    assert res.exit_code == 2 and said in res.output, res.output


def test_quick_flags_do_not_go_with_a_spec_file(tmp_path: Path) -> None:
    path = write_toml(tmp_path / "s.toml", small_spec_dict(tmp_path / "out"))
    res = runner.invoke(app, ["run", str(path), "--frames", "0,8"])
    assert res.exit_code == 2 and "--frames builds a spec without a file" in res.output


def test_overrides_narrow_a_spec_file(tmp_path: Path) -> None:
    d = small_spec_dict(tmp_path / "out")
    d["models"].append({**d["models"][0], "id": "other"})
    path = write_toml(tmp_path / "s.toml", d)
    spec = load_with_overrides(path, tmp_path / "elsewhere", limit=4, models=["other"], budgets=["text", "f4"])
    assert [m.id for m in spec.models] == ["other"] and spec.store.out_dir == tmp_path / "elsewhere"
    ds = spec.dataset_specs()[0]
    assert ds.n_videos == 2  # the synthetic set: 3 questions a video, 4 questions need 2 videos
    assert [b.budget_id for b in spec.dataset_budgets(ds)] == ["text", "f4"]
    with pytest.raises(SpecError, match=r"--models: no model 'x' in the spec; known: tiny, other"):
        load_with_overrides(path, None, models=["x"])
    with pytest.raises(SpecError, match=r"names 'f99', no budget of this sweep"):
        load_with_overrides(path, None, budgets=["f99"])


def test_every_source_names_a_dataset_and_its_spec_fields() -> None:
    classes = dataset_spec_classes()
    for name, src in known_sources().items():
        assert name in classes, name
        fields = classes[name].model_fields
        assert src.layout and set(src.layout) <= set(fields), (name, src.layout)
        assert not src.on_hub or "/" in src.where


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_qwen25: Path) -> Path:
    """A local hub cache holding `Org/Tiny-VL` (the tiny checkpoint's real config.json), downloads on."""
    from helpers.hub_cache import cache_model
    from huggingface_hub import constants

    cache = tmp_path / "hub"
    cache_model(cache, "Org/Tiny-VL", {"config.json": (tiny_qwen25 / "config.json").read_bytes()})
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    return cache


def _quick(tmp_path: Path, model: str) -> str:
    spec, _ = quick_spec(model=model, family=None, dataset="synthetic", data=None, frames="0", limit=None,
                         out=tmp_path / "out")
    return spec.models[0].family


def test_a_hub_id_takes_its_family_from_the_local_hub_cache(tmp_path: Path, hub: Path) -> None:
    assert _quick(tmp_path, "Org/Tiny-VL") == "qwen2_5_vl"
    with pytest.raises(SpecError, match=r"--family: give the model family of Org/Other \(no folder here, and as a "
                                        r"hub id not in the local Hugging Face cache, .*/hub: its config.json"):
        _quick(tmp_path, "Org/Other")  # downloads on: the run may fetch it, but its family cannot be read first


def test_offline_an_uncached_hub_id_is_refused_before_the_family_is_asked(
        tmp_path: Path, hub: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert _quick(tmp_path, "Org/Tiny-VL") == "qwen2_5_vl"
    with pytest.raises(SpecError, match=rf"--model: Org/Tiny-VK is no folder here, and as a hub id it is not in the "
                                        rf"local Hugging Face cache \({hub}\); HF_HUB_OFFLINE=1 forbids"):
        _quick(tmp_path, "Org/Tiny-VK")


def test_a_typo_in_a_local_model_path_names_the_missing_folder_before_the_family(tmp_path: Path) -> None:
    real = tmp_path / "models" / "Qwen2.5-VL-3B"
    real.mkdir(parents=True)
    with pytest.raises(SpecError, match=r"^--model: .*/modles/Qwen2.5-VL-3B: no such checkpoint directory "
                                        rf"\(did you mean {real}\?\)$"):
        _quick(tmp_path, str(tmp_path / "modles" / "Qwen2.5-VL-3B"))
    res = runner.invoke(app, ["run", "--model", str(tmp_path / "models" / "Qwen2.5-VL"), "--dataset", "synthetic",
                              "--out", str(tmp_path / "out")])
    assert res.exit_code == 2 and f"(did you mean {real}?)" in res.output and "--family" not in res.output
