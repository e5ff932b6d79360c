"""The tidy rate table and its paired bootstrap intervals."""

from __future__ import annotations

import polars as pl
import pytest
from helpers.metric_rows import collect_both, frame, lazy, row, sweep_a
from polars.testing import assert_frame_equal

from engine.metrics.bootstrap import REP, draws, percentile_interval, resample, splitmix64
from engine.metrics.features import correct_features
from engine.metrics.grid import GROUP, matched
from engine.metrics.rates import aggregate_features, rate_intervals, rate_table
from engine.metrics.regression import alternate_rows

# every rate of the hand-built sweep (see test_metrics_flows / test_metrics_confusion)
EXPECTED_A = [
    ("fixed_accuracy", "text", 0.5), ("fixed_accuracy", "f4", 0.5), ("fixed_accuracy", "f8", 0.5),
    ("fixed_accuracy", "f16", 0.25), ("best_fixed", "", 0.5), ("oracle_accuracy", "", 0.75),
    ("oracle_headroom", "", 0.25),
    ("rescue_rate", "text->f4", 0.25), ("rescue_rate", "f4->f8", 0.25), ("rescue_rate", "f8->f16", 0.0),
    ("harm_rate", "text->f4", 0.25), ("harm_rate", "f4->f8", 0.25), ("harm_rate", "f8->f16", 0.25),
    ("net", "text->f4", 0.0), ("net", "f4->f8", 0.0), ("net", "f8->f16", -0.25),
    ("churn", "text->f4", 0.5), ("churn", "f4->f8", 0.5), ("churn", "f8->f16", 0.25),
    ("visual_confusion", "", 0.75), ("visual_confusion_visual_only", "", 0.5),
    ("text_overwrite_share_all", "f4", 0.25), ("text_overwrite_share_all", "f8", 0.25),
    ("text_overwrite_share_all", "f16", 0.25), ("text_overwrite_share_all", "any", 0.5),
    ("text_overwrite_share_all", "all", 0.0),
    ("text_overwrite_share_text_correct", "f4", 0.5), ("text_overwrite_share_text_correct", "f8", 0.5),
    ("text_overwrite_share_text_correct", "f16", 0.5), ("text_overwrite_share_text_correct", "any", 1.0),
    ("text_overwrite_share_text_correct", "all", 0.0),
    ("terminal_regression", "", 0.5), ("sampling_recovery", "f16-random", 0.5), ("sampling_recovery", "any", 0.5),
    ("sampling_recovery_with_alt", "f16-random", 1.0), ("sampling_recovery_with_alt", "any", 1.0),
]


def _inputs() -> tuple[pl.LazyFrame, pl.LazyFrame]:
    # materialized, as summary_tables does: the bootstrap plans read their inputs many times
    rows = lazy(sweep_a(with_alt=True))
    default = pl.col("protocol_id") == "default"  # the alternate policy's f16 is a chain of its own
    return matched(rows).filter(default).collect().lazy(), alternate_rows(rows).filter(default).collect().lazy()


def _open() -> pl.LazyFrame:
    scores = {"p": (0.25, 0.5, 0.5), "q": (0.5, 0.5, 1.0), "r": (0.0, 0.25, 0.0)}
    rows = [row("m", "open", i, b, f, "1", task_kind="open", correct=None, score=s)
            for i, v in scores.items() for (b, f), s in zip({"text": 0, "f4": 4, "f8": 8}.items(), v, strict=True)]
    return matched(lazy(rows), track="score")


def test_rate_table_holds_every_rate_exactly() -> None:
    m, alt = _inputs()
    got = collect_both(rate_table(m, alt=alt))
    assert got.select("metric", "key", "value").rows() == EXPECTED_A


def test_generation_rates() -> None:
    got = collect_both(rate_table(None, m_score=_open()))
    assert got.select("metric", "key", "value").rows() == [
        ("generation_mean_score", "text", 0.75 / 3), ("generation_mean_score", "f4", 1.25 / 3),
        ("generation_mean_score", "f8", 0.5), ("generation_best_score", "", 0.5),
        ("generation_oracle_score", "", 1.75 / 3), ("generation_oracle_gap", "", 1.75 / 3 - 0.5),
        ("generation_regression_share", "text->f4", 0.0), ("generation_regression_share", "text->f8", 0.0),
        ("generation_regression_share", "f4->f8", 1 / 3),
    ]


def test_rate_table_per_category() -> None:
    m = matched(lazy(sweep_a(categories=True)))
    got = collect_both(rate_table(m, by=[*GROUP, "task_type"]))
    pick = {(r["task_type"], r["metric"], r["key"]): r["value"] for r in got.to_dicts()}
    assert pick[("x", "oracle_headroom", "")] == 0.0 and pick[("x", "best_fixed", "")] == 1.0
    assert pick[("y", "fixed_accuracy", "f4")] == 0.0 and pick[("y", "visual_confusion", "")] == 0.5
    assert pick[("x", "text_overwrite_share_text_correct", "any")] == 1.0  # b: right text-only, wrong at f8
    assert pick[("y", "terminal_regression", "")] == 0.0


def test_draws_resample_whole_items_reproducibly() -> None:
    m, _ = _inputs()
    picks = collect_both(draws(m, 50, seed=7))
    assert picks.height == 50 * 4
    assert picks.group_by(REP).len()["len"].to_list() == [4] * 50
    assert set(picks["item_id"]) <= {"a", "b", "c", "e"}
    assert_frame_equal(picks, collect_both(draws(m, 50, seed=7)))
    assert not picks.equals(collect_both(draws(m, 50, seed=8)))
    rm = collect_both(resample(m, draws(m, 50, seed=7)).sort([REP, "item_id", "rank"]))
    assert rm.group_by([REP, "item_id"]).len()["len"].unique().to_list() == [4]  # every budget of a drawn item


def test_draws_follow_the_documented_generator() -> None:
    """Draw j of replicate r is item splitmix64(r * n + j + splitmix64(seed)) mod n, in item-id order."""
    m, _ = _inputs()
    items, n, seed = ["a", "b", "c", "e"], 4, 5
    want = [items[splitmix64((r * n + j + splitmix64(seed)) & ((1 << 64) - 1)) % n] for r in range(3) for j in range(n)]
    assert collect_both(draws(m, 3, seed=seed))["item_id"].to_list() == want
    assert splitmix64(0) == 16294208416658607535  # the published SplitMix64 output for state 0


def test_pooled_bootstrap_equals_resampling_the_rows() -> None:
    """Replicates computed from item types with weights equal recomputing every rate on resampled rows."""
    from engine.metrics.rates import _replicates

    m, alt = _inputs()
    picks = draws(m, 40, seed=3)
    naive = rate_table(resample(m, picks), alt=resample(alt, picks), by=[*GROUP, REP])
    pooled = _replicates(correct_features(m, alt), list(GROUP), 40, 3).drop("korder")
    keys = [*GROUP, REP, "metric", "key"]
    assert_frame_equal(collect_both(pooled).sort(keys), collect_both(naive).sort(keys))


def test_percentile_interval() -> None:
    reps = pl.LazyFrame({"k": ["a"] * 101, "value": [float(i) for i in range(101)]})
    got = collect_both(percentile_interval(reps, ["k"], level=0.95))
    assert got.select("k", "n_boot").rows() == [("a", 101)]
    assert got["lo"].item() == pytest.approx(2.5) and got["hi"].item() == pytest.approx(97.5)


def test_intervals_are_seeded_and_bracket_the_estimate() -> None:
    m, alt = _inputs()
    one = collect_both(rate_intervals(m, alt=alt, n_boot=200, seed=1))
    assert_frame_equal(one, collect_both(rate_intervals(m, alt=alt, n_boot=200, seed=1)))
    assert one.select("metric", "key", "value").rows() == EXPECTED_A
    assert one.filter((pl.col("lo") > pl.col("value")) | (pl.col("hi") < pl.col("value"))).height == 0
    assert one.filter(~pl.col("metric").str.starts_with("sampling_recovery"))["n_boot"].min() >= 150


def test_intervals_collapse_when_nothing_varies() -> None:
    single = matched(lazy(frame({"z": "01"}, budgets={"text": 0, "f4": 4}))).collect().lazy()
    got = collect_both(rate_intervals(single, n_boot=30))
    defined = got.filter(pl.col("value").is_not_null())
    assert_frame_equal(defined.select(pl.col("lo").alias("v")), defined.select(pl.col("value").alias("v")))
    assert_frame_equal(defined.select(pl.col("hi").alias("v")), defined.select(pl.col("value").alias("v")))
    assert got.filter(pl.col("metric") == "text_overwrite_share_text_correct")["value"].to_list() == [None, None, None]
    same = matched(lazy(frame({"a": "11", "b": "11", "c": "11"}, budgets={"text": 0, "f4": 4}))).collect().lazy()
    got = collect_both(rate_intervals(same, n_boot=30)).filter(pl.col("metric") == "fixed_accuracy")
    assert got.select("lo", "hi").rows() == [(1.0, 1.0), (1.0, 1.0)]


def test_features_sum_to_the_rates() -> None:
    m, alt = _inputs()
    feats = collect_both(correct_features(m, alt))
    assert feats.filter(pl.col("metric") == "fixed_accuracy").height == 16
    again = collect_both(aggregate_features(feats.lazy()).drop("korder"))
    assert again.select("metric", "key", "value").rows() == EXPECTED_A


def test_count_matrices_count_the_documented_draws() -> None:
    """The chunked count matrices are the draws of `draws`, counted per type, whatever the chunk size."""
    import numpy as np

    from engine.metrics.bootstrap import count_matrices

    m, _ = _inputs()
    picks = collect_both(draws(m, 7, seed=11)).filter((pl.col("model_id") == "m") & (pl.col("dataset") == "d"))
    items = sorted(picks["item_id"].unique().to_list())
    type_of = np.array([0, 1, 0, 2][: len(items)])
    want = np.zeros((7, 3))
    for r, item in picks.select(REP, "item_id").iter_rows():
        want[r, type_of[items.index(item)]] += 1
    for chunk in (1, 3, 64):
        got = np.vstack([c for _, c in count_matrices(type_of, 3, 7, seed=11, chunk=chunk)])
        assert np.array_equal(got, want)


def test_intervals_without_open_items_cover_the_correctness_track_only() -> None:
    m, alt = _inputs()
    empty_score = m.clear()
    got = collect_both(rate_intervals(m, alt=alt, m_score=empty_score, n_boot=20, seed=2))
    assert got.height > 0 and not got["metric"].str.starts_with("generation").any()
    assert_frame_equal(got, collect_both(rate_intervals(m, alt=alt, n_boot=20, seed=2)))
