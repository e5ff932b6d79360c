"""Preflight names, by spec field, a server `base_url` that is not a URL and a model path or output directory the
system cannot look up (a NUL byte, a name too long): one sentence, exit 2, from `run` and `inspect` alike, before
any work (they were tracebacks, or a run of error rows)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.specs import small_spec_dict, write_toml
from typer.testing import CliRunner

from engine.cli import app
from engine.config import SpecError, parse_spec
from engine.sweep.preflight import preflight

runner = CliRunner()


def _said(res: object) -> str:
    return " ".join(getattr(res, "output", "").split())


def _both(spec: Path, expected: str) -> None:
    for command in ("inspect", "run"):
        res = runner.invoke(app, [command, str(spec)])
        assert res.exit_code == 2, f"{command}: {res.output}"
        assert expected in _said(res), f"{command}: {res.output}"
        assert "Traceback" not in res.output


@pytest.mark.parametrize("url", ["not a url", "localhost:8000/v1", "ftp://example.org", "http://", "http://h:x/v1"])
def test_a_base_url_that_is_not_an_http_url_is_named(tmp_path: Path, url: str) -> None:
    d = small_spec_dict(tmp_path / "out")
    d["models"][0].update(backend="openai", http={"base_url": url})
    _both(write_toml(tmp_path / "spec.toml", d), "models.0.http.base_url: ")
    assert not (tmp_path / "out").exists()  # nothing ran


def test_a_base_url_key_is_not_echoed() -> None:
    d = small_spec_dict(Path("/tmp/never"))
    d["models"][0].update(backend="openai", http={"base_url": "localhost:8000/v1?api_key=sk-do-not-print-Zq8vN2xLw4Rt7Yp"})
    with pytest.raises(SpecError) as err:
        preflight(parse_spec(d), "spec.toml")
    assert "models.0.http.base_url: 'localhost:8000/v1' is not an http(s) URL" in str(err.value)
    assert "sk-do-not-print-Zq8vN2xLw4Rt7Yp" not in str(err.value)


def test_good_base_urls_pass() -> None:
    for url in ("http://127.0.0.1:8000", "https://api.example.org/v1", "http://[::1]:8000"):
        d = small_spec_dict(Path("/tmp/never"))
        d["models"][0].update(backend="openai", http={"base_url": url})
        spec = parse_spec(d)
        assert preflight(spec, "spec.toml").spec is spec  # passed: the record of the check, no SpecError


def test_an_out_dir_with_a_nul_byte_is_named(tmp_path: Path) -> None:
    d = small_spec_dict(tmp_path / "a\x00b")
    _both(write_toml(tmp_path / "spec.toml", d), "store.out_dir: holds a NUL byte, which no path can")


def test_an_out_dir_name_too_long_is_named(tmp_path: Path) -> None:
    d = small_spec_dict(tmp_path / ("x" * 300))
    _both(write_toml(tmp_path / "spec.toml", d), "store.out_dir: has a name of 300 bytes")
    d = small_spec_dict(tmp_path / "/".join(["y" * 200] * 25))  # every name fits, the path does not
    _both(write_toml(tmp_path / "deep.toml", d), "store.out_dir: is ")


def test_a_model_path_name_too_long_is_named(tmp_path: Path) -> None:
    d = small_spec_dict(tmp_path / "out")
    d["models"][0]["path"] = str(tmp_path / ("m" * 300))
    _both(write_toml(tmp_path / "spec.toml", d), "models.0.path: has a name of 300 bytes")


def test_run_with_out_too_long_from_the_command_line(tmp_path: Path) -> None:
    spec = write_toml(tmp_path / "spec.toml", small_spec_dict(tmp_path / "out"))
    res = runner.invoke(app, ["run", str(spec), "--out", str(tmp_path / ("o" * 256))])
    assert res.exit_code == 2 and "store.out_dir: has a name of 256 bytes" in _said(res), res.output
