"""`run`'s ending tables and `status`'s live churn are what each registered metric declares (`Metric.live`): the
accuracy metric's accuracy per budget, the transitions metric's rescue/harm per transition, and a metric
registered in the test, with no CLI code edited.

Hand-computed rows (one model, dataset d, budgets text < f4 < f8): a 010, b 100, c 110, d 000. Accuracy per budget:
text 2/4, f4 2/4, f8 0/4. text->f4: a rescued, b harmed: net 0, churn 2/4; f4->f8: a and c harmed: net -2/4,
churn 2/4.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from helpers.metric_rows import frame
from typer.testing import CliRunner

from engine.cli._console import console
from engine.cli.app import app
from engine.cli.summary import print_tables, run_tables
from engine.metrics.grid import GROUP, matched
from engine.metrics.registry import METRICS, Live, Metric, register_metric
from engine.metrics.sections import Count, Table
from engine.results import ResultsDir
from engine.results.store import ResultStore

BUDGETS = {"text": 0, "f4": 4, "f8": 8}


def _sweep(out: Path) -> Path:
    with ResultStore(out) as store:
        store.write_manifest({"sweep_id": "t", "expected_jobs": {"m": {b: 4 for b in BUDGETS}}})
        store.add(frame({"a": "010", "b": "100", "c": "110", "d": "000"}, budgets=BUDGETS))
        store.commit()
    return out


def _cells(text: str, first: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("│ ").split("│")] for line in text.splitlines()
            if re.match(rf"^│\s*{first}\s*│", line)]


def _live_rows(rows: pl.LazyFrame) -> pl.LazyFrame:
    return matched(rows).group_by(*GROUP).agg(pl.col("item_id").n_unique().alias("n"))


def _live_blocks(rows: list[dict[str, Any]]) -> list[Table]:
    return [Table("", ["matched", "items"], [["matched items", Count(r["n"])] for r in rows], title="matched")]


@pytest.fixture
def matched_items() -> Iterator[Metric]:
    metric = register_metric(Metric(name="matched_items", tables=lambda inputs: {}, document=lambda rows, o: None,
                                    live=Live(_live_rows, _live_blocks)))
    try:
        yield metric
    finally:
        METRICS.unregister("matched_items")


def test_the_run_ends_with_each_metric_s_live_tables(tmp_path: Path) -> None:
    out = _sweep(tmp_path / "out")
    with console.capture() as cap:
        print_tables(run_tables(ResultsDir.open(out)))  # as `run` ends
    text = cap.get()
    assert "m on d, chain default" in text and "accuracy per budget" in text
    assert "rescue / harm per transition" in text
    assert _cells(text, "(text|f4|f8)") == [  # accuracy per budget, then rescue / harm per transition
        ["text", "4", "50.0"], ["f4", "4", "50.0"], ["f8", "4", "0.0"],
        ["text", "f4", "4", "1", "1", "+0.0", "50.0", "50.0"], ["f4", "f8", "4", "0", "2", "-50.0", "50.0", "0.0"]]
    assert METRICS.get("accuracy").live is not None and METRICS.get("transitions").live is not None


def test_a_registered_metric_s_live_table_reaches_run_and_status(matched_items: Metric, tmp_path: Path) -> None:
    out = _sweep(tmp_path / "out")
    with console.capture() as cap:
        print_tables(run_tables(ResultsDir.open(out)))  # as `run` ends
    assert _cells(cap.get(), "matched items") == [["matched items", "4"]]
    res = CliRunner().invoke(app, ["status", str(out)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert _cells(res.stdout, "matched items") == [["matched items", "4"]], res.stdout
    assert "live churn (items answered at every budget so far)" in res.stdout
