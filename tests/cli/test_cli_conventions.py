"""The usual command-line conventions: -h, --version, `python -m engine`, output to a pipe neither wrapped at
80 columns nor coloured, user text never recoloured by rich's highlighter, one name (OUT) for the results
directory in every command's usage."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.specs import small_spec_dict, write_toml
from typer.testing import CliRunner

from engine import __version__
from engine.cli import app

runner = CliRunner()
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _framesweep(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own, stdout and stderr into pipes (as under nohup or `> file`)."""
    base = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE")}
    return subprocess.run([sys.executable, "-m", "engine", *args], check=False, capture_output=True, text=True,
                          timeout=300, env={**base, **(env or {})}, stdin=subprocess.DEVNULL)


def test_version_and_short_help() -> None:
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0 and res.output.strip() == f"framesweep {__version__}"
    for args in (["-h"], ["run", "-h"], ["status", "-h"], ["engines", "up", "-h"]):
        res = runner.invoke(app, args)
        assert res.exit_code == 0 and "Usage:" in res.output, (args, res.output)


@pytest.mark.engine
def test_python_dash_m_engine_is_framesweep() -> None:
    res = _framesweep("--version")
    assert res.returncode == 0 and res.stdout.strip() == f"framesweep {__version__}", res.stderr


@pytest.mark.parametrize("command", ["status", "doctor", "metrics", "report", "export", "checkpoints",
                                     "predictor-eval", "export-manifest"])
def test_the_results_directory_is_named_out_in_every_usage(command: str) -> None:
    res = runner.invoke(app, [command, "-h"])
    usage = next(line for line in res.output.splitlines() if "Usage:" in line)
    assert re.search(r"\bOUT\b", usage) and not re.search(r"\b(DIR|OUT_DIR)\b", usage), usage


@pytest.mark.engine
def test_output_to_a_pipe_is_neither_wrapped_nor_coloured() -> None:
    res = _framesweep("datasets")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert max(len(line) for line in lines) > 80  # the adapters' field lists, each on one row
    assert not ANSI.search(res.stdout)
    one = next(line for line in lines if line.lstrip("│ ").startswith("videomme "))
    assert "media_root" in one and "subtitle_root" in one  # one adapter, one line


@pytest.mark.engine  # a CLI process
@pytest.mark.parametrize("args", [["run", "-h"], ["engines", "up", "--help"]])
def test_help_to_a_pipe_is_neither_wrapped_nor_coloured(args: list[str]) -> None:
    res = _framesweep(*args)
    assert res.returncode == 0 and res.stdout.startswith("Usage: framesweep "), res.stdout + res.stderr
    assert not ANSI.search(res.stdout) and not set("╭│╰─") & set(res.stdout)  # plain text, no panels
    (address,) = [line for line in res.stdout.splitlines() if line.lstrip().startswith("--address")]
    assert len(address) > 80 and address.rstrip().endswith(")."), address  # its whole help on its line


@pytest.mark.engine
def test_user_text_is_not_recoloured_by_the_highlighter(tmp_path: Path) -> None:
    out = tmp_path / "qwen2.5-vl:7b=fast('x')"
    out.mkdir()
    # colour forced (as on a terminal): the message is red as a whole, nothing inside it takes other colours
    res = _framesweep("status", str(out), env={"FORCE_COLOR": "1"})
    assert res.returncode == 2
    codes = ANSI.findall(res.stderr)
    assert codes and set(codes) <= {"\x1b[31m", "\x1b[0m"}, res.stderr  # red, then reset: one style only
    assert f"{out}: no results/ directory" in ANSI.sub("", res.stderr)


@pytest.mark.engine
def test_a_long_message_to_a_pipe_is_one_line(tmp_path: Path) -> None:
    spec = write_toml(tmp_path / "s.toml", small_spec_dict(tmp_path / "out"))
    res = _framesweep("run", str(spec), "--models", "m" * 100)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_log_records_to_a_pipe_are_plain_lines_not_padded(capfd: pytest.CaptureFixture[str]) -> None:
    """Rich's log layout fills the console's width, and a console into a pipe is unwrapped (100,000 columns):
    every `--verbose` record was padded to 100,000 characters, a run's first lines filled the 64 KiB pipe of a
    caller that reads at the end, and the run blocked on its next print. Into a file or a pipe a record is
    now one plain line (time, level, message), secrets redacted as before."""
    import logging

    from engine.cli._console import err_console, setup_logging
    from engine.runtime.secrets import register_secret

    assert not err_console.is_terminal  # stderr is captured: a pipe, as under nohup
    register_secret("sk-conventions-0123456789")
    try:
        setup_logging(verbose=True)
        logging.getLogger("engine.test").info("test: loading tiny (0/1 up) key=sk-conventions-0123456789")
        logging.getLogger("engine.test").debug("not shown")
    finally:
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)
    (line,) = capfd.readouterr().err.splitlines()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d INFO test: loading tiny \(0/1 up\) key=\S+", line), line
    assert "sk-conventions" not in line and len(line) < 120


def test_the_console_reads_columns_when_it_prints_not_when_it_is_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rich reads `COLUMNS` once, when a console is made; the CLI's consoles are made at import, so a `COLUMNS`
    set then (a test runner's worker sets 80) would fix every later print's width."""
    import io

    from engine.cli._console import UNWRAPPED, _Console

    monkeypatch.setenv("COLUMNS", "80")
    out = io.StringIO()
    made = _Console(file=out, markup=False)
    monkeypatch.setenv("COLUMNS", "200")
    assert made.width == 200
    made.print("x" * 150)
    assert out.getvalue() == "x" * 150 + "\n"  # one line: 80 columns would have wrapped it
    monkeypatch.delenv("COLUMNS")
    assert made.width == UNWRAPPED  # a file, no COLUMNS: unwrapped
    assert _Console(file=io.StringIO(), width=50).width == 50  # a width given is kept
