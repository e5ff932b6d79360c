"""Matched grids across models and flows between two checkpoints."""

from __future__ import annotations

import polars as pl
from helpers.metric_rows import collect_both, frame, lazy

from engine.metrics.crossmodel import checkpoint_flows, cross_model_matched, matched_grid
from engine.metrics.oracle import fixed_accuracy


def _rows() -> pl.LazyFrame:
    # A supports text, f4, f8; B's context stops at f4. B has no text row for i3.
    a = frame({"i1": "110", "i2": "011", "i3": "10."}, model="A", dataset="x",
              budgets={"text": 0, "f4": 4, "f8": 8})
    b = frame({"i1": "01", "i2": "11", "i3": ".1"}, model="B", dataset="x", budgets={"text": 0, "f4": 4})
    solo = frame({"j": "1"}, model="A", dataset="y", budgets={"text": 0})
    return lazy(a + b + solo)


def test_matched_grid_is_what_every_model_supports() -> None:
    got = collect_both(matched_grid(_rows()))
    assert got.to_dicts() == [{"dataset": "x", "protocol_id": "default", "models": ["A", "B"], "grid": ["text", "f4"]},
                              {"dataset": "y", "protocol_id": "default", "models": ["A"], "grid": ["text"]}]
    only_a = collect_both(matched_grid(_rows(), models=["A"]))
    assert only_a.filter(pl.col("dataset") == "x")["grid"].to_list() == [["text", "f4", "f8"]]


def test_cross_model_metrics_use_common_items_on_the_matched_grid() -> None:
    cm = cross_model_matched(_rows())
    m = collect_both(cm).filter(pl.col("dataset") == "x")
    assert sorted(m["item_id"].unique().to_list()) == ["i1", "i2"]  # i3 lacks B's text answer
    assert sorted(m["budget_id"].unique().to_list()) == ["f4", "text"]
    acc = collect_both(fixed_accuracy(cm)).filter(pl.col("dataset") == "x")
    assert acc.select("model_id", "budget_id", "accuracy").rows() == [
        ("A", "text", 0.5), ("A", "f4", 1.0), ("B", "text", 0.5), ("B", "f4", 1.0)]


def test_checkpoint_flows_at_each_shared_budget() -> None:
    got = collect_both(checkpoint_flows(_rows(), "A", "B"))
    assert got.rows() == [("x", "text", 0, 1, 1, 2, 0.0, 1.0), ("x", "f4", 4, 1, 0, 3, 1 / 3, 1 / 3)]
