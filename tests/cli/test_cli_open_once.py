"""Each command opens its results directory once (`ResultsDir.open`: the manifest read, each footer checked), and
hands the opened value on: `run` opens it when it holds the directory and its ending (the tables it prints and
`summary.json`) reads that same value relisted, not the directory again.

`run` runs in this process with `SureEngine` lent in place of the engines it would start (no process starts:
what is counted is the reading of the directory, not the engine)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from helpers.specs import small_spec_dict, write_toml
from helpers.sure_results import SureEngine
from typer.testing import CliRunner

from engine.adaptive.predictions import write_predictions
from engine.cli.app import app
from engine.results import store
from engine.results.directory import ResultsDir
from engine.results.schema import PREDICTION_SCHEMA
from engine.sweep import scheduler


@pytest.fixture
def opens(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every `ResultsDir.open` of the test, in order."""
    seen: list[Path] = []
    real = ResultsDir.open.__func__  # type: ignore[attr-defined]

    def counting(cls: type[ResultsDir], out_dir: Any, **kw: Any) -> ResultsDir:
        seen.append(Path(out_dir))
        return real(cls, out_dir, **kw)

    monkeypatch.setattr(ResultsDir, "open", classmethod(counting))
    return seen


@pytest.fixture
def footers(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every shard footer checked (`shard_problem` without reading the pages), in order."""
    seen: list[Path] = []
    real = store.shard_problem

    def counting(path: Path, full: bool = False, **kw: Any) -> str | None:
        if not full:
            seen.append(path)
        return real(path, full, **kw)

    monkeypatch.setattr(store, "shard_problem", counting)
    return seen


@pytest.fixture
def lent_engines(monkeypatch: pytest.MonkeyPatch) -> None:
    async def lend(spec: Any, **_: Any) -> dict[str, Any]:
        return {m.id: SureEngine() for m in spec.models}

    monkeypatch.setattr(scheduler, "start_backends", lend)


def _run(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    d = small_spec_dict(out)
    d["dataset"]["n_videos"] = 1
    res = CliRunner().invoke(app, ["run", str(write_toml(tmp_path / "spec.toml", d))])
    assert res.exit_code == 0, res.output
    return out


def test_run_opens_its_results_directory_once(tmp_path: Path, opens: list[Path], lent_engines: None) -> None:
    out = _run(tmp_path)
    assert opens == [out]  # before: three times (the plan, the printed tables, summary.json)
    doc = json.loads((out / "summary.json").read_text())
    assert doc["jobs"]["ok"] == 12 and {r["n_items"] for r in doc["accuracy"]} == {3}  # the ending saw every row


def test_a_resumed_run_opens_it_once_too(tmp_path: Path, opens: list[Path], lent_engines: None) -> None:
    out = _run(tmp_path)
    opens.clear()
    _run(tmp_path)
    assert opens == [out]


@pytest.mark.parametrize("command", [["status"], ["metrics"], ["metrics", "--json", "-"], ["export", "--to"],
                                     ["report", "-o"]])
def test_each_reading_command_opens_it_once(tmp_path: Path, opens: list[Path], lent_engines: None,
                                            command: list[str]) -> None:
    out = _run(tmp_path)
    opens.clear()
    extra = {"--to": [str(tmp_path / "artifact")], "-o": [str(tmp_path / "report.html")]}
    args = [command[0], str(out), *command[1:], *extra.get(command[-1], [])]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert opens == [out], args


def test_each_footer_is_checked_once_per_command(tmp_path: Path, footers: list[Path], lent_engines: None) -> None:
    """A resumed `run` checks each shard's footer once (its ending reads the shards it committed, not the others
    again), and
    `report` checks OUT's predictions once (before: listed and checked twice, outside the `ResultsDir`)."""
    out = _run(tmp_path)
    footers.clear()
    _run(tmp_path)  # resumed: its plan checks every committed shard, its ending none of them again
    assert footers and len(footers) == len(set(footers))
    write_predictions(out, pl.DataFrame([{"predictor_id": "p", "dataset": "synthetic", "item_id": "x",
                                          "predicted_frames": 2, "parse_status": "exact"}],
                                        schema_overrides={k: PREDICTION_SCHEMA[k] for k in ("predicted_frames",)}))
    for args in (["status", str(out)], ["report", str(out), "-o", str(tmp_path / "r.html")]):
        footers.clear()
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.output
        assert footers and sorted(footers) == sorted(set(footers)), args
