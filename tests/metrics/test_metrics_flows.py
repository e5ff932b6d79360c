"""Fixed accuracy, best fixed, oracle and rescue/harm flows on the hand-built sweep (n = 4).

Matched trajectories (text, f4, f8, f16): a 0110, b 1100, c 1011, e 0000.
"""

from __future__ import annotations

import polars as pl
from helpers.metric_rows import collect_both, frame, lazy, sweep_a
from polars.testing import assert_frame_equal

from engine.metrics.flows import all_pair_flows, pair_flows, state_flows, transitions
from engine.metrics.grid import GROUP, matched
from engine.metrics.oracle import best_fixed, fixed_accuracy, oracle

FLOW_SCHEMA = {"model_id": pl.String, "dataset": pl.String, "protocol_id": pl.String,
               "from": pl.String, "to": pl.String,
               "rescue": pl.Int64, "harm": pl.Int64, "n": pl.Int64, "net": pl.Float64, "churn": pl.Float64}


def _m() -> pl.LazyFrame:
    """The default chain (the alternate policy's budget is a chain of its own)."""
    return matched(lazy(sweep_a(with_alt=True))).filter(pl.col("protocol_id") == "default")


def _flows(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame([("m", "d", "default", *r) for r in rows], schema=FLOW_SCHEMA, orient="row")


def test_fixed_accuracy_per_budget() -> None:
    got = collect_both(fixed_accuracy(_m()))
    want = pl.DataFrame({"model_id": ["m"] * 4, "dataset": ["d"] * 4, "protocol_id": ["default"] * 4,
                         "budget_id": ["text", "f4", "f8", "f16"],
                         "rank": [0, 1, 2, 3], "frames": [0, 4, 8, 16], "n_items": [4] * 4,
                         "accuracy": [0.5, 0.5, 0.5, 0.25]})
    assert_frame_equal(got, want)


def test_best_fixed_breaks_ties_towards_the_cheapest_budget() -> None:
    got = collect_both(best_fixed(_m()))
    assert got.rows() == [("m", "d", "default", "text", 0.5)]
    # a tie between the two dearest budgets goes to the cheaper of them
    rows = frame({"a": "011", "b": "001", "c": "010"}, budgets={"text": 0, "f4": 4, "f8": 8})
    assert collect_both(best_fixed(matched(lazy(rows)))).rows() == [("m", "d", "default", "f4", 2 / 3)]


def test_oracle_and_headroom() -> None:
    got = collect_both(oracle(_m()))
    assert got.rows() == [("m", "d", "default", 4, 0.75, "text", 0.5, 0.25)]
    assert got.columns == [*GROUP, "n_items", "oracle_accuracy", "best_budget", "best_accuracy", "oracle_headroom"]


def test_consecutive_transitions() -> None:
    got = collect_both(transitions(_m()))
    want = _flows([("text", "f4", 1, 1, 4, 0.0, 0.5), ("f4", "f8", 1, 1, 4, 0.0, 0.5),
                   ("f8", "f16", 0, 1, 4, -0.25, 0.25)])
    assert_frame_equal(got, want)


def test_every_pair_of_the_grid() -> None:
    got = collect_both(all_pair_flows(_m()))
    want = _flows([("text", "f4", 1, 1, 4, 0.0, 0.5), ("text", "f8", 1, 1, 4, 0.0, 0.5),
                   ("text", "f16", 0, 1, 4, -0.25, 0.25), ("f4", "f8", 1, 1, 4, 0.0, 0.5),
                   ("f4", "f16", 1, 2, 4, -0.25, 0.75), ("f8", "f16", 0, 1, 4, -0.25, 0.25)])
    assert_frame_equal(got, want)


def test_chosen_pairs_in_either_direction() -> None:
    got = collect_both(pair_flows(_m(), [("f4", "f16"), ("f16", "text"), ("f4", "nope")]))
    # f16 -> text: a 0->0, b 0->1 rescue, c 1->1, e 0->0
    want = _flows([("f4", "f16", 1, 2, 4, -0.25, 0.75), ("f16", "text", 1, 0, 4, 0.25, 0.25)])
    assert_frame_equal(got.sort("from"), want.sort("from"))


def test_state_flows_split_every_item() -> None:
    got = collect_both(state_flows(_m()))
    assert got.select("from", "to", "stay_correct", "rescue", "harm", "stay_wrong", "n").rows() == [
        ("text", "f4", 1, 1, 1, 1, 4), ("f4", "f8", 1, 1, 1, 1, 4), ("f8", "f16", 1, 0, 1, 2, 4)]


def test_single_item_and_single_budget_edges() -> None:
    one = matched(lazy(frame({"z": "01"}, budgets={"text": 0, "f4": 4})))
    assert collect_both(transitions(one)).select("rescue", "harm", "n", "net", "churn").rows() == [(1, 0, 1, 1.0, 1.0)]
    assert collect_both(oracle(one)).select("oracle_accuracy", "best_budget", "oracle_headroom").rows() == [
        (1.0, "f4", 0.0)]
    text_only = matched(lazy(frame({"x": "1", "y": "0"}, budgets={"text": 0})))
    assert collect_both(transitions(text_only)).height == 0
    assert collect_both(oracle(text_only)).select("oracle_accuracy", "best_accuracy", "oracle_headroom").rows() == [
        (0.5, 0.5, 0.0)]


def test_per_category_split() -> None:
    m = matched(lazy(sweep_a(categories=True)))
    by = [*GROUP, "task_type"]
    acc = collect_both(fixed_accuracy(m, by))
    assert acc.filter(pl.col("task_type") == "x")["accuracy"].to_list() == [0.5, 1.0, 0.5, 0.0]
    assert acc.filter(pl.col("task_type") == "y")["accuracy"].to_list() == [0.5, 0.0, 0.5, 0.5]
    orc = collect_both(oracle(m, by))
    assert orc.select("task_type", "n_items", "oracle_accuracy", "best_budget", "oracle_headroom").rows() == [
        ("x", 2, 1.0, "f4", 0.0), ("y", 2, 0.5, "text", 0.0)]
