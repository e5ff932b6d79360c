"""`framesweep status` while a sweep writes: counts per budget and the live churn summary."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.metric_rows import frame

from engine.metrics.status import sweep_status
from engine.results.store import ResultStore

BUDGETS = {"text": 0, "f4": 4, "f8": 8}


def _expect(store: ResultStore, n: int) -> None:
    store.write_manifest({"sweep_id": "t", "expected_jobs": {"m": {b: n for b in BUDGETS}}})


def test_live_churn_counts_only_items_answered_at_every_budget(tmp_path: Path) -> None:
    # a: 0->1->1 (rescue at text->f4), b: 1->0->1 (harm, then rescue), c: 1->1->0 (harm at f4->f8),
    # d: only text and f4 so far (left out of the churn until f8 lands)
    rows = frame({"a": "011", "b": "101", "c": "110", "d": "01."}, budgets=BUDGETS)
    with ResultStore(tmp_path) as store:
        _expect(store, 4)
        store.add(rows)
        store.commit()
        st = sweep_status(tmp_path)
    assert (st.done, st.failed, st.pending) == (11, 0, 1)
    churn = {(r["from"], r["to"]): r for r in st.churn.iter_rows(named=True)}
    assert set(churn) == {("text", "f4"), ("f4", "f8")}
    t4, t8 = churn[("text", "f4")], churn[("f4", "f8")]
    assert (t4["n"], t4["rescue"], t4["harm"]) == (3, 1, 1)
    assert (t8["n"], t8["rescue"], t8["harm"]) == (3, 1, 1)
    assert t4["net"] == 0.0 and abs(t4["churn"] - 2 / 3) < 1e-12
    assert abs(t4["accuracy_to"] - 2 / 3) < 1e-12 and abs(t8["accuracy_to"] - 2 / 3) < 1e-12


@pytest.mark.engine
def test_status_command_prints_the_churn_table(tmp_path: Path) -> None:
    rows = frame({"a": "011", "b": "001"}, budgets=BUDGETS)
    with ResultStore(tmp_path) as store:
        _expect(store, 2)
        store.add(rows[:4])  # a complete; b text only
        store.commit()
        cmd = [sys.executable, "-m", "engine.cli", "status", str(tmp_path)]
        env = {**os.environ, "COLUMNS": "80"}
        first = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=600, env=env)
        store.add(rows[4:])
        store.commit()
    later = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=600, env=env)
    assert first.returncode == 0 and later.returncode == 0, first.stderr + later.stderr
    assert "4 done, 0 failed, 2 pending" in first.stdout and "live churn" in first.stdout, first.stdout + first.stderr
    assert "6 done, 0 failed, 0 pending" in later.stdout
    # text->f4 over a and b: one rescue (a), b stays wrong: net +50.0 points
    assert "+50.0" in later.stdout


@pytest.mark.engine
def test_budgets_and_transitions_listed_in_cost_order_default_chain_first(tmp_path: Path) -> None:
    # budget ids that sort differently as text (f16 < f4 < text; "cached" < "default"), with two chains
    budgets = {"text": 0, "f4": 4, "f16": 16}
    rows = frame({"a": "011", "b": "110"}, budgets=budgets)
    rows += frame({"a": "01", "b": "10"}, budgets={"f4-cached": 4, "f16-cached": 16},
                  per_item={"a": {"pipeline": "cached"}, "b": {"pipeline": "cached"}})
    with ResultStore(tmp_path) as store:
        order = ["text", "f4", "f4-cached", "f16", "f16-cached"]  # the spec's cost order, as the manifest lists it
        store.write_manifest({"sweep_id": "t", "expected_by_dataset": {"d": {"m": {b: 2 for b in order}}}})
        store.add(rows)
        store.commit()
    st = sweep_status(tmp_path)
    assert st.per_budget["budget_id"].to_list() == order
    assert [(r["protocol_id"], r["from"], r["to"]) for r in st.churn.iter_rows(named=True)] == [
        ("default", "text", "f4"), ("default", "f4", "f16"),
        ("cached", "text", "f4-cached"), ("cached", "f4-cached", "f16-cached")]
    cmd = [sys.executable, "-m", "engine.cli", "status", str(tmp_path)]
    out = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "COLUMNS": "80"}).stdout
    lines = out.splitlines()
    # each chain under a heading line, every number whole in 80 columns (a: text->f4 rescue: +50.0 points)
    assert lines.index("m on d, chain default") < lines.index("m on d, chain cached")
    assert "+50.0" in out and "…" not in out, out
