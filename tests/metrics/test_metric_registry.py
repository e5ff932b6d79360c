"""Registering one new metric is enough: its JSON key, bootstrap interval, category split and report section.

The metric here exists only in this test: the share of items right at the grid's largest
budget with confidence >= 0.5 ("confident_right"), on hand-built rows.
"""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl
import pytest
from metric_rows import frame, lazy

from engine.metrics.document import summary_document
from engine.metrics.grid import GROUP
from engine.metrics.registry import Metric, get_metric, register_metric, unregister_metric
from engine.metrics.summary import SummaryOptions, summary_tables
from engine.report import render_report

NAME = "confident_right"


def _top(m: pl.LazyFrame) -> pl.LazyFrame:
    return m.filter(pl.col("rank") == pl.col("rank").max().over(GROUP)).with_columns(
        (pl.col("c") & (pl.col("confidence") >= 0.5)).alias("hit"))


def _features(m: pl.LazyFrame, alt: pl.LazyFrame | None, by: list[str]) -> pl.LazyFrame:
    top = m.filter(pl.col("rank") == pl.col("rank").max().over(by)).with_columns(
        (pl.col("c") & (pl.col("confidence") >= 0.5)).alias("hit"))
    return top.select(*by, "item_id", pl.lit(NAME).alias("metric"), pl.lit("").alias("key"),
                      pl.lit(0, pl.Int64).alias("korder"), pl.col("hit").cast(pl.Float64).alias("num"),
                      pl.lit(1.0).alias("den"))


@pytest.fixture
def registered() -> Iterator[Metric]:
    metric = register_metric(Metric(
        name=NAME,
        tables=lambda inputs: {"share": _top(inputs.m).group_by(GROUP).agg(pl.col("hit").mean().alias("value"))},
        document=lambda rows, opts: rows("share")[0]["value"] if rows("share") else None,
        features=_features,
        report=lambda g, idx: f'<h3 id="section-{NAME}-{idx}">confident and right: {g[NAME]}</h3>',
    ))
    try:
        yield metric
    finally:
        unregister_metric(NAME)


def _rows() -> pl.LazyFrame:
    budgets = {"text": 0, "f4": 4, "f8": 8}
    conf = {("a", "f8"): {"confidence": 0.9}, ("b", "f8"): {"confidence": 0.2}, ("c", "f8"): {"confidence": 0.9},
            ("d", "f8"): {"confidence": 0.7}}
    cats = {"a": {"task_type": "x"}, "b": {"task_type": "x"}, "c": {"task_type": "y"}, "d": {"task_type": "y"}}
    return lazy(frame({"a": "011", "b": "111", "c": "110", "d": "001"}, budgets=budgets, per_cell=conf,
                      per_item=cats))


def test_one_registration_reaches_document_intervals_categories_and_report(registered: Metric) -> None:
    opts = SummaryOptions(n_boot=50, seed=3, categories=("task_type",))
    doc = summary_document(summary_tables(_rows(), opts), opts)
    (g,) = doc["groups"]
    # a right (0.9), b right but unsure (0.2), c wrong, d right (0.7): 2 of 4
    assert g[NAME] == 0.5
    lo, hi = g["confidence_intervals"][NAME]
    assert 0.0 <= lo <= 0.5 <= hi <= 1.0
    by_type = {v["value"]: v["rates"][NAME] for v in g["categories"]["task_type"]}
    assert by_type == {"x": 0.5, "y": 0.5}  # x: a hit, b not; y: c not, d hit
    html = render_report(doc)
    assert f'id="section-{NAME}-0"' in html and "confident and right: 0.5" in html
    assert get_metric(NAME) is registered


def test_unregistered_metric_is_absent_and_named_in_errors() -> None:
    opts = SummaryOptions(n_boot=0)
    doc = summary_document(summary_tables(_rows(), opts), opts)
    assert NAME not in doc["groups"][0]
    with pytest.raises(KeyError, match="unknown metric 'confident_right'; known: .*trajectory_patterns"):
        get_metric(NAME)
    with pytest.raises(ValueError, match="registered twice"):
        register_metric(get_metric("trajectory_patterns"))
