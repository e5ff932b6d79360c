"""No file framesweep writes holds a secret the spec names, and a key that could not be redacted safely stops the
run before any work (exit 2), named by its variable."""

from __future__ import annotations

import socket
from pathlib import Path

import polars as pl
import pytest
from helpers.secrets import isolated_secrets
from typer.testing import CliRunner

from engine.cli.app import app

runner = CliRunner()

URL_KEY = "Qk7-spec-url-key-5e6f7a8b9c"


def _free_port() -> int:
    """A loopback port nothing listens on (bound, then let go): every request to it is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spec(path: Path, base_url: str, key_env: str | None = None) -> Path:
    """The spec as a user writes it (by hand: the project's TOML writer would redact a registered key)."""
    key = f'api_key_env = "{key_env}"\n' if key_env else ""
    path.write_text(f'''sweep_id = "secrets"
[[models]]
id = "remote"
family = "qwen2_5_vl"
path = "served"
backend = "openai"
[models.http]
base_url = "{base_url}"
{key}max_retries = 0
timeout_s = 2.0
[dataset]
name = "synthetic"
n_videos = 1
seconds = 2.0
fps = 8
width = 64
height = 48
[[budgets]]
frames = 0
[[budgets]]
frames = 2
''')
    return path


def _texts(folder: Path) -> dict[str, str]:
    """Every file under `folder` as text: a Parquet file's every string and list-of-string value, any other
    file's bytes."""
    out = {}
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        if f.suffix == ".parquet":
            frame = pl.read_parquet(f)
            out[str(f)] = str(frame.select(pl.col(pl.String, pl.List(pl.String))).to_dicts())
        else:
            out[str(f)] = f.read_bytes().decode("utf-8", errors="replace")
    return out


def test_a_key_in_base_url_reaches_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A key written into the spec (`base_url = "...?api_key=..."`) landed raw in `manifest.json`, `summary.json`
    and the report; only the export scrubbed it. Run (every request refused: error rows, exit 4), `report`,
    `metrics --json`, `export`: no file under either folder holds it, while the rows still name the server."""
    isolated_secrets(monkeypatch)
    out, art = tmp_path / "out", tmp_path / "art"
    url = f"http://127.0.0.1:{_free_port()}/?api_key={URL_KEY}"
    res = runner.invoke(app, ["run", str(_spec(tmp_path / "s.toml", url)), "--out", str(out)])
    assert res.exit_code == 4, res.output
    for args in (["report", str(out), "-o", str(out / "report.html")],
                 ["metrics", str(out), "--json", str(out / "metrics.json")],
                 ["export", str(out), "--to", str(art)]):
        done = runner.invoke(app, args)
        assert done.exit_code == 0, (args, done.output)
    texts = {**_texts(out), **_texts(art)}
    names = {Path(p).name for p in texts}
    assert {"manifest.json", "summary.json", "report.html", "metrics.json", "provenance.json"} <= names, names
    assert any(n.startswith("run-") and n.endswith(".log") for n in names), names
    leaked = [p for p, text in texts.items() if URL_KEY in text or URL_KEY[4:20] in text]
    assert not leaked, leaked
    assert "api_key=***" in texts[str(out / "manifest.json")]
    assert "?api_key=***" in str(pl.read_parquet(next((out / "results").rglob("*.parquet")))["worker"].to_list())
    assert URL_KEY not in res.output


@pytest.mark.parametrize("weak", ["flash", "token-abc123", "sk-no-key-required"])
def test_a_key_that_cannot_be_redacted_safely_stops_the_run_naming_its_variable(
        weak: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolated_secrets(monkeypatch)
    monkeypatch.setenv("FS_TEST_WEAK_KEY", weak)
    out = tmp_path / "out"
    res = runner.invoke(app, ["run", str(_spec(tmp_path / "s.toml", "http://127.0.0.1:9", "FS_TEST_WEAK_KEY")),
                              "--out", str(out)])
    assert res.exit_code == 2, res.output
    assert "models.0.http.api_key_env: environment variable FS_TEST_WEAK_KEY holds an API key" in res.output
    assert weak not in res.output and not out.exists()


def test_a_ray_token_that_cannot_be_redacted_safely_stops_the_run(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    isolated_secrets(monkeypatch)
    monkeypatch.setenv("RAY_AUTH_TOKEN", "raytoken")
    out = tmp_path / "out"
    res = runner.invoke(app, ["run", str(_spec(tmp_path / "s.toml", "http://127.0.0.1:9")), "--out", str(out)])
    assert res.exit_code == 2 and "RAY_AUTH_TOKEN: the cluster's token" in res.output, res.output
    assert "raytoken" not in res.output and not out.exists()
