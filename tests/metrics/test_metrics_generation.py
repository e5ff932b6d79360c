"""Generation (token-F1) oracle gap and regression shares; iso-compute allocations."""

from __future__ import annotations

import polars as pl
import pytest
from helpers.metric_rows import collect_both, lazy, row
from polars.testing import assert_frame_equal

from engine.config.grid import iso_compute
from engine.frames.resize import target_size
from engine.metrics.generation import generation_oracle, score_regressions
from engine.metrics.grid import matched
from engine.metrics.iso_compute import budget_costs, iso_compute_allocations, iso_compute_sets, iso_matched, iso_sets
from engine.metrics.oracle import fixed_accuracy

OPEN_BUDGETS = {"text": 0, "f4": 4, "f8": 8}
# scores at (text, f4, f8); binary fractions keep every sum exact
SCORES = {"p": (0.25, 0.5, 0.5), "q": (0.5, 0.5, 1.0), "r": (0.0, 0.25, 0.0)}


def _open_rows(scores: dict[str, tuple[float, ...]] = SCORES) -> pl.LazyFrame:
    rows = []
    for item, values in scores.items():
        for (b, frames), s in zip(OPEN_BUDGETS.items(), values, strict=True):
            r = row("m", "open", item, b, frames, "1", task_kind="open", correct=None, score=s)
            rows.append(r)
    return lazy(rows)


def test_mean_score_oracle_and_gap() -> None:
    ms = matched(_open_rows(), track="score")
    means = collect_both(fixed_accuracy(ms, value="s"))
    assert means["accuracy"].to_list() == [0.75 / 3, 1.25 / 3, 0.5]
    got = collect_both(generation_oracle(ms))
    assert got.rows() == [("m", "open", "default", 3, 1.75 / 3, "f8", 0.5, 1.75 / 3 - 0.5)]


def test_generation_best_budget_ties_go_to_the_cheapest() -> None:
    ms = matched(_open_rows({"p": (0.5, 0.25, 0.5), "q": (0.0, 0.25, 0.0)}), track="score")
    got = collect_both(generation_oracle(ms))
    assert got.select("best_budget", "best_score", "oracle_score", "oracle_gap").rows() == [
        ("text", 0.25, 0.375, 0.125)]


def test_score_regressions_every_pair_and_eps() -> None:
    ms = matched(_open_rows(), track="score")
    got = collect_both(score_regressions(ms))
    want = pl.DataFrame({"model_id": ["m"] * 3, "dataset": ["open"] * 3, "protocol_id": ["default"] * 3,
                         "from": ["text", "text", "f4"],
                         "to": ["f4", "f8", "f8"], "n": [3, 3, 3], "n_regressed": [0, 0, 1],
                         "regression_share": [0.0, 0.0, 1 / 3]})
    assert_frame_equal(got, want)
    tolerant = collect_both(score_regressions(ms, eps=0.3))
    assert tolerant["n_regressed"].to_list() == [0, 0, 0]
    consecutive = collect_both(score_regressions(ms, consecutive=True))
    assert consecutive.select("from", "to").rows() == [("text", "f4"), ("f4", "f8")]


ISO_BUDGETS = {"f2-px400": (2, 400), "f4-px200": (4, 200), "f8-px100": (8, 100), "f8-px200": (8, 200)}
ISO_ITEMS = {"i1": "1001", "i2": "1100", "i3": "0001", "i4": "0111"}


def _iso_rows() -> pl.LazyFrame:
    rows = []
    for item, marks in ISO_ITEMS.items():
        for (b, (frames, px)), mark in zip(ISO_BUDGETS.items(), marks, strict=True):
            rows.append(row("m", "iso", item, b, frames, mark, max_pixels=px, pixels_total=frames * px))
    return lazy(rows)


def test_iso_compute_allocations_across_protocols() -> None:
    # each budget is its own protocol (px400, px200, px100): the set forms across chains
    got = collect_both(iso_compute_allocations(iso_matched(_iso_rows())))
    want = pl.DataFrame({
        "model_id": ["m"] * 3, "dataset": ["iso"] * 3, "cost": [800.0] * 3,
        "budget_id": ["f2-px400", "f4-px200", "f8-px100"], "protocol_id": ["px400", "px200", "px100"],
        "frames": [2, 4, 8], "budget_cost": [800.0] * 3, "n_items": [4] * 3,
        "accuracy": [0.5, 0.5, 0.25], "n_best": [2, 2, 1], "n_sole_best": [1, 0, 0],
    }, schema_overrides={"frames": pl.Int32})
    assert_frame_equal(got, want)


def test_iso_compute_sets() -> None:
    got = collect_both(iso_compute_sets(iso_matched(_iso_rows())))
    assert got.to_dicts() == [{
        "model_id": "m", "dataset": "iso", "cost": 800.0, "allocations": ["f2-px400", "f4-px200", "f8-px100"],
        "n_items": 4, "best_allocation": "f2-px400", "best_accuracy": 0.5, "oracle_accuracy": 0.75,
        "oracle_headroom": 0.25, "n_all_right": 0, "n_none_right": 1,
    }]


def test_no_iso_compute_set_without_equal_costs() -> None:
    rows = lazy([row("m", "d", "i", "text", 0, "1"), row("m", "d", "i", "f4", 4, "1", max_pixels=100,
                                                          pixels_total=400),
                 row("m", "d", "i", "f8", 8, "0", pixels_total=8000)])
    assert collect_both(iso_compute_sets(iso_matched(rows))).height == 0


def test_iso_cost_is_the_mean_of_pixels_actually_sent_and_sets_keep_the_tolerance() -> None:
    """Costs 1000 and 1040 (4% apart) form a set at tolerance 0.05 only; the set's cost is its median."""
    rows = [row("m", "d", i, "f4-px250", 4, "1", max_pixels=250, pixels_total=px)
            for i, px in (("a", 1000), ("b", 1000))]  # mean 1000
    rows += [row("m", "d", i, "f8-px130", 8, "0", max_pixels=130, pixels_total=px)
             for i, px in (("a", 1000), ("b", 1080))]  # mean 1040, not the nominal 8 x 130
    costs = collect_both(budget_costs(lazy(rows)))
    assert costs.select("budget_id", "budget_cost").rows() == [("f4-px250", 1000.0), ("f8-px130", 1040.0)]
    assert collect_both(iso_sets(budget_costs(lazy(rows)), 0.03)).height == 0
    wide = collect_both(iso_sets(budget_costs(lazy(rows)), 0.05))
    assert wide.select("cost", "budget_id").rows() == [(1020.0, "f4-px250"), (1020.0, "f8-px130")]


def test_a_cost_exactly_at_the_tolerance_is_within_it() -> None:
    """1030 / 1000 - 1 is 0.030000000000000027 in floating point: still "within 3%" (one set), while
    1031 is not."""
    def rows(dearer: int) -> pl.LazyFrame:
        return lazy([row("m", "d", "a", "f4-px250", 4, "1", max_pixels=250, pixels_total=1000),
                     row("m", "d", "a", "f8-px128", 8, "0", max_pixels=128, pixels_total=dearer)])

    assert collect_both(iso_sets(budget_costs(rows(1030)), 0.03)).height == 2
    assert collect_both(iso_sets(budget_costs(rows(1031)), 0.03)).height == 0


def test_the_same_allocation_twice_is_no_set_but_joins_one() -> None:
    """f16 raw and cached send the same pixels: no set on their own (one frame count), both in a set with f8."""
    same = [row("m", "d", "a", "f16", 16, "1", pixels_total=1600),
            row("m", "d", "a", "f16-cached", 16, "1", pipeline="cached", pixels_total=1600)]
    assert collect_both(iso_sets(budget_costs(lazy(same)))).height == 0
    more = [*same, row("m", "d", "a", "f8-px200", 8, "0", max_pixels=200, pixels_total=1600)]
    got = collect_both(iso_sets(budget_costs(lazy(more))))
    assert got.select("budget_id", "protocol_id").rows() == [("f8-px200", "px200"), ("f16", "default"),
                                                             ("f16-cached", "cached")]


@pytest.mark.parametrize("total", [9_700_000, 9_830_400])
def test_real_short_side_allocations_form_one_set(total: int) -> None:
    """The allocations engine.config.grid.iso_compute builds, resized as the pipeline resizes a 1280x720 video."""
    points = iso_compute(total, [32, 64, 128], axis="short_side")
    rows = []
    for p in points:
        w, h = target_size(1280, 720, p.max_pixels, p.short_side)
        rows += [row("m", "d", i, p.budget_id, p.frames, "1", short_side=p.short_side, width=w, height=h,
                     pixels_total=p.frames * w * h) for i in ("a", "b")]
    got = collect_both(iso_sets(budget_costs(lazy(rows))))
    assert sorted(got["budget_id"].to_list()) == sorted(p.budget_id for p in points)
    assert got["cost"].n_unique() == 1 and got["protocol_id"].n_unique() == 3
    if total == 9_830_400:
        assert [p.budget_id for p in points] == ["f32-s414", "f64-s292", "f128-s206"]
