"""`framesweep status` over a run's life: a run that is starting, the current run's pace, budgets in cost order
on imported rows."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from helpers.metric_rows import frame
from typer.testing import CliRunner

from engine.cli import app
from engine.metrics.status import driver_running, sweep_status
from engine.results.store import ResultStore

runner = CliRunner()


def test_status_while_the_run_holds_the_directory_but_has_no_plan_yet_says_it_is_starting(tmp_path: Path) -> None:
    with ResultStore(tmp_path):  # what a run does first: the directory's lock, before its items load
        res = runner.invoke(app, ["status", str(tmp_path)])
        assert res.exit_code == 0, res.output  # was: "no manifest.json", exit 2
        assert "a run is starting" in res.output and f"pid {os.getpid()}" in res.output
    # the lock let go (the file stays, naming this still-running process): no run is starting any more
    assert driver_running(tmp_path) is None
    res = runner.invoke(app, ["status", str(tmp_path)])
    assert res.exit_code == 2 and "no manifest.json" in res.output


def _at(rows: list, start: datetime, step_s: float) -> list:
    for i, r in enumerate(rows):
        r.finished_at = start + timedelta(seconds=step_s * i)
    return rows


def test_rate_and_eta_come_from_the_current_run_only(tmp_path: Path) -> None:
    budgets = {"text": 0, "f4": 4}
    started = datetime(2030, 1, 2, 12, 0, tzinfo=UTC)
    earlier = _at(frame({f"o{i}": "11" for i in range(5)}, budgets=budgets), started - timedelta(days=1), 0.01)
    mine = _at(frame({f"n{i}": "11" for i in range(6)}, budgets=budgets), started + timedelta(seconds=10), 10.0)
    with ResultStore(tmp_path) as store:  # 10 rows of an earlier run, 12 of this one over its first 2 minutes
        store.write_manifest({"sweep_id": "t", "expected_by_dataset": {"d": {"m": {"text": 20, "f4": 20}}},
                              "history": [{"started_at": (started - timedelta(days=1)).isoformat()},
                                          {"started_at": started.isoformat()}]})
        store.add(earlier + mine)
        store.commit()
    st = sweep_status(tmp_path)
    assert st.run_started_at == started and st.run_rows == 12
    # 12 rows from its start to its last row (2 minutes); the earlier run's rows, a day before, do not count
    assert st.jobs_per_min == 6.0
    assert st.driver is None and st.eta_min is None  # no driver runs: no ETA for the 18 pending jobs


def test_an_import_has_no_rate_and_lists_budgets_in_cost_order(tmp_path: Path) -> None:
    budgets = {"f16": 16, "f4": 4, "text": 0, "f32": 32}  # as text: f16 < f32 < f4 < text
    rows = _at(frame({"a": "0110", "b": "1011"}, budgets=budgets), datetime.now(UTC), 0.002)  # one import instant
    with ResultStore(tmp_path) as store:
        store.write_manifest({"sweep_id": "t", "source": "lmms-eval", "runs": []})  # what the importer writes
        store.add(rows)
        store.commit()
    st = sweep_status(tmp_path)
    assert st.per_budget["budget_id"].to_list() == ["text", "f4", "f16", "f32"]
    assert st.jobs_per_min is None and st.eta_min is None  # was: thousands of jobs a minute, ETA 0.0
    res = runner.invoke(app, ["status", str(tmp_path)])
    assert res.exit_code == 0 and "no run recorded (imported results)" in res.output


def test_a_rerun_that_has_not_recorded_its_plan_is_starting_not_the_last_run(tmp_path: Path) -> None:
    day_ago = datetime.now(UTC) - timedelta(days=1)
    rows = _at(frame({"a": "11", "b": "10"}, budgets={"text": 0, "f4": 4}), day_ago + timedelta(seconds=5), 1.0)
    with ResultStore(tmp_path) as store:  # the last run, a day ago
        store.write_manifest({"sweep_id": "t", "expected_by_dataset": {"d": {"m": {"text": 2, "f4": 2}}},
                              "history": [{"started_at": day_ago.isoformat()}]})
        store.add(rows)
        store.commit()
    with ResultStore(tmp_path):  # a rerun took the directory; its plan is not recorded yet
        res = runner.invoke(app, ["status", str(tmp_path)])
    assert res.exit_code == 0 and "a run is starting" in res.output, res.output
    assert "4 done, 0 failed, 0 pending" in res.output  # what is committed, still shown
    assert "started 1440" not in res.output and "jobs/min" not in res.output  # not the last run's pace as this one's
