"""Confidence cascade simulated from a sweep: accuracy, frames, unique frames, Pareto front, match.

Stages f2 [0, 8], f4 [0, 4, 8, 12], f8 [0, 2, ..., 14]: unions hold 2, 4 and 8 frames.
(right, confidence) per stage:
    u: (1, .9) (1, .5) (1, .95)     v: (0, .3) (1, .8) (1, .9)
    w: (0, .2) (0, .4) (1, .6)      x: (1, .6) (0, .7) (0, .99)
"""

from __future__ import annotations

import polars as pl
from helpers.metric_rows import collect_both, lazy, row
from polars.testing import assert_frame_equal

from engine.metrics.cascade import cascade_curve, cascade_items, fixed_cost, match_fixed, pareto_front
from engine.metrics.grid import matched

STAGES = {"f2": (2, [0, 8]), "f4": (4, [0, 4, 8, 12]), "f8": (8, list(range(0, 16, 2)))}
ITEMS = {
    "u": [("1", 0.9), ("1", 0.5), ("1", 0.95)],
    "v": [("0", 0.3), ("1", 0.8), ("1", 0.9)],
    "w": [("0", 0.2), ("0", 0.4), ("1", 0.6)],
    "x": [("1", 0.6), ("0", 0.7), ("0", 0.99)],
}
TAUS = [0.5, 0.6, 0.7, 0.95]


def _m(items: dict = ITEMS, stages: dict = STAGES) -> pl.LazyFrame:
    rows = [row("m", "d", item, b, frames, mark, confidence=conf, frame_indices=idx)
            for item, cells in items.items()
            for (b, (frames, idx)), (mark, conf) in zip(stages.items(), cells, strict=True)]
    return matched(lazy(rows))


def test_each_item_stops_at_its_first_confident_stage() -> None:
    got = collect_both(cascade_items(_m(), [0.7]))
    assert got.select("item_id", "stop_budget", "correct", "frames", "unique_frames", "stages").rows() == [
        ("u", "f2", True, 2, 2, 1), ("v", "f4", True, 6, 4, 2), ("w", "f8", True, 14, 8, 3),
        ("x", "f4", False, 6, 4, 2)]


def test_cascade_curve() -> None:
    got = collect_both(cascade_curve(_m(), TAUS))
    want = pl.DataFrame({
        "model_id": ["m"] * 4, "dataset": ["d"] * 4, "protocol_id": ["default"] * 4, "tau": TAUS, "n_items": [4] * 4,
        "accuracy": [1.0, 1.0, 0.75, 0.75], "mean_frames": [6.0, 6.0, 7.0, 14.0],
        "mean_unique_frames": [4.0, 4.0, 4.5, 8.0], "mean_stages": [1.75, 1.75, 2.0, 3.0],
    })
    assert_frame_equal(got, want)


def test_pareto_front_keeps_the_smallest_tau_of_equal_points() -> None:
    curve = cascade_curve(_m(), TAUS)
    assert collect_both(pareto_front(curve))["tau"].to_list() == [0.5]
    assert collect_both(pareto_front(curve, cost="mean_unique_frames"))["tau"].to_list() == [0.5]
    manual = pl.LazyFrame({"model_id": ["m"] * 4, "dataset": ["d"] * 4, "protocol_id": ["default"] * 4,
                           "tau": [0.1, 0.2, 0.3, 0.4],
                           "mean_frames": [2.0, 4.0, 4.0, 8.0], "accuracy": [0.5, 0.6, 0.7, 0.7]})
    assert collect_both(pareto_front(manual))["tau"].to_list() == [0.1, 0.3]


def test_cheapest_tau_matching_a_fixed_budget() -> None:
    m = _m()
    fixed = collect_both(fixed_cost(m, "f8"))
    assert fixed.select("fixed_budget", "fixed_accuracy", "fixed_frames", "fixed_unique_frames").rows() == [
        ("f8", 0.75, 8.0, 8.0)]
    assert_frame_equal(collect_both(fixed_cost(m)), fixed)  # default: the dearest visual budget
    got = collect_both(match_fixed(cascade_curve(m, TAUS), fixed_cost(m, "f8")))
    assert got.select("tau", "accuracy", "mean_frames", "frames_saved", "unique_frames_saved").rows() == [
        (0.5, 1.0, 6.0, 0.25, 0.5)]


def test_no_tau_matches_a_better_fixed_budget() -> None:
    m = _m()
    fixed = pl.LazyFrame({"model_id": ["m"], "dataset": ["d"], "protocol_id": ["default"], "fixed_budget": ["oracle"],
                          "fixed_accuracy": [1.01], "fixed_frames": [8.0], "fixed_unique_frames": [8.0]})
    assert collect_both(match_fixed(cascade_curve(m, TAUS), fixed)).height == 0


def test_null_confidence_escalates_and_missing_indices_make_unique_frames_unknown() -> None:
    items = {"y": [("1", None), ("1", None), ("0", None)]}
    got = collect_both(cascade_items(_m(items), [0.0]))
    assert got.select("stop_budget", "correct", "frames", "unique_frames").rows() == [("f8", False, 14, 8)]
    no_idx = {b: (frames, []) for b, (frames, _) in STAGES.items()}
    got = collect_both(cascade_curve(_m(ITEMS, no_idx), [0.7]))
    assert got.select("accuracy", "mean_frames", "mean_unique_frames").rows() == [(0.75, 7.0, None)]


def test_a_single_stage_cascade_is_the_fixed_budget() -> None:
    m = _m().filter(pl.col("budget_id") == "f8")
    got = collect_both(cascade_curve(m, [0.0, 1.0]))
    assert got.select("accuracy", "mean_frames", "mean_stages").rows() == [(0.75, 8.0, 1.0), (0.75, 8.0, 1.0)]


def test_savings_against_a_text_only_baseline_are_undefined() -> None:
    curve = cascade_curve(_m(), [0.5])
    fixed = pl.LazyFrame({"model_id": ["m"], "dataset": ["d"], "protocol_id": ["default"],
                          "fixed_budget": ["text"], "fixed_accuracy": [0.5],
                          "fixed_frames": [0.0], "fixed_unique_frames": [0.0]})
    got = collect_both(match_fixed(curve, fixed))
    assert got.select("tau", "frames_saved", "unique_frames_saved").rows() == [(0.5, None, None)]


def test_stops_match_the_rule_item_by_item_on_random_confidences_with_ties_and_nulls() -> None:
    # the stop rule read literally (first stage whose confidence >= tau, else the last), item by item,
    # against cascade_items on confidences drawn from the taus themselves (ties) and nulls, with taus given
    # unsorted and repeated (each distinct tau once in the result, in order)
    import random

    rng = random.Random(7)
    taus = [0.5, 0.0, 0.95, 0.25, 0.5, 1.0, 0.7]
    grid = sorted(set(taus))
    pool = [None, 0.0, 0.25, 0.5, 0.7, 0.95, 1.0, 0.3, 0.6, 0.99]
    items = {f"i{k:02d}": [(rng.choice("01"), rng.choice(pool)) for _ in STAGES] for k in range(60)}
    got = collect_both(cascade_items(_m(items), taus))
    budgets = list(STAGES)
    want = []
    for item, cells in sorted(items.items()):
        for tau in grid:
            stop = next((s for s, (_, c) in enumerate(cells) if c is not None and c >= tau), len(cells) - 1)
            want.append((item, tau, budgets[stop], cells[stop][0] == "1", stop + 1))
    assert got.select("item_id", "tau", "stop_budget", "correct", "stages").rows() == want
    assert collect_both(cascade_items(_m(items), [])).height == 0
