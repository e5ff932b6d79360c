"""import-lmms-eval keeps lmms-eval's own parsed answer and can read the raw responses again with any rule."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from engine.cli import app
from engine.results import ResultsDir
from engine.results.lmms_eval import find_runs, run_rows

# raw response, lmms-eval's pred_answer, answer; official / strict / lmms_eval read A B B / C D B / C D C
SAMPLES = [("Answer: C", "C", "C"), ("Best answer: D", "D", "D"), ("I think it is option B, not C", "C", "B")]


def _logs(root: Path) -> Path:
    d = root / "model"
    d.mkdir(parents=True)
    lines = []
    for i, (resp, parsed, answer) in enumerate(SAMPLES):
        info = {"question_id": f"q{i}", "pred_answer": parsed, "answer": answer, "score": int(parsed == answer)}
        lines.append(json.dumps({"doc_id": i, "target": answer, "resps": [[resp]], "filtered_resps": [resp],
                                 "doc": {"options": ["A. w", "B. x", "C. y", "D. z"]}, "videomme_perception_score": info}))
    (d / "20250101_000000_samples_videomme.jsonl").write_text("\n".join(lines) + "\n")
    return d


@pytest.mark.parametrize(("rule", "preds", "right"), [
    (None, ["C", "D", "C"], [True, True, False]),
    ("official", ["A", "B", "B"], [False, False, True]),
    ("strict", ["C", "D", "B"], [True, True, True]),
    ("lmms_eval", ["C", "D", "C"], [True, True, False]),
])
def test_reextract_with_each_rule(tmp_path: Path, rule: str | None, preds: list[str], right: list[bool]) -> None:
    (run,) = find_runs([_logs(tmp_path)])
    rows = list(run_rows(run, frames=8, extraction=rule))  # type: ignore[arg-type]
    assert [r.pred for r in rows] == preds
    assert [r.correct for r in rows] == right
    assert [r.pred_extracted for r in rows] == ["C", "D", "C"]  # lmms-eval's own reading, always kept
    assert {r.scoring for r in rows} == {"lmms-eval" if rule is None else f"lmms-eval:{rule}"}


def test_cli_extraction_option(tmp_path: Path) -> None:
    logs = _logs(tmp_path / "logs")
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["import-lmms-eval", str(logs), "--out", str(out), "--frames", "8",
                                   "--extraction", "strict"])
    assert res.exit_code == 0, res.output
    got = ResultsDir.open(out).scan().sort("item_id").collect()
    assert got["pred"].to_list() == ["C", "D", "B"] and got["pred_extracted"].to_list() == ["C", "D", "C"]
    assert got.filter(pl.col("correct")).height == 3
    bad = CliRunner().invoke(app, ["import-lmms-eval", str(logs), "--out", str(tmp_path / "o2"), "--frames", "8",
                                   "--extraction", "loose"])
    assert bad.exit_code == 2
