"""`framesweep status` prints rates in points, as `metrics` does (it printed fractions to three places)."""

from __future__ import annotations

import re
from pathlib import Path

from helpers.metric_rows import frame
from typer.testing import CliRunner

from engine.cli.app import app
from engine.results.store import ResultStore

BUDGETS = {"text": 0, "f4": 4, "f8": 8}


def test_status_prints_net_churn_and_accuracy_in_points(tmp_path: Path) -> None:
    # text->f4: a rescued, b harmed, c right at both, d wrong at both: net 0, churn 2/4, accuracy at f4 2/4;
    # f4->f8: a and c harmed: net -2/4, churn 2/4, accuracy at f8 0
    rows = frame({"a": "010", "b": "100", "c": "110", "d": "000"}, budgets=BUDGETS)
    with ResultStore(tmp_path) as store:
        store.write_manifest({"sweep_id": "t", "expected_jobs": {"m": {b: 4 for b in BUDGETS}}})
        store.add(rows)
        store.commit()
    res = CliRunner().invoke(app, ["status", str(tmp_path)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    table = [[c.strip() for c in line.strip("│ ").split("│")] for line in res.stdout.splitlines()
            if re.match(r"^│\s*(text|f4)\s*│\s*f", line)]  # the churn table's rows (from, to, ...)
    cells = {(r[0], r[1]): r for r in table}
    assert cells[("text", "f4")] == ["text", "f4", "4", "1", "1", "+0.0", "50.0", "50.0"], res.stdout
    assert cells[("f4", "f8")] == ["f4", "f8", "4", "0", "2", "-50.0", "50.0", "0.0"], res.stdout
    assert "0.500" not in res.stdout
