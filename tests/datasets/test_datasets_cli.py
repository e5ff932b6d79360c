"""`framesweep datasets` and `framesweep inspect` (no engine, no Ray)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.dataset_files import videomme_fixture, videomme_row
from typer.testing import CliRunner

from engine.cli import app

runner = CliRunner()


def _write_spec(path: Path, dataset: str, out: Path) -> Path:
    path.write_text(f"""
sweep_id = "inspect-test"

[[models]]
id = "small"
family = "qwen2_5_vl"
path = "tiny:qwen2_5_vl"
max_frames = 16

[[models]]
id = "big"
family = "qwen2_5_vl"
path = "tiny:qwen2_5_vl"

[dataset]
{dataset}

[[budgets]]
frames = 0

[[budgets]]
frames = 8

[[budgets]]
frames = 16

[[budgets]]
frames = 64

[store]
out_dir = "{out}"
""")
    return path


def _output(result: object) -> str:
    out = getattr(result, "output", "")
    with contextlib.suppress(ValueError):  # older click: stderr not captured separately
        out += getattr(result, "stderr", "") or ""
    return " ".join(out.split())  # rich wraps long lines at the terminal width: compare words


def test_datasets_lists_every_adapter_with_fields() -> None:
    result = runner.invoke(app, ["datasets"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for name in ("videomme", "videomme_v2", "mlvu", "avsd", "mvbench", "tempcompass", "mmstar", "pope", "mme",
                 "synthetic"):
        assert name in result.output
    assert "media_root" in result.output and "videomme-v1.fs1" in result.output
    assert "framesweep datasets NAME" in result.output
    narrow = runner.invoke(app, ["datasets"], env={"COLUMNS": "80"})
    assert max(len(line) for line in narrow.output.splitlines()) <= 80
    one = runner.invoke(app, ["datasets", "pope"], env={"COLUMNS": "200"})
    assert one.exit_code == 0 and "categories" in one.output and "mlvu" not in one.output
    assert "list of strings" in runner.invoke(app, ["datasets", "videomme"], env={"COLUMNS": "200"}).output
    assert runner.invoke(app, ["datasets", "nope"]).exit_code == 2


def test_datasets_name_into_a_pipe_is_one_block_per_field_at_80_columns() -> None:
    """Off a terminal (CliRunner's output is a pipe) and without COLUMNS: every line within 80 columns, each field
    a block of its own (name, type and default; then its description), the source line wrapped too."""
    res = runner.invoke(app, ["datasets", "videomme"], env={"COLUMNS": None})
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert max(map(len, lines)) <= 80
    assert "limit: integer or null; default (unset)" in lines and "annotations: path; required" in lines
    assert any(line.startswith("    Keep only the first N questions") for line in lines)
    assert any(line.startswith("source: lmms-lab/Video-MME") for line in lines)
    wide = runner.invoke(app, ["datasets", "videomme"], env={"COLUMNS": "120"}).output.splitlines()
    assert max(map(len, wide)) <= 120 and len(wide) < len(lines)


def test_inspect_counts_items_media_and_jobs(tmp_path: Path) -> None:
    ann, media = videomme_fixture(tmp_path)
    spec = _write_spec(tmp_path / "spec.toml",
                       f'name = "videomme"\nannotations = "{ann}"\nmedia_root = "{media}"', tmp_path / "out")
    result = runner.invoke(app, ["inspect", str(spec)], env={"COLUMNS": "200"})
    assert result.exit_code == 6, _output(result)  # a video is missing: `run` would fail its jobs for good
    out = result.output
    assert "1 media file(s) missing: their jobs would be error rows" in _output(result)
    assert "videomme (videomme-v1.fs1): 6 items" in out
    assert "1 found, 1 missing" in out and "aBcD1234xyz.mp4 (3 item(s): 002-1, 002-2, 002-3)" in out
    # small: 6 items x {text, f8, f16}; big: 6 items x 4 budgets
    assert "text f8 f16 " in out and "18" in out and "24" in out and "42" in out
    assert not (tmp_path / "out").exists()  # nothing ran


def test_inspect_reports_dataset_errors(tmp_path: Path) -> None:
    ann, media = videomme_fixture(tmp_path, [videomme_row("001", "v1", 1, answer="Q")])
    spec = _write_spec(tmp_path / "spec.toml",
                       f'name = "videomme"\nannotations = "{ann}"\nmedia_root = "{media}"', tmp_path / "out")
    result = runner.invoke(app, ["inspect", str(spec)])
    assert result.exit_code == 2
    assert "row 0: answer: expected one of the option letters, got 'Q'" in _output(result)
    bad = _write_spec(tmp_path / "bad.toml", 'name = "videomme"\nannotations = "x"', tmp_path / "out")
    result = runner.invoke(app, ["inspect", str(bad)])
    assert result.exit_code == 2 and "dataset.videomme.media_root" in _output(result)


def test_inspect_synthetic_writes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "syn"
    spec = _write_spec(tmp_path / "spec.toml", f'name = "synthetic"\nn_videos = 2\nroot = "{root}"', tmp_path / "o")
    result = runner.invoke(app, ["inspect", str(spec)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, _output(result)
    assert "6 items" in result.output and "0 found, 2 missing (written by the first run)" in result.output
    assert not root.exists()


@pytest.mark.engine
def test_inspect_starts_no_engine(tmp_path: Path) -> None:
    ann, media = videomme_fixture(tmp_path)
    spec = _write_spec(tmp_path / "spec.toml",
                       f'name = "videomme"\nannotations = "{ann}"\nmedia_root = "{media}"', tmp_path / "out")
    code = ("import sys; from typer.testing import CliRunner; from engine.cli import app; "
            f"r = CliRunner().invoke(app, ['inspect', {str(spec)!r}]); "
            "print(r.exit_code, sorted(m for m in ('ray', 'vllm', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert out.stdout.strip().splitlines()[-1] == "6 []", out.stderr  # 6: the fixture's missing video


def test_inspect_runs_the_preflight_of_run(tmp_path: Path) -> None:
    """An unknown family, a `tiny:` builder that does not exist, an unknown decoder and a model folder that
    does not exist: `run` stops on each (exit 2, every field named); inspect used to print its tables, exit 0."""
    root = tmp_path / "syn"
    spec = _write_spec(tmp_path / "spec.toml", f'name = "synthetic"\nn_videos = 2\nroot = "{root}"', tmp_path / "o")
    text = spec.read_text()
    text = text.replace('family = "qwen2_5_vl"\npath = "tiny:qwen2_5_vl"\nmax_frames = 16',
                        'family = "nope"\npath = "tiny:qwen2_5_vl"\nmax_frames = 16', 1)
    text = text.replace('id = "big"\nfamily = "qwen2_5_vl"\npath = "tiny:qwen2_5_vl"',
                        'id = "big"\nfamily = "qwen2_5_vl"\npath = "tiny:nope"', 1)
    text += '\n[decode]\ndecoder = "nope"\n'
    spec.write_text(text)
    for command in ("inspect", "run"):
        result = runner.invoke(app, [command, str(spec)], env={"COLUMNS": "200"})
        out = _output(result)
        assert result.exit_code == 2, (command, out)
        for field in ("models.0.family: unknown model family 'nope'", "models.1.path: no tiny checkpoint for 'nope'",
                      "decode.decoder: unknown decoder 'nope'"):
            assert field in out, (command, field, out)
        assert "items per task" not in out and not (tmp_path / "o").exists()
    text = spec.read_text().replace('"tiny:nope"', f'"{tmp_path / "no-such-model"}"')
    spec.write_text(text.replace('family = "nope"', 'family = "qwen2_5_vl"').replace('decoder = "nope"', 'decoder = "pyav"'))
    result = runner.invoke(app, ["inspect", str(spec)], env={"COLUMNS": "200"})
    assert result.exit_code == 2 and "models.1.path: " in _output(result) and "no such checkpoint directory" in \
        _output(result), _output(result)
