"""The one TOML writer (`engine.config.toml_out`, over tomli-w): what it writes reads back as the same spec, a
None field is left out (TOML has no null), and the other places that show TOML use it."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from engine.config import load_spec, parse_spec
from engine.config.toml_out import write_spec_toml


def _spec() -> dict:
    return {
        "sweep_id": "toml-test",
        "models": [{"id": "m", "family": "qwen2_5_vl", "path": "tiny:qwen2_5_vl", "max_frames": None,
                    "engine": {"max_model_len": 4096, "max_num_batched_tokens": None,
                               "extra": {"seed": 3, "tokenizer_revision": 'quotes " and \\ back\nslash'}}}],
        "dataset": {"name": "synthetic", "n_videos": 2, "questions": ["flash_count"]},
        "budgets": [{"frames": 0}, {"frames": 4, "max_pixels": None}, {"frames": 8, "max_pixels": 50176}],
        "store": {"out_dir": Path("/tmp/somewhere")},
    }


def test_a_spec_with_none_fields_round_trips(tmp_path: Path) -> None:
    path = write_spec_toml(_spec(), tmp_path / "spec.toml")
    text = path.read_text()
    assert "null" not in text and "None" not in text
    tomllib.loads(text)  # valid TOML
    assert load_spec(path) == parse_spec({**_spec(), "store": {"out_dir": "/tmp/somewhere"}})


def test_a_dumped_spec_round_trips() -> None:
    from engine.config.toml_out import spec_toml

    spec = parse_spec(_spec())
    assert parse_spec(tomllib.loads(spec_toml(spec.model_dump(mode="json")))) == spec


def test_one_line_values() -> None:
    from engine.config.toml_out import toml_value

    assert toml_value(None) is None
    assert toml_value([1, "a b", {"k": 2.5, "x y": True}]) == '[1, "a b", { k = 2.5, "x y" = true }]'
    assert toml_value({}) == "{}" and toml_value('say "hi"') == '"say \\"hi\\""'
    tomllib.loads(f"v = {toml_value({'nested': [1, {'a': 'b'}], 'n': None})}")


def test_the_dataset_catalog_shows_no_null_defaults() -> None:
    from engine.config.catalog import describe_adapters

    defaults = [(info.name, f.name, f.default) for info in describe_adapters() for f in info.fields]
    assert not [d for d in defaults if d[2] == "null"]  # a None default is a field left out, not `x = null`
    for ds, field, default in defaults:
        if default not in ("", "(unset)"):
            tomllib.loads(f"{field} = {default}"), (ds, field)  # every default shown is TOML a spec can hold


def test_the_example_spec_is_toml() -> None:
    from engine.config.reference import example_toml

    parsed = tomllib.loads(example_toml())
    assert parsed["sweep_id"] == "my-audit"


def test_a_written_spec_holds_no_registered_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The quick path's `OUT/spec.toml` goes through this writer: a credential the spec named is written `***`."""
    from helpers.secrets import isolated_secrets

    isolated_secrets(monkeypatch)
    key = "Zq8-toml-cred-0b1c2d3e4f"
    data = _spec()
    data["models"] = [{"id": "r", "family": "qwen2_5_vl", "path": "served", "backend": "openai",
                       "http": {"base_url": f"http://127.0.0.1:9/?token={key}"}}]
    parse_spec(data)  # reading the spec registers the credential
    text = write_spec_toml(data, tmp_path / "spec.toml").read_text()
    assert key not in text and 'base_url = "http://127.0.0.1:9/?token=***"' in text
