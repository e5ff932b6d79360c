"""`framesweep demo`, the Quickstart's first command, end to end through the CLI: the embedded grid
runs on the real engine (the suite's warm one: the demo's engine settings are the small spec's) and
the tables it prints hold the committed rows' own numbers, each chain under a heading of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from engine.results import ResultsDir
from engine.results.store import latest_rows

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)

ROOT = Path(__file__).resolve().parents[2]


def test_demo_runs_the_embedded_grid_and_prints_the_rows_numbers(tmp_path: Path, warm_engine: Path) -> None:
    out = tmp_path / "demo"
    r = subprocess.run([sys.executable, "-m", "engine.cli", "demo", "--out", str(out)], check=False, cwd=ROOT,
                       capture_output=True, text=True, timeout=600, env=dict(os.environ, COLUMNS="80"))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    rows = latest_rows(ResultsDir.open(out).scan()).collect()
    assert rows.height == 6 * 3 * 4 and (rows["status"] == "ok").all()  # 6 videos x 3 questions x 4 budgets
    assert "72 ok, 0 failed" in " ".join(r.stdout.split()) and "reused" in r.stdout
    lines = r.stdout.splitlines()
    assert "tiny-qwen2.5-vl on synthetic, chain default" in lines  # whole, not wrapped into a table title
    printed = {}
    for line in lines:
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        if len(cells) == 3 and cells[0] in {"text", "f4", "f8", "f16"}:
            printed[cells[0]] = (int(cells[1]), cells[2])
    acc = rows.group_by("budget_id").agg(pl.len().alias("n"), pl.col("correct").mean().alias("acc"))
    assert printed == {b: (n, f"{100 * a:.1f}") for b, n, a in acc.iter_rows()}
    # the transitions table: one row per step of the chain, rescue and harm counted from the rows
    correct = {(it, b): c for it, b, c in rows.select("item_id", "budget_id", "correct").iter_rows()}
    items = {it for it, _ in correct}
    steps = [("text", "f4"), ("f4", "f8"), ("f8", "f16")]
    for a, b in steps:
        rescue = sum(not correct[(i, a)] and correct[(i, b)] for i in items)
        harm = sum(correct[(i, a)] and not correct[(i, b)] for i in items)
        row = [ln for ln in lines if [c.strip() for c in ln.strip("│ ").split("│")][:2] == [a, b]]
        assert len(row) == 1, row
        assert [c.strip() for c in row[0].strip("│ ").split("│")][2:5] == [str(len(items)), str(rescue), str(harm)]
