"""A benchmark is one registration: a throwaway `Benchmark` registered in the test, and nothing else edited, gets
its spec class accepted in a sweep spec, its release found by `fetch`'s lookup and `run --data`'s layout, its
official score computed beside accuracy and flagged as its headline, and its unit on every table.

Hand-computed rows (one model, budget f4, dataset version ``toy.v1``, no spec mapping): items a, b, c right, d
wrong -> accuracy 3/4; the toy benchmark's official score is accuracy x 10 on a 0-10 scale: 7.5 points.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import polars as pl
import pytest
from helpers.metric_rows import frame, lazy
from pydantic import Field

from engine.config import SpecError, parse_spec
from engine.datasets import Benchmark, get_benchmark, register_benchmark, unregister_benchmark
from engine.datasets.benchmark import OfficialRows, Source
from engine.datasets.official import KEYS, long_scores
from engine.datasets.sources import get_source, known_sources, layout_fields
from engine.datasets.spec import DatasetBase
from engine.metrics.benchmark_scores import benchmark_scores, full_scale, headlines, score_unit
from engine.report.cells import metric_score


class ToySpec(DatasetBase):
    name: Literal["toy"] = Field(description="Adapter name.")
    annotations: str = Field(description="The toy's annotation file.")


def _toy_official(of: OfficialRows) -> list[pl.LazyFrame]:
    score = of.judged.group_by(KEYS).agg((pl.col("correct").cast(pl.Float64).mean() * 10).alias("toy_score"))
    return [long_scores(score, {"toy_score": "toy_score"})]


TOY = Benchmark("toy", ToySpec, Source("example/toy", {"annotations": "toy/test.parquet"}, ("toy/*.parquet",)),
                _toy_official, ("toy_score",), units={"toy_score": "points"}, full_scale={"toy_score": 10.0},
                versions=("toy",))


@pytest.fixture
def toy() -> Iterator[Benchmark]:
    register_benchmark(TOY)
    try:
        yield TOY
    finally:
        unregister_benchmark("toy")


def _spec(out: Path) -> dict[str, object]:
    return {"sweep_id": "s", "models": [{"id": "m", "family": "qwen2_5_vl", "path": "tiny:qwen2_5_vl"}],
            "dataset": {"name": "toy", "annotations": "a.parquet"}, "budgets": [{"frames": 4}],
            "store": {"out_dir": str(out)}}


def test_a_registered_benchmark_s_spec_class_is_a_dataset_table(toy: Benchmark, tmp_path: Path) -> None:
    spec = parse_spec(_spec(tmp_path), "test")
    assert isinstance(spec.dataset, ToySpec) and spec.dataset.annotations == "a.parquet"


def test_an_unregistered_benchmark_s_table_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="dataset"):
        parse_spec(_spec(tmp_path), "test")


def test_a_registered_benchmark_s_release_is_its_fetch_source_and_layout(toy: Benchmark, tmp_path: Path) -> None:
    assert get_source("toy") is TOY.source and known_sources()["toy"].fetchable
    assert layout_fields("toy", tmp_path) == {"annotations": str(tmp_path / "toy/test.parquet")}
    assert get_benchmark("toy") is TOY


def test_a_registered_benchmark_s_official_score_headline_and_unit(toy: Benchmark) -> None:
    version = {item: {"dataset_version": "toy.v1"} for item in "abcd"}
    rows = frame({"a": "1", "b": "1", "c": "1", "d": "0"}, dataset="toy", budgets={"f4": 4}, per_item=version)
    scores = benchmark_scores(lazy(rows)).collect()
    got = {m: (v, h) for m, v, h in scores.select("metric", "value", "headline").rows()}
    assert got == {"accuracy": (0.75, False), "toy_score": (7.5, True)}
    assert headlines()["toy"] == ("toy_score",) and full_scale()["toy_score"] == 10.0
    assert score_unit("toy_score") == "points"
    assert metric_score("toy_score", 7.5) == "7.5" and metric_score("toy_score", 0.5, signed=True) == "+0.5"


def test_a_benchmark_whose_spec_class_names_another_is_refused() -> None:
    with pytest.raises(ValueError, match=r"benchmark 'other': its spec class ToySpec must have "
                                         r"`name: Literal\['other'\]`"):
        Benchmark("other", ToySpec)
