"""`--json PATH` on every command that has a JSON document (`-`: the document alone on stdout), written by the
one JSON writer: no NaN reaches a file, a value JSON cannot hold is named, and the cascade report writes null
where a ratio is undefined."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from helpers.specs import small_spec_dict, write_toml
from typer.testing import CliRunner

from engine.adaptive.cascade_report import CASCADE_SCHEMA, CascadeReport, TimedRound, timing
from engine.backends.base import BackendBase, EngineRequest, EngineResult
from engine.cli.app import app
from engine.config import parse_spec
from engine.metrics.document import SCHEMA as METRICS_SCHEMA
from engine.sweep import Sweep

runner = CliRunner()


class LetterEngine(BackendBase):
    """Answers one letter with certainty (what these tests check is the output around the metrics)."""

    name = "fake"

    def __init__(self, letter: str) -> None:
        self.letter = letter

    async def start(self) -> dict[str, Any]:
        return {}

    async def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        return [EngineResult(r.request_id, text=self.letter, letter_logprobs={self.letter: 0.0}) for r in requests]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished sweep of two models (text, f2, f4, f8 on three synthetic videos): `tiny` answers A, `other` B."""
    out = tmp_path_factory.mktemp("json") / "out"
    model = small_spec_dict(out)["models"][0]
    spec = parse_spec(small_spec_dict(out, models=[model, {**model, "id": "other"}]))
    asyncio.run(Sweep(spec, backends={"tiny": LetterEngine("A"), "other": LetterEngine("B")}).run())
    return out


def _strict(text: str) -> Any:
    """JSON as a strict reader takes it (NaN and infinities are not JSON)."""
    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")
    return json.loads(text, parse_constant=refuse)


COMMANDS = {
    "metrics": (["metrics", "DIR", "--n-boot", "0"], METRICS_SCHEMA, "accuracy per budget"),
    "predictor-eval": (["predictor-eval", "DIR"], "framesweep.predictor/1", "no predictions match"),
    "checkpoints": (["checkpoints", "DIR", "--models", "tiny,other"], "framesweep.checkpoints/3", "temporal trap"),
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_json_path_writes_the_document_and_dash_prints_it_alone(results: Path, tmp_path: Path, name: str) -> None:
    args, schema, table = COMMANDS[name]
    argv = [str(results) if a == "DIR" else a for a in args]
    path = tmp_path / "doc.json"
    res = runner.invoke(app, [*argv, "--json", str(path)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    doc = _strict(path.read_text())
    assert doc["schema"] == schema and table in res.stdout and f"wrote {path}" in res.stdout
    res = runner.invoke(app, [*argv, "--json", "-"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert _strict(res.stdout) == doc  # stdout holds the document and nothing else (no table, no "wrote")


@pytest.mark.parametrize("args", [["metrics", "DIR"], ["predictor-eval", "DIR"], ["checkpoints", "DIR"],
                                  ["engines"], ["cascade", "SPEC", "--stages", "f2,f4"]])
def test_json_is_never_a_bare_flag(results: Path, args: list[str]) -> None:
    argv = [str(results) if a == "DIR" else a for a in args]
    res = runner.invoke(app, [*argv, "--json"], env={"COLUMNS": "200"})
    assert res.exit_code == 2 and "Option '--json' requires an argument" in res.output, res.output


def test_engines_json_path_writes_the_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`engines --json` was a flag that printed the list; it now takes a PATH like every other command."""
    monkeypatch.setenv("FRAMESWEEP_CACHE", str(tmp_path / "cache"))  # no recorded cluster: no engines, no Ray
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    path = tmp_path / "engines.json"
    res = runner.invoke(app, ["engines", "--json", str(path)])
    assert res.exit_code == 0 and f"wrote {path}" in res.stdout, res.output
    assert _strict(path.read_text()) == []
    res = runner.invoke(app, ["engines", "--json", "-"])
    assert res.exit_code == 0 and _strict(res.stdout) == [], res.output


def _report(**over: Any) -> CascadeReport:
    rounds = [TimedRound(round=1, order=["fixed", "cascade"], fixed_wall_s=1.2, cascade_wall_s=1.0)]
    fields: dict[str, Any] = dict(tau=0.5, stages=["f2", "f4"], n_items=9, accuracy=0.5, mean_frames_processed=3.0,
                                  mean_frames_decoded=3.0, wall_s=1.0, decode_passes=3, fixed_budget="f4",
                                  fixed_accuracy=0.5, fixed_mean_frames=4.0, fixed_wall_s=1.2, **timing(rounds))
    return CascadeReport(**{**fields, **over})


def _cascade(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rep: CascadeReport, *extra: str) -> tuple[Any, Path]:
    """`framesweep cascade` with the timed runs replaced by `rep` (tests/test_adaptive.py runs real cascades)."""
    import engine.adaptive.cascade as cascade_mod

    sessions: list[Path] = []

    async def run(spec: Any, stages: list[str], tau: float, session: Path, *_: Any, **__: Any) -> CascadeReport:
        sessions.append(Path(session))
        return rep

    monkeypatch.setattr(cascade_mod, "run_cascade", run)
    spec = write_toml(tmp_path / "s.toml", small_spec_dict(tmp_path / "out"))
    res = runner.invoke(app, ["cascade", str(spec), "--stages", "f2,f4", *extra], env={"COLUMNS": "200"})
    return res, sessions[0]


def test_cascade_json_path_is_the_sessions_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cascade.json"
    res, session = _cascade(tmp_path, monkeypatch, _report(), "--json", str(path))
    assert res.exit_code == 0, res.output
    assert path.read_bytes() == (session / "report.json").read_bytes()
    doc = _strict(path.read_text())
    assert doc["schema"] == CASCADE_SCHEMA and doc["ratio_median"] == pytest.approx(1.0 / 1.2)
    assert "cascade (online)" in res.stdout and "50.0" in res.stdout  # accuracy in points
    res, session = _cascade(tmp_path, monkeypatch, _report(), "--json", "-")
    assert res.exit_code == 0 and _strict(res.stdout) == _strict((session / "report.json").read_text()), res.output


def test_a_round_whose_fixed_run_took_no_time_has_a_null_ratio_not_nan(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The ratio of such a round was NaN, and the session's report.json held `NaN`, which is not JSON."""
    instant = TimedRound(round=1, order=["fixed", "cascade"], fixed_wall_s=0.0, cascade_wall_s=0.4)
    assert instant.ratio is None
    res, session = _cascade(tmp_path, monkeypatch, _report(fixed_wall_s=0.0, **timing([instant])))
    assert res.exit_code == 0, res.output
    doc = _strict((session / "report.json").read_text())
    assert doc["rounds"][0]["ratio"] is None and doc["ratio_median"] is None and doc["ratio_max"] is None
    assert "median n/a (range n/a-n/a over 1 rounds)" in " ".join(res.stdout.split())


def test_a_nan_in_the_cascade_report_is_refused_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A value the report cannot hold stops the command naming it; no report.json with NaN is left behind."""
    res, session = _cascade(tmp_path, monkeypatch, _report(mean_frames_decoded=float("nan")))
    assert res.exit_code == 1
    assert "nan at mean_frames_decoded cannot be written as JSON" in " ".join(res.output.split()), res.output
    assert not (session / "report.json").exists()
