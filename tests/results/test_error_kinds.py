"""Failures a rerun can fix (transient) told apart from those it cannot (permanent: missing or undecodable media),
on the rows, in `framesweep status` and in `run`'s exit.

The model is served over the OpenAI-compatible path at a loopback port where nothing listens: no request
for a video that is missing or undecodable is ever sent (those jobs fail before the engine), and every request
that is sent fails to connect, as it does when the server is down (a real transient failure)."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import polars as pl
from helpers.dataset_files import videomme_fixture
from typer.testing import CliRunner

from engine.cli.app import EXIT_FAILED_JOBS, EXIT_PERMANENT_FAILURES, app
from engine.results import ResultsDir

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spec(tmp_path: Path, budgets: str, video: str = "random.mp4") -> Path:
    ann, media = videomme_fixture(tmp_path)  # video aBcD1234xyz is missing
    shutil.copy(ASSETS / video, media / "fFjv93ACGo8.mp4")  # and fFjv93ACGo8 is not a video (by default)
    spec = tmp_path / "spec.toml"
    spec.write_text(f"""
sweep_id = "kinds"
[[models]]
id = "remote"
family = "qwen2_5_vl"
path = "tiny"
backend = "openai"
[models.http]
base_url = "http://127.0.0.1:{_closed_port()}"
max_retries = 0
[dataset]
name = "videomme"
annotations = "{ann}"
media_root = "{media}"
{budgets}
""")
    return spec


def test_missing_and_undecodable_media_fail_for_good_exit_6(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "[[budgets]]\nframes = 2\n")
    out = tmp_path / "out"
    runner = CliRunner()
    res = runner.invoke(app, ["run", str(spec), "--out", str(out)], env={"COLUMNS": "200"})
    assert res.exit_code == EXIT_PERMANENT_FAILURES == 6, res.output
    assert "6 job(s) failed for good" in res.output and "fix the media or drop the items" in res.output
    assert "rerun the same command to retry" not in res.output
    rows = ResultsDir.open(out).scan().collect()
    assert rows.height == 6 and set(rows["error_kind"]) == {"permanent"} and set(rows["error_type"]) == {"DecodeError"}
    by_video = dict(rows.group_by("video_id").agg(pl.col("error").first()).iter_rows())
    assert "aBcD1234xyz.mp4: FileNotFoundError" in by_video["aBcD1234xyz"]
    assert "fFjv93ACGo8.mp4: InvalidDataError" in by_video["fFjv93ACGo8"]
    status = runner.invoke(app, ["status", str(out)], env={"COLUMNS": "200"})
    assert status.exit_code == 0 and "0 done, 6 failed, 0 pending" in status.output, status.output
    assert "6 failed job(s) are permanent" in status.output and "transient" not in status.output
    assert "videomme aBcD1234xyz (3 job(s)):" in status.output and "No such file" in status.output
    # a rerun tries them again (a replaced file would now decode) and fails them the same way
    again = runner.invoke(app, ["run", str(spec), "--out", str(out)], env={"COLUMNS": "200"})
    assert again.exit_code == 6 and "6 job(s) failed for good" in again.output, again.output


def test_transient_failures_beside_permanent_ones_exit_4(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "[[budgets]]\nframes = 0\n[[budgets]]\nframes = 2\n")
    out = tmp_path / "out"
    runner = CliRunner()
    res = runner.invoke(app, ["run", str(spec), "--out", str(out)], env={"COLUMNS": "200"})
    assert res.exit_code == EXIT_FAILED_JOBS == 4, res.output
    assert "6 job(s) failed for good" in res.output
    assert "6 job(s) failed for a transient reason" in res.output and "rerun the same command" in res.output
    rows = ResultsDir.open(out).scan().collect()
    kinds = dict(rows.group_by("frames").agg(pl.col("error_kind").unique().sort()).iter_rows())
    assert kinds == {0: ["transient"], 2: ["permanent"]}  # text-only: the server is down; f2: the media
    status = runner.invoke(app, ["status", str(out)], env={"COLUMNS": "200"})
    assert "6 failed job(s) are permanent" in status.output and "6 failed job(s) are transient" in status.output


def test_a_video_over_max_source_pixels_is_refused_before_decoding_for_good(tmp_path: Path) -> None:
    from engine.frames.decode import DECODE_CALLS

    spec = _spec(tmp_path, "[[budgets]]\nframes = 2\n[decode]\nmax_source_pixels = 6000\n", video="tiny.mp4")
    out = tmp_path / "out"
    calls = sum(DECODE_CALLS.values())
    res = CliRunner().invoke(app, ["run", str(spec), "--out", str(out)], env={"COLUMNS": "200"})
    assert res.exit_code == EXIT_PERMANENT_FAILURES, res.output
    assert sum(DECODE_CALLS.values()) == calls  # nothing decoded: the 96x64 video is refused after its probe
    rows = ResultsDir.open(out).scan().filter(pl.col("video_id") == "fFjv93ACGo8").collect()
    assert set(rows["error_type"]) == {"SourceTooLargeError"} and set(rows["error_kind"]) == {"permanent"}
    assert "fFjv93ACGo8.mp4: 96x64 (0.0 MP per frame, 0 MiB as RGB) is over [decode] max_source_pixels = 6000" \
        in rows["error"][0]
