"""lmms-eval logs holding values no audit can use: a NaN id, a NaN score, JSON nested 100,000 deep.

A NaN `doc_id` was imported as item `nan` (a key no run ever matches) and a NaN `score` as a wrong answer, silently;
a results.json nested 100,000 deep ended `import-lmms-eval` with a RecursionError traceback. Now a sample that cannot
be keyed refuses the import (exit 2, nothing written) naming its line, one without a usable score is kept as an error
row naming its line (counted, and a warning), and the deep file is one sentence naming it (exit 2).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.cli import app
from engine.results import ResultsDir
from engine.results.lmms_eval import import_lmms_eval

RUN = "20250101_120000"


def _sample(doc_id: object, score: object, pred: str = "A") -> dict:
    return {"doc_id": doc_id, "target": "A", "filtered_resps": [pred], "input": f"Q{doc_id}",
            "videomme_perception_score": {"pred_answer": pred, "answer": "A", "score": score}}


def _log(root: Path, samples: list[dict], results: str | None = None) -> Path:
    d = root / "model"
    d.mkdir(parents=True)
    config = {"model_name": "m", "config": {"model": "qwen2_5_vl", "model_args": "pretrained=m,max_num_frames=8"}}
    (d / f"{RUN}_results.json").write_text(results if results is not None else json.dumps(config))
    samples_file = d / f"{RUN}_samples_videomme.jsonl"
    samples_file.write_text("".join(json.dumps(s) + "\n" for s in samples))  # NaN as lmms-eval's json.dumps writes it
    return samples_file


@pytest.mark.parametrize(("doc_id", "says"), [(float("nan"), "doc_id is nan"), (float("inf"), "doc_id is inf"),
                                              (None, "no doc_id or question_id")])
def test_a_sample_that_cannot_be_keyed_refuses_the_import_naming_its_line(tmp_path: Path, doc_id: object,
                                                                          says: str) -> None:
    samples = _log(tmp_path / "logs", [_sample(0, 1), _sample(1, 0), _sample(doc_id, 1)])
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=rf"{samples.name}:3: {says}.* cannot be keyed"):
        import_lmms_eval([samples], out)
    res = CliRunner().invoke(app, ["import-lmms-eval", str(samples), "--out", str(out)])
    assert res.exit_code == 2 and f"{samples.name}:3: {says}" in " ".join(res.output.split()), res.output
    assert not (out / "results").exists() or not list((out / "results").glob("*.parquet"))  # nothing written


def test_a_nan_score_is_an_error_row_naming_its_line_never_a_wrong_answer(tmp_path: Path,
                                                                          caplog: pytest.LogCaptureFixture) -> None:
    samples = _log(tmp_path / "logs", [_sample(0, 1), _sample(1, float("nan")), _sample(2, 0, "B"),
                                       _sample(3, float("-inf"))])
    with caplog.at_level(logging.WARNING, logger="engine.results.lmms_eval"):
        summary = import_lmms_eval([samples], tmp_path / "out")
    assert (summary.rows, summary.unscored) == (4, 2)
    rows = {r["item_id"]: r for r in ResultsDir.open(tmp_path / "out").scan().collect().iter_rows(named=True)}
    assert set(rows) == {"0", "1", "2", "3"}  # no "nan" key
    assert [(rows[i]["status"], rows[i]["correct"]) for i in "02"] == [("ok", True), ("ok", False)]
    for i, line, value in (("1", 2, "nan"), ("3", 4, "-inf")):
        assert (rows[i]["status"], rows[i]["error_type"], rows[i]["correct"], rows[i]["score"]) == \
            ("error", "ImportError", None, None)
        assert rows[i]["error"] == f"{samples}:{line}: its score is {value}, not a number"
    (warning,) = [r.getMessage() for r in caplog.records]
    assert f"{samples}: 2 sample(s) without a usable score" in warning and "line(s) 2, 4" in warning


def test_a_nan_numeric_metric_leaves_the_others_read_as_correctness(tmp_path: Path) -> None:
    """A log whose metric is a bare number (0/1: correctness): one NaN made every other sample of the file a graded
    `open` score; now the NaN sample alone is an error row."""
    lines = [{"doc_id": i, "target": "A", "filtered_resps": ["A"], "acc": v} for i, v in enumerate([1, 0, float("nan")])]
    samples = _log(tmp_path / "logs", lines)
    summary = import_lmms_eval([samples], tmp_path / "out")
    rows = {r["item_id"]: r for r in ResultsDir.open(tmp_path / "out").scan().collect().iter_rows(named=True)}
    assert summary.unscored == 1 and rows["2"]["error"] == f"{samples}:3: its metric acc is nan, not a number"
    assert [(rows[i]["task_kind"], rows[i]["correct"]) for i in "01"] == [("mcq", True), ("mcq", False)]


@pytest.mark.parametrize("where", ["results", "samples"])
def test_json_nested_100000_deep_is_one_sentence_and_exit_2(tmp_path: Path, where: str) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    if where == "results":
        samples = _log(tmp_path / "logs", [_sample(0, 1)], results=deep)
        named = str(samples.with_name(f"{RUN}_results.json"))
        says = "not readable as JSON (nested too deeply)"
    else:
        samples = _log(tmp_path / "logs", [_sample(0, 1)])
        samples.write_text(samples.read_text() + deep + "\n")
        named, says = f"{samples}:2", "JSON nested too deeply to read"
    res = CliRunner().invoke(app, ["import-lmms-eval", str(samples), "--out", str(tmp_path / "out")])
    flat = " ".join(res.output.split())
    assert res.exit_code == 2 and isinstance(res.exception, SystemExit), res.output
    assert f"{named}: {says}" in flat and "Traceback" not in flat and "RecursionError" not in flat, res.output
