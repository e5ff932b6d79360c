"""`framesweep demo`, the Quickstart's first command, end to end through the CLI: the embedded grid runs the
trained tiny model on the real engine, the tables it prints hold the committed rows' own numbers, each chain
under a heading of its own, the audit ends it, and the model's accuracy rises with frames."""

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


def test_demo_runs_the_embedded_grid_and_prints_the_rows_numbers(tmp_path: Path, fs_cache: Path) -> None:
    out = tmp_path / "demo"
    r = subprocess.run([sys.executable, "-m", "engine.cli", "demo", "--out", str(out)], check=False, cwd=ROOT,
                       capture_output=True, text=True, timeout=600, env=dict(os.environ, COLUMNS="80"))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    rows = latest_rows(ResultsDir.open(out).scan()).collect()
    assert rows.height == 8 * 5 * 4 and (rows["status"] == "ok").all()  # 8 videos x 5 questions x 4 budgets
    assert "160 ok, 0 failed" in " ".join(r.stdout.split())
    lines = r.stdout.splitlines()
    assert "tiny-qwen2.5-vl-seen on synthetic, chain default" in lines  # whole, not wrapped into a table title
    printed = {}
    for line in lines:
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        if len(cells) == 3 and cells[0] in {"text", "f4", "f8", "f16"} and cells[0] not in printed:
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
        assert len(row) == 2, row  # the run's live table, then the audit's
        assert row[0].count("│") == 9, row  # the live table: from, to, n, rescue, harm, net, churn, acc(to)
        assert [c.strip() for c in row[0].strip("│ ").split("│")][2:5] == [str(len(items)), str(rescue), str(harm)]
    # the model sees: text only is near chance, 16 frames far above it
    assert acc.filter(pl.col("budget_id") == "f16")["acc"][0] >= acc.filter(pl.col("budget_id") == "text")["acc"][0] + 0.3
    # the audit ends the demo: per question kind, accuracy per budget as the rows have it
    audit = lines[lines.index(next(ln for ln in lines if ln.startswith("The audit of"))):]
    kinds = rows.group_by("task_type", "budget_id").agg(pl.col("correct").mean().alias("acc"))
    for kind in ("flash_count", "static_shape"):
        row, _flows = [ln for ln in audit if ln.strip("│ ").split("│")[0].strip() == kind]  # accuracy, then flows
        cells = [c.strip() for c in row.strip("│ ").split("│")]
        want = {b: a for k, b, a in kinds.iter_rows() if k == kind}
        assert cells[2:6] == [f"{100 * want[b]:.1f}" for b in ("text", "f4", "f8", "f16")], cells
