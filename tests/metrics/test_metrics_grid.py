"""The matched grid, budget order, exclusions and trajectory tables."""

from __future__ import annotations

import polars as pl
from helpers.metric_rows import BUDGETS, collect_both, frame, lazy, row, sweep_a
from polars.testing import assert_frame_equal

from engine.metrics.basic import fixed_accuracy, transitions
from engine.metrics.grid import budget_table, grid_summary, matched, off_chain_budgets, protocol_id
from engine.metrics.trajectories import trajectory_patterns, trajectory_table, trajectory_wide


def test_budget_table_puts_each_protocol_on_its_own_chain_with_the_shared_text_budget() -> None:
    rows = lazy(sweep_a(with_alt=True))
    got = collect_both(budget_table(rows).select("protocol_id", "budget_id", "frames", "budget_rank", "chain_rank"))
    want = pl.DataFrame({
        "protocol_id": ["default"] * 4 + ["random-seed3"] * 2,
        "budget_id": ["text", "f4", "f8", "f16", "text", "f16-random"],
        "frames": [0, 4, 8, 16, 0, 16],
        "budget_rank": [0, 1, 2, 3, 0, 4],
        "chain_rank": [0, 1, 2, 3, 0, 1],
    }, schema_overrides={"frames": pl.Int32, "budget_rank": pl.Int64, "chain_rank": pl.Int64})
    assert_frame_equal(got, want)


def test_protocol_ids_follow_the_budget_id_rule_without_the_frames() -> None:
    cases = {"f16": {}, "f16-px50176": {"max_pixels": 50176}, "f32-random-seed1": {"policy": "random", "seed": 1},
             "f32-cached": {"pipeline": "cached"},
             "f16-s292-random-seed1-cached": {"short_side": 292, "policy": "random", "seed": 1, "pipeline": "cached"}}
    rows = [row("m", "d", "i", b, int(b.split("-")[0][1:]), "1", **extra) for b, extra in cases.items()]
    got = collect_both(lazy(rows).select("budget_id", protocol_id().alias("p")))
    assert got.rows() == [("f16", "default"), ("f16-px50176", "px50176"), ("f32-random-seed1", "random-seed1"),
                          ("f32-cached", "cached"), ("f16-s292-random-seed1-cached", "s292-random-seed1-cached")]


def test_rows_committed_before_budget_ids_named_the_pipeline_group_by_their_columns() -> None:
    """A cached rerun that reused the raw budget ids (f8 with pipeline=cached) forms its own chain."""
    rows = [row("m", "d", "i", "text", 0, "1"), row("m", "d", "i", "f8", 8, "0"),
            row("m", "d2", "i", "f8", 8, "1", pipeline="cached"), row("m", "d2", "i", "text", 0, "0")]
    got = collect_both(budget_table(lazy(rows)).select("dataset", "protocol_id", "budget_id"))
    assert got.rows() == [("d", "default", "text"), ("d", "default", "f8"), ("d2", "cached", "text"),
                          ("d2", "cached", "f8")]


def test_a_text_only_dataset_is_one_default_chain_and_adaptive_rows_are_on_none() -> None:
    rows = [row("m", "d", "i", "text", 0, "1"), row("m", "d", "i", "pred-p", 8, "1"),
            row("m", "d", "i", "casc", 8, "1", policy="cascade")]
    got = collect_both(budget_table(lazy(rows)).select("protocol_id", "budget_id"))
    assert got.rows() == [("default", "text")]
    assert collect_both(off_chain_budgets(lazy(rows)))["budget_id"].to_list() == ["casc", "pred-p"]


def test_pixels_order_budgets_with_equal_frames() -> None:
    rows = [row("m", "d", "i", "f8-big", 8, "1", pixels_total=800), row("m", "d", "i", "f8-small", 8, "1",
                                                                            pixels_total=80),
            row("m", "d", "i", "text", 0, "1")]
    got = collect_both(budget_table(lazy(rows)).sort("budget_rank"))
    assert got["budget_id"].to_list() == ["text", "f8-small", "f8-big"]
    assert got["budget_rank"].to_list() == [0, 1, 2]


def test_matched_keeps_complete_items_and_counts_the_excluded() -> None:
    rows = lazy(sweep_a(with_alt=True))
    m = collect_both(matched(rows))
    assert sorted(m["item_id"].unique().to_list()) == ["a", "b", "c", "e"]
    # 4 items x 4 budgets on the default chain; 3 items x (text, f16-random) on the random chain
    assert m.group_by("protocol_id").len().sort("protocol_id").rows() == [("default", 16), ("random-seed3", 6)]
    m = m.filter(pl.col("protocol_id") == "default")
    assert m.filter(pl.col("item_id") == "a").sort("rank")["c"].to_list() == [False, True, True, False]
    summary = collect_both(grid_summary(rows))
    assert summary.to_dicts() == [
        {"model_id": "m", "dataset": "d", "protocol_id": "default", "grid": ["text", "f4", "f8", "f16"],
         "n_items": 4, "n_excluded": 2},
        {"model_id": "m", "dataset": "d", "protocol_id": "random-seed3", "grid": ["text", "f16-random"],
         "n_items": 3, "n_excluded": 3}]


def test_an_item_with_no_row_on_a_chain_is_excluded_from_it_too() -> None:
    # x has no text row and no px50176 row: it is on the default chain (f4, f8) and on no row of the px chain;
    # it is missing budgets of both chains, so both count it as excluded (6 + 1 items on each chain)
    rows = sweep_a() + [row("m", "d", "x", "f4", 4, "1"), row("m", "d", "x", "f8", 8, "1")]
    rows += [row("m", "d", i, "f8-px50176", 8, "1", max_pixels=50176) for i in "abce"]
    summary = collect_both(grid_summary(lazy(rows)))
    assert summary.select("protocol_id", "n_items", "n_excluded").rows() == [("default", 4, 3),
                                                                            ("px50176", 4, 3)]


def test_a_budget_with_its_own_id_keeps_the_protocol_of_its_settings() -> None:
    # "mid": 12 frames, default settings, its own id: on the default chain between f8 and f16, no chain of its own
    rows = frame({"a": "1010", "b": "0110", "c": "1101"}, budgets={"text": 0, "f8": 8, "mid": 12, "f16": 16})
    summary = collect_both(grid_summary(lazy(rows)))
    assert summary.select("protocol_id", "grid").rows() == [("default", ["text", "f8", "mid", "f16"])]
    flows = collect_both(transitions(lazy(rows)))
    assert flows.select("from", "to", "rescue", "harm").rows() == [("text", "f8", 1, 1), ("f8", "mid", 1, 1),
                                                                  ("mid", "f16", 1, 2)]


def test_a_budget_nobody_finished_excludes_everyone() -> None:
    rows = frame({"a": "1e", "b": "0e"}, budgets={"text": 0, "f4": 4})
    summary = collect_both(grid_summary(lazy(rows)))
    assert summary.select("n_items", "n_excluded").row(0) == (0, 2)
    assert collect_both(matched(lazy(rows))).height == 0
    assert collect_both(fixed_accuracy(lazy(rows))).height == 0


def test_basic_entry_points_keep_their_columns() -> None:
    rows = lazy(sweep_a())
    acc = collect_both(fixed_accuracy(rows))
    assert acc.columns == ["model_id", "dataset", "protocol_id", "budget_id", "n_items", "accuracy", "frames",
                           "budget_rank"]
    assert acc["accuracy"].to_list() == [0.5, 0.5, 0.5, 0.25]
    assert acc["n_items"].to_list() == [4, 4, 4, 4]
    flows = collect_both(transitions(rows))
    assert flows.columns == ["model_id", "dataset", "protocol_id", "from", "to", "rescue", "harm", "n", "net", "churn"]
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
