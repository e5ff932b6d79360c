"""The cascade's tau chosen out of sample: k-fold cross-fitting over items, hand-computed.

Stages f2 [0, 8] and f4 [0, 4, 8, 12]; the fixed budget is f4. (right, confidence) per stage:
    a: (1, .9) (1, .9)    b: (0, .8) (1, .9)    c: (0, .4) (1, .9)    d: (1, .6) (0, .9)
With taus .5 / .7 / .85 each item stops at (correct, frames processed, unique frames):
    a: (1, 2, 2) at every tau
    b: (0, 2, 2) at .5 and .7; (1, 6, 4) at .85
    c: (1, 6, 4) at every tau
    d: (1, 2, 2) at .5; (0, 6, 4) at .7 and .85
f4 alone: a, b, c right, d wrong (accuracy .75, 4 frames, 4 unique frames).

In sample, tau .5 reaches .75 with 3 frames. Cross-fitted with folds {a, b} and {c, d}:
    fold 0 (held out a, b) trains on c, d: fixed .5; tau .5 gives 1.0 at 4 frames -> tau .5 -> a right, b wrong
    fold 1 (held out c, d) trains on a, b: fixed 1.0; only tau .85 reaches it -> c right, d wrong
so the honest accuracy is .5 at 4 frames processed (3 unique): the in-sample choice overstated it.
"""

from __future__ import annotations

import polars as pl
from helpers.metric_rows import collect_both, lazy, row

from engine.metrics.bootstrap import splitmix64
from engine.metrics.cascade import cascade_curve, crossfit_folds, crossfit_match, fixed_cost, match_fixed
from engine.metrics.grid import GROUP, matched

STAGES = {"f2": (2, [0, 8]), "f4": (4, [0, 4, 8, 12])}
ITEMS = {
    "a": [("1", 0.9), ("1", 0.9)],
    "b": [("0", 0.8), ("1", 0.9)],
    "c": [("0", 0.4), ("1", 0.9)],
    "d": [("1", 0.6), ("0", 0.9)],
}
TAUS = [0.5, 0.7, 0.85]


def _m(items: dict = ITEMS) -> pl.LazyFrame:
    rows = [row("m", "d", item, b, frames, mark, confidence=conf, frame_indices=idx)
            for item, cells in items.items()
            for (b, (frames, idx)), (mark, conf) in zip(STAGES.items(), cells, strict=True)]
    return matched(lazy(rows))


def _folds(m: pl.LazyFrame, assign: dict[str, int]) -> pl.LazyFrame:
    return m.select([*GROUP, "item_id"]).unique().with_columns(
        pl.col("item_id").replace_strict(assign, return_dtype=pl.Int64).alias("fold"))


def test_in_sample_choice_for_comparison() -> None:
    m = _m()
    got = collect_both(match_fixed(cascade_curve(m, TAUS), fixed_cost(m, "f4")))
    assert got.select("tau", "accuracy", "mean_frames", "mean_unique_frames").rows() == [(0.5, 0.75, 3.0, 2.5)]


def test_tau_chosen_on_the_other_folds_and_applied_to_the_held_out_one() -> None:
    m = _m()
    summary, per_fold = crossfit_match(m, m, "f4", TAUS, k=2, folds=_folds(m, {"a": 0, "b": 0, "c": 1, "d": 1}))
    folds = collect_both(per_fold)
    assert folds.select("fold", "n_train", "n_heldout", "tau", "matched", "train_accuracy", "train_fixed_accuracy",
                        "train_mean_frames", "heldout_accuracy").rows() == [
        (0, 2, 2, 0.5, True, 1.0, 0.5, 4.0, 0.5),
        (1, 2, 2, 0.85, True, 1.0, 1.0, 4.0, 0.5),
    ]
    got = collect_both(summary)
    assert got.select("k", "fixed_budget", "n_items", "fixed_accuracy", "fixed_frames", "fixed_unique_frames",
                      "accuracy", "mean_frames", "mean_unique_frames", "frames_saved", "unique_frames_saved",
                      "accuracy_delta", "n_folds_matched").rows() == [
        (2, "f4", 4, 0.75, 4.0, 4.0, 0.5, 4.0, 3.0, 0.0, 0.25, -0.25, 2)]


def test_other_folds_other_taus() -> None:
    m = _m()
    summary, per_fold = crossfit_match(m, m, "f4", TAUS, k=2, folds=_folds(m, {"a": 0, "d": 0, "b": 1, "c": 1}))
    # fold 0 trains on b, c (fixed 1.0): only .85 reaches it; fold 1 trains on a, d (fixed .5): .5 at 2 frames
    assert collect_both(per_fold).select("fold", "tau", "heldout_accuracy").rows() == [(0, 0.85, 0.5), (1, 0.5, 0.5)]
    # a (1, 2) d (0, 6) at .85; b (0, 2) c (1, 6) at .5
    assert collect_both(summary).select("accuracy", "mean_frames", "mean_unique_frames").rows() == [(0.5, 4.0, 3.0)]


def test_a_fold_no_tau_can_match_uses_the_most_accurate_cheapest_tau() -> None:
    items = {"e": [("0", 0.95), ("1", 0.9)], "f": [("1", 0.95), ("1", 0.9)]}
    m = _m(items)
    summary, per_fold = crossfit_match(m, m, "f4", TAUS, k=2, folds=_folds(m, {"e": 0, "f": 1}))
    # fold 0 trains on f: every tau stops at f2, right -> .5; fold 1 trains on e: every tau wrong -> .5, unmatched
    assert collect_both(per_fold).select("fold", "tau", "matched", "train_accuracy").rows() == [
        (0, 0.5, True, 1.0), (1, 0.5, False, 0.0)]
    assert collect_both(summary).select("accuracy", "fixed_accuracy", "n_folds_matched").rows() == [(0.5, 1.0, 1)]


def test_folds_are_seeded_balanced_and_follow_the_reference() -> None:
    ids = [f"i{j:02d}" for j in range(11)]
    items = pl.LazyFrame({"model_id": ["m"] * 11, "dataset": ["d"] * 11, "protocol_id": ["default"] * 11,
                          "item_id": ids})
    got = collect_both(crossfit_folds(items, 5, seed=7))
    assert got["item_id"].to_list() == ids
    assert sorted(got.group_by("fold").len()["len"].to_list()) == [2, 2, 2, 2, 3]
    mask = (1 << 64) - 1
    order = sorted(range(11), key=lambda j: splitmix64((j + splitmix64(7)) & mask))
    want = {ids[j]: pos % 5 for pos, j in enumerate(order)}
    assert dict(zip(got["item_id"], got["fold"], strict=True)) == want
    assert collect_both(crossfit_folds(items, 5, seed=7)).equals(got)
    assert not collect_both(crossfit_folds(items, 5, seed=8))["fold"].equals(got["fold"])


def test_default_folds_run_end_to_end() -> None:
    m = _m()
    summary, per_fold = crossfit_match(m, m, None, TAUS, k=2, seed=0)
    assert collect_both(summary)["n_items"].to_list() == [4]  # every item scored once, at its own fold's tau
    assert collect_both(per_fold)["n_heldout"].sum() == 4
