"""Official video-benchmark scores (Video-MME, Video-MME v2 group scores, MVBench, TempCompass, Video-MMMU) over
hand-made rows, every value computed by hand; a dataset without an official rule has accuracy as headline."""

from __future__ import annotations

import polars as pl
import pytest
from helpers.benchmark_rows import video_rows
from helpers.metric_rows import collect_both, lazy

from engine.metrics.benchmark_scores import benchmark_scores


def _table(df: pl.DataFrame, dataset: str) -> dict[tuple[str, str | None], float]:
    return {(m, s): v for m, s, v in df.filter(pl.col("dataset") == dataset).select("metric", "subset", "value").rows()}


def test_official_video_scores() -> None:
    got = collect_both(benchmark_scores(lazy(video_rows())))
    assert _table(got, "videomme") == pytest.approx({
        ("accuracy", None): 2 / 4,
        ("videomme_accuracy", None): 2 / 3,  # the empty answer left out of the denominator (official)
        ("videomme_accuracy_counted", None): 2 / 4, ("videomme_n_empty", None): 1.0})
    assert _table(got, "videomme_v2") == pytest.approx({
        ("accuracy", None): 12 / 15,
        ("videomme_v2_score", None): (56.25 + 400 / 12 + 10) / 3,  # complete groups 001, 002, 003
        ("videomme_v2_relevance_score", None): 56.25, ("videomme_v2_logic_score", None): (400 / 12 + 10) / 2,
        ("videomme_v2_n_groups", None): 3.0, ("videomme_v2_n_incomplete", None): 1.0})
    assert _table(got, "mvbench") == pytest.approx({
        ("accuracy", None): 3 / 6,
        ("mvbench_accuracy", None): (2 / 2 + 1 / 4) / 2,  # the mean of the task accuracies, not 3/6
        ("mvbench_accuracy", "action_sequence"): 1.0, ("mvbench_accuracy", "object_shuffle"): 1 / 4})
    assert _table(got, "tempcompass") == pytest.approx({
        ("accuracy", None): 2 / 4,
        ("tempcompass_score", None): (1 / 1 + 1 / 3) / 2,
        ("tempcompass_accuracy", "multi-choice"): 1.0, ("tempcompass_accuracy", "yes_no"): 1 / 3})
    assert _table(got, "video_mmmu") == pytest.approx({
        ("accuracy", None): 1 / 3,
        ("video_mmmu_accuracy", "Perception"): 1 / 2, ("video_mmmu_accuracy", "Adaptation"): 0.0})
    assert _table(got, "mlvu") == pytest.approx({("accuracy", None): 1 / 2})
    heads = got.filter(pl.col("headline")).select("dataset", "metric", "subset").rows()
    assert sorted(heads, key=str) == sorted([
        ("mlvu", "accuracy", None), ("mvbench", "mvbench_accuracy", None),
        ("tempcompass", "tempcompass_score", None), ("video_mmmu", "video_mmmu_accuracy", "Adaptation"),
        ("video_mmmu", "video_mmmu_accuracy", "Perception"), ("videomme", "videomme_accuracy", None),
        ("videomme_v2", "videomme_v2_score", None)], key=str)
    assert got["missing"].null_count() == got.height
