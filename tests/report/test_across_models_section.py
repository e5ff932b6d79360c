"""Models compared on one dataset: the report's "across models" section and `framesweep metrics`' tables show the
cross-model entries (each model on the matched grid) and the rescue and harm from one model to another, with the
numbers of hand-computed rows."""

from __future__ import annotations

import re
from pathlib import Path

from helpers.metric_rows import frame, write_sweep
from typer.testing import CliRunner

from engine.cli import app

# A answers text, f4, f8; B's context stops at f4, and B has no text row for i3 (so i3 is in no matched cell)
ROWS = (frame({"i1": "110", "i2": "011", "i3": "10."}, model="A", dataset="x", budgets={"text": 0, "f4": 4, "f8": 8})
        + frame({"i1": "01", "i2": "11", "i3": ".1"}, model="B", dataset="x", budgets={"text": 0, "f4": 4}))


def _cells(html: str, table_id: str) -> list[list[str]]:
    body = html[html.index(f'<table id="{table_id}">'):]
    body = body[:body.index("</table>")]
    return [re.findall(r"<t[dh]>(.*?)</t[dh]>", row, re.DOTALL) for row in body.split("<tr>")[1:]]


def test_the_report_and_the_terminal_show_models_side_by_side(tmp_path: Path) -> None:
    write_sweep(tmp_path / "out", ROWS)
    report = tmp_path / "r.html"
    res = CliRunner().invoke(app, ["report", str(tmp_path / "out"), "-o", str(report), "--n-boot", "0",
                                   "--compare", "A:B"])
    assert res.exit_code == 0, res.output
    html = report.read_text()
    assert "<h2>x: across models</h2>" in html
    # matched grid text, f4 over i1, i2 (both models answered both budgets):
    # A: text 1/2, f4 2/2, oracle 2/2; confused none (i1 right at text and f4) -> 0
    # B: text 1/2 (i2), f4 2/2, oracle 2/2; confused none
    assert _cells(html, "table-cross-model-0-0") == [
        ["model", "items", "text", "f4", "oracle", "headroom", "visual confusion"],
        ["A", "2", "50.0", "100.0", "100.0", "0.0", "0.0"],
        ["B", "2", "50.0", "100.0", "100.0", "0.0", "0.0"]]
    # A -> B: text over i1, i2 (B lacks i3's): i1 right -> wrong (harm), i2 wrong -> right (rescue);
    # f4 over i1, i2, i3: i1 right -> right, i2 right -> right, i3 wrong -> right (rescue)
    assert _cells(html, "table-checkpoint-flows-0") == [
        ["budget", "items", "rescue", "harm", "net", "churn"],
        ["text", "2", "1", "1", "0.0", "100.0"],
        ["f4", "3", "1", "0", "33.3", "33.3"]]
    res = CliRunner().invoke(app, ["metrics", str(tmp_path / "out"), "--n-boot", "0", "--compare", "A:B"],
                             env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    lines = [[c.strip() for c in ln.strip("│ ").split("│")] for ln in res.output.splitlines() if "│" in ln]
    assert ["A", "2", "50.0", "100.0", "100.0", "0.0", "0.0"] in lines
    assert ["text", "2", "1", "1", "0.0", "100.0"] in lines and ["f4", "3", "1", "0", "33.3", "33.3"] in lines
    assert "From A to B on x: items rescued and harmed per budget" in res.output
