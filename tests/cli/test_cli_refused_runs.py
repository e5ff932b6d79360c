"""A run refused before it records its plan leaves OUT as it found it: no folder it made (a wrong `--data`), and
nothing written into a folder of another sweep (its log included). In-process runs: each is refused before Ray or
an engine would start."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from helpers.specs import small_spec_dict, write_toml
from typer.testing import CliRunner

from engine.backends.base import BackendBase, EngineRequest, EngineResult
from engine.cli import app
from engine.config import parse_spec
from engine.sweep import Sweep

runner = CliRunner()


class _Answers(BackendBase):
    """Answers "A": it only makes another sweep's results folder without starting vLLM."""

    name = "answers"

    async def start(self) -> dict[str, Any]:
        return {}

    async def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        return [EngineResult(r.request_id, text="A", letter_logprobs={"A": 0.0}) for r in requests]


def _snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every path under `folder` with its bytes (None for a folder)."""
    return {str(p.relative_to(folder)): None if p.is_dir() else p.read_bytes() for p in sorted(folder.rglob("*"))}


def _wrong_data(tmp_path: Path, out: Path) -> Any:
    data = tmp_path / "not-videomme"
    data.mkdir(exist_ok=True)  # a folder, but not the release's layout: the items fail to load after OUT is taken
    return runner.invoke(app, ["run", "--model", "tiny:qwen2_5_vl", "--dataset", "videomme", "--data", str(data),
                               "--frames", "0", "--out", str(out)])


def test_a_run_refused_for_its_data_leaves_no_folder_it_made(tmp_path: Path, tiny_qwen25: Path) -> None:
    res = _wrong_data(tmp_path, tmp_path / "runs" / "quick")
    assert res.exit_code == 2 and "media_root does not exist" in res.output, res.output
    assert not (tmp_path / "runs").exists()  # OUT and the parent the run made are gone again
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("kept")
    res = _wrong_data(tmp_path, mine)
    assert res.exit_code == 2 and _snapshot(mine) == {"notes.txt": b"kept"}  # a folder that was there: as it was


def test_a_wrong_data_folder_is_named_before_anything_is_built(tmp_path: Path) -> None:
    (tmp_path / "videomme").mkdir()
    res = runner.invoke(app, ["run", "--model", "tiny:qwen2_5_vl", "--dataset", "videomme", "--data",
                              str(tmp_path / "videome"), "--out", str(tmp_path / "out")])
    assert res.exit_code == 2 and not (tmp_path / "out").exists()
    assert f"--data: {tmp_path / 'videome'}: no such folder (did you mean {tmp_path / 'videomme'}?)" in res.output


def test_a_run_refused_for_another_sweeps_folder_writes_nothing_there(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    d = small_spec_dict(theirs, sweep_id="theirs", budgets=[{"frames": 0}])
    d["dataset"]["n_videos"] = 1
    asyncio.run(Sweep(parse_spec(d), backends={"tiny": _Answers()}).run())
    before = _snapshot(theirs)
    assert "manifest.json" in before and ".lock" in before
    (theirs / ".lock").write_bytes(b"pid 1 on their-host\n")  # what their driver signed
    before = _snapshot(theirs)
    mine = write_toml(tmp_path / "mine.toml", {**d, "sweep_id": "mine"})
    res = runner.invoke(app, ["run", str(mine), "--out", str(theirs)])
    assert res.exit_code == 2, res.output
    assert f"{theirs} holds sweep 'theirs', not 'mine'" in res.output and "log:" not in res.output
    assert _snapshot(theirs) == before  # no log, no lock signed, no folder made
    assert os.listdir(theirs / "results")
