"""Visual confusion, text overwrite, terminal regressions and sampling recovery (n = 4).

Matched trajectories (text, f4, f8, f16): a 0110, b 1100, c 1011, e 0000;
alternate policy at f16: a right, c wrong, e right, b missing.
"""

from __future__ import annotations

import polars as pl
from helpers.metric_rows import collect_both, frame, lazy, row, sweep_a
from polars.testing import assert_frame_equal

from engine.metrics.confusion import visual_confusion
from engine.metrics.grid import matched
from engine.metrics.overwrite import text_overwrite
from engine.metrics.regression import alternate_rows, sampling_recovery, terminal_regressions


def _default(frame: pl.LazyFrame) -> pl.LazyFrame:
    return frame.filter(pl.col("protocol_id") == "default")


def _m() -> pl.LazyFrame:
    """The default chain (the alternate policy's budget is a chain of its own)."""
    return _default(matched(lazy(sweep_a(with_alt=True))))


def test_visual_confusion_whole_grid_and_visual_only() -> None:
    got = collect_both(visual_confusion(_m()))
    # whole grid: a (f4 right, f16 wrong), b, c (text right, f4 wrong); visual only: a, b
    assert got.select("n_items", "n_confused", "visual_confusion", "n_confused_visual",
                      "visual_confusion_visual_only").rows() == [(4, 3, 0.75, 2, 0.5)]


def test_visual_confusion_edges() -> None:
    text_only = matched(lazy(frame({"x": "1", "y": "0"}, budgets={"text": 0})))
    assert collect_both(visual_confusion(text_only)).select("visual_confusion", "visual_confusion_visual_only").rows() \
        == [(0.0, 0.0)]
    # right only after wrong is a rescue, not confusion; 10 on (text, f4) is confusion but not visual-only
    m = matched(lazy(frame({"p": "01", "q": "10"}, budgets={"text": 0, "f4": 4})))
    assert collect_both(visual_confusion(m)).select("n_confused", "n_confused_visual").rows() == [(1, 0)]


def test_text_overwrite_by_budget_any_and_all() -> None:
    got = collect_both(text_overwrite(_m()))
    want = pl.DataFrame({
        "model_id": ["m"] * 5, "dataset": ["d"] * 5, "protocol_id": ["default"] * 5,
        "scope": ["budget", "budget", "budget", "any", "all"],
        "budget_id": ["f4", "f8", "f16", None, None],
        "rank": [1, 2, 3, 1 << 40, (1 << 40) + 1],
        "n_items": [4] * 5, "n_text_correct": [2] * 5, "n_overwritten": [1, 1, 1, 2, 0],
        "share_all": [0.25, 0.25, 0.25, 0.5, 0.0], "share_text_correct": [0.5, 0.5, 0.5, 1.0, 0.0],
    })
    assert_frame_equal(got, want)


def test_text_overwrite_all_visual_and_no_text_correct() -> None:
    m = matched(lazy(frame({"p": "100", "q": "110", "r": "011"}, budgets={"text": 0, "f4": 4, "f8": 8})))
    got = collect_both(text_overwrite(m)).filter(pl.col("scope") != "budget")
    assert got.select("scope", "n_overwritten", "share_all", "share_text_correct").rows() == [
        ("any", 2, 2 / 3, 1.0), ("all", 1, 1 / 3, 0.5)]
    nobody = matched(lazy(frame({"p": "01"}, budgets={"text": 0, "f4": 4})))
    got = collect_both(text_overwrite(nobody))
    assert got["share_all"].to_list() == [0.0, 0.0, 0.0]
    assert got["share_text_correct"].to_list() == [None, None, None]


def test_text_overwrite_needs_a_text_budget_and_a_visual_one() -> None:
    no_text = matched(lazy(frame({"p": "10"}, budgets={"f4": 4, "f8": 8})))
    assert collect_both(text_overwrite(no_text)).height == 0
    text_only = matched(lazy(frame({"p": "1"}, budgets={"text": 0})))
    assert collect_both(text_overwrite(text_only)).height == 0


def test_terminal_regressions() -> None:
    got = collect_both(terminal_regressions(_m()))
    assert got.rows() == [("m", "d", "default", "f16", 4, 2, 0.5)]  # a and b
    one = matched(lazy(frame({"z": "1"}, budgets={"text": 0})))
    assert collect_both(terminal_regressions(one)).select("max_budget", "n_terminal", "terminal_regression").rows() \
        == [("text", 0, 0.0)]


def test_sampling_recovery_counts_missing_alternates() -> None:
    rows = lazy(sweep_a(with_alt=True))
    alt = collect_both(alternate_rows(rows))
    assert sorted(alt.select("protocol_id", "item_id", "alt_budget_id", "c_alt").rows()) == [
        ("default", "a", "f16-random", True), ("default", "c", "f16-random", False),
        ("default", "e", "f16-random", True),
        # and the other way round: f16 is the random chain's alternate
        *[("random-seed3", i, "f16", c) for i, c in (("a", False), ("b", False), ("c", True), ("d", True),
                                                     ("e", False), ("f", True))]]
    got = collect_both(_default(sampling_recovery(matched(rows), alternate_rows(rows))))
    assert got.select("alt_budget_id", "n_terminal", "n_with_alt", "n_missing_alt", "n_recovered",
                      "sampling_recovery", "sampling_recovery_with_alt").rows() == [
        ("f16-random", 2, 1, 1, 1, 0.5, 1.0), ("any", 2, 1, 1, 1, 0.5, 1.0)]  # b has no alternate: not recovered


def test_alternates_must_match_the_top_budget() -> None:
    rows = [*sweep_a(), row("m", "d", "a", "f8-random", 8, "1", policy="random")]
    assert collect_both(_default(alternate_rows(lazy(rows)))).height == 0
    got = collect_both(_default(sampling_recovery(matched(lazy(rows)), alternate_rows(lazy(rows)))))
    assert got.height == 0
