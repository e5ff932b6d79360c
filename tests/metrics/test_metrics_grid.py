"""The matched grid, budget order, exclusions and trajectory tables."""

from __future__ import annotations

import polars as pl
from metric_rows import BUDGETS, collect_both, frame, lazy, row, sweep_a
from polars.testing import assert_frame_equal

from engine.metrics.basic import budget_order, fixed_accuracy, transitions
from engine.metrics.grid import budget_table, grid_summary, matched
from engine.metrics.trajectories import trajectory_patterns, trajectory_table, trajectory_wide


def test_budget_table_orders_by_cost_and_keeps_other_policies_off_the_chain() -> None:
    rows = lazy(sweep_a(with_alt=True))
    got = collect_both(budget_table(rows).select("budget_id", "frames", "budget_rank", "on_chain", "chain_rank"))
    want = pl.DataFrame({
        "budget_id": ["text", "f4", "f8", "f16", "f16-random"],
        "frames": [0, 4, 8, 16, 16],
        "budget_rank": [0, 1, 2, 3, 4],
        "on_chain": [True, True, True, True, False],
        "chain_rank": [0, 1, 2, 3, None],
    }, schema_overrides={"frames": pl.Int32, "budget_rank": pl.Int64, "chain_rank": pl.Int64})
    assert_frame_equal(got, want)


def test_uniform_wins_a_policy_tie_and_the_majority_policy_wins_otherwise() -> None:
    tie = [row("m", "d", "i", "text", 0, "1"), row("m", "d", "i", "f8", 8, "1"),
           row("m", "d", "i", "f8-rand", 8, "0", policy="random")]
    got = collect_both(budget_table(lazy(tie)).select("budget_id", "on_chain"))
    assert got.rows() == [("text", True), ("f8", True), ("f8-rand", False)]
    majority = [row("m", "d", "i", "f4-r", 4, "1", policy="random"), row("m", "d", "i", "f8-r", 8, "1", policy="random"),
                row("m", "d", "i", "f8", 8, "1")]
    got = collect_both(budget_table(lazy(majority)).select("budget_id", "on_chain", "chain_rank"))
    assert got.rows() == [("f4-r", True, 0), ("f8", False, None), ("f8-r", True, 1)]


def test_pixels_order_budgets_with_equal_frames() -> None:
    rows = [row("m", "d", "i", "f8-big", 8, "1", pixels_total=800), row("m", "d", "i", "f8-small", 8, "1",
                                                                            pixels_total=80),
            row("m", "d", "i", "text", 0, "1")]
    got = collect_both(budget_order(lazy(rows)))
    assert got["budget_id"].to_list() == ["text", "f8-small", "f8-big"]
    assert got["budget_rank"].to_list() == [0, 1, 2]


def test_matched_keeps_complete_items_and_counts_the_excluded() -> None:
    rows = lazy(sweep_a(with_alt=True))
    m = collect_both(matched(rows))
    assert sorted(m["item_id"].unique().to_list()) == ["a", "b", "c", "e"]
    assert m.height == 16  # 4 items x 4 chain budgets; the alternate policy is not in the grid
    assert m.filter(pl.col("item_id") == "a").sort("rank")["c"].to_list() == [False, True, True, False]
    summary = collect_both(grid_summary(rows))
    assert summary.to_dicts() == [{"model_id": "m", "dataset": "d", "grid": ["text", "f4", "f8", "f16"],
                                   "n_items": 4, "n_excluded": 2}]


def test_a_budget_nobody_finished_excludes_everyone() -> None:
    rows = frame({"a": "1e", "b": "0e"}, budgets={"text": 0, "f4": 4})
    summary = collect_both(grid_summary(lazy(rows)))
    assert summary.select("n_items", "n_excluded").row(0) == (0, 2)
    assert collect_both(matched(lazy(rows))).height == 0
    assert collect_both(fixed_accuracy(lazy(rows))).height == 0


def test_basic_entry_points_keep_their_columns() -> None:
    rows = lazy(sweep_a())
    acc = collect_both(fixed_accuracy(rows))
    assert acc.columns == ["model_id", "dataset", "budget_id", "n_items", "accuracy", "frames", "budget_rank"]
    assert acc["accuracy"].to_list() == [0.5, 0.5, 0.5, 0.25]
    assert acc["n_items"].to_list() == [4, 4, 4, 4]
    flows = collect_both(transitions(rows))
    assert flows.columns == ["model_id", "dataset", "from", "to", "rescue", "harm", "n", "net", "churn"]
    assert flows.select("rescue", "harm").rows() == [(1, 1), (1, 1), (0, 1)]


def test_score_track_holds_open_items_only() -> None:
    rows = sweep_a() + frame({"p": "10", "q": "11"}, budgets={"text": 0, "f4": 4}, dataset="open",
                             per_item={"p": {"task_kind": "open"}, "q": {"task_kind": "open"}})
    rows = [r if r.task_kind == "mcq" else _graded(r) for r in rows]
    ms = collect_both(matched(lazy(rows), track="score"))
    assert set(ms["dataset"]) == {"open"} and ms.height == 4
    assert ms["c"].null_count() == 4
    summary = collect_both(grid_summary(lazy(rows), track="score"))
    assert summary.select("dataset", "n_items", "n_excluded").rows() == [("open", 2, 0)]


def _graded(r):  # open items carry a score and no correctness
    r.correct = None
    return r


def test_trajectory_table_aligns_lists_with_the_grid() -> None:
    got = collect_both(trajectory_table(lazy(sweep_a())))
    d = got.filter(pl.col("item_id") == "d").to_dicts()[0]
    assert d["budgets"] == ["text", "f4", "f8", "f16"]
    assert d["correct"] == [True, True, None, True]
    assert d["score"] == [1.0, 1.0, None, 1.0]
    assert (d["n_missing"], d["complete"]) == (1, False)
    f = got.filter(pl.col("item_id") == "f").to_dicts()[0]
    assert f["correct"] == [True, None, True, True] and not f["complete"]
    assert got.filter(pl.col("complete"))["item_id"].to_list() == ["a", "b", "c", "e"]


def test_trajectory_wide_spreads_budgets_into_columns() -> None:
    got = collect_both(trajectory_wide(lazy(sweep_a()), ["text", "f16"]))
    assert "correct@text" in got.columns and "confidence@f16" in got.columns
    assert got.filter(pl.col("item_id") == "c").select("correct@text", "correct@f16").row(0) == (True, True)
    assert got.filter(pl.col("item_id") == "d")["complete"].item() is True  # d has both chosen budgets


def test_trajectory_patterns_count_each_right_wrong_sequence() -> None:
    rows = frame({"a": "01", "b": "01", "c": "10", "d": "11", "e": "1."}, budgets={"text": 0, "f4": 4})
    got = collect_both(trajectory_patterns(matched(lazy(rows))))
    assert got.select("pattern", "n").rows() == [("01", 2), ("10", 1), ("11", 1)]


def test_budgets_constant_is_the_cost_order() -> None:
    assert list(BUDGETS) == ["text", "f4", "f8", "f16"]


def test_adaptive_rows_are_not_grid_budgets() -> None:
    import polars as pl

    from engine.metrics.grid import grid_budgets
    from engine.results.schema import RESULT_SCHEMA

    def r(budget: str, frames: int, policy: str = "uniform") -> dict:
        return {"model_id": "m", "dataset": "d", "item_id": "i", "budget_id": budget, "frames": frames,
                "policy": policy, "seed": 0, "status": "ok", "correct": True}

    rows = pl.LazyFrame([r("text", 0), r("f4", 4), r("pred-m", 4), r("cascade-tau0.5", 4, "cascade")],
                        schema={k: RESULT_SCHEMA[k] for k in r("x", 0)})
    rows = rows.with_columns(pl.lit(None, dtype=t).alias(c) for c, t in RESULT_SCHEMA.items()
                             if c not in r("x", 0))
    assert grid_budgets(rows).collect()["budget_id"].to_list() == ["text", "f4"]
