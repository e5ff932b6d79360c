"""Checkpoint audits: per-dataset gains and flows against the base, and the temporal-trap view."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from helpers.checkpoint_rows import MODELS, checkpoint_rows
from helpers.metric_rows import collect_both, lazy, row, write_sweep
from typer.testing import CliRunner

from engine.cli import app
from engine.metrics.checkpoints import (
    checkpoint_document,
    checkpoint_table,
    checkpoint_tables,
    dataset_kinds,
    temporal_trap,
)
from engine.metrics.crossmodel import checkpoint_flows


def _rows() -> pl.LazyFrame:
    return lazy(checkpoint_rows())


def test_dataset_kinds() -> None:
    assert collect_both(dataset_kinds(_rows())).rows() == [("img", "image"), ("img2", "image"), ("vid", "video"),
                                                           ("vid2", "video")]
    named = collect_both(dataset_kinds(_rows(), ["img"]))
    assert named["kind"].to_list() == ["image", "video", "video", "video"]


def test_checkpoint_table() -> None:
    t = collect_both(checkpoint_table(_rows(), MODELS))
    ft1 = t.filter(pl.col("model_id") == "ft1")
    cols = ("order", "dataset", "kind", "budget_id", "frames", "rank", "n_items", "rescue", "harm")
    assert ft1.select(cols).rows() == [
        (1, "img", "image", "img", 1, 0, 3, 0, 1),
        (1, "img2", "image", "text", 0, 0, 2, 0, 1), (1, "img2", "image", "img", 1, 1, 2, 0, 1),
        (1, "vid", "video", "text", 0, 0, 2, 0, 1), (1, "vid", "video", "f8", 8, 1, 3, 0, 0),
        (1, "vid", "video", "f16", 16, 2, 3, 1, 0),
        (1, "vid2", "video", "f8", 8, 0, 2, 1, 0), (1, "vid2", "video", "f16", 16, 1, 2, 1, 0),
    ]
    assert ft1["accuracy"].to_list() == pytest.approx([1 / 3, 0, 0.5, 0, 2 / 3, 1 / 3, 1, 1])
    assert ft1["base_accuracy"].to_list() == pytest.approx([2 / 3, 0.5, 1, 0.5, 2 / 3, 0, 0.5, 0.5])
    assert ft1["gain"].to_list() == pytest.approx([-1 / 3, -0.5, -0.5, -0.5, 0, 1 / 3, 0.5, 0.5])
    assert ft1["gain"].to_list() == pytest.approx(ft1["net"].to_list())  # paired items: gain == net
    assert ft1["churn"].to_list() == pytest.approx([1 / 3, 0.5, 0.5, 0.5, 0, 1 / 3, 0.5, 0.5])
    ft2 = t.filter(pl.col("model_id") == "ft2")
    assert ft2.select("dataset", "budget_id", "rescue", "harm").rows() == [
        ("img", "img", 1, 1), ("img2", "text", 1, 1), ("img2", "img", 0, 0), ("vid", "text", 1, 0),
        ("vid", "f8", 0, 0), ("vid", "f16", 3, 0), ("vid2", "f8", 0, 0), ("vid2", "f16", 0, 1)]
    assert ft2["churn"].to_list() == pytest.approx([2 / 3, 1, 0, 0.5, 0, 1, 0, 0.5])
    base = t.filter(pl.col("model_id") == "base")
    assert base["gain"].to_list() == [0.0] * 8 and base["churn"].to_list() == [0.0] * 8
    assert t["model_id"].to_list() == ["base"] * 8 + ["ft1"] * 8 + ["ft2"] * 8


def test_predicted_run_budgets_are_left_out() -> None:
    online = [row(m, "vid", i, "pred-p", f, "1") for m in MODELS for i, f in (("a", 8), ("c", 16), ("d", 0))]
    t = collect_both(checkpoint_table(lazy([*checkpoint_rows(), *online]), MODELS))
    assert "pred-p" not in t["budget_id"].to_list() and t.height == 24


def test_checkpoint_table_by_category() -> None:
    t = collect_both(checkpoint_table(_rows(), MODELS, by=["task_type"])).filter(pl.col("model_id") == "ft2")
    assert t.select("dataset", "task_type", "budget_id", "n_items", "rescue", "harm").rows() == [
        ("vid", "x", "text", 2, 1, 0), ("vid", "x", "f8", 3, 0, 0), ("vid", "x", "f16", 3, 3, 0),
        ("vid2", "x", "f8", 1, 0, 0), ("vid2", "x", "f16", 1, 0, 1),
        ("vid2", "y", "f8", 1, 0, 0), ("vid2", "y", "f16", 1, 0, 0),
    ]
    assert t["gain"].to_list() == pytest.approx([0.5, 0, 1, 0, -1, 0, 0])


def test_checkpoint_flows_split_by_category() -> None:
    got = collect_both(checkpoint_flows(_rows(), "base", "ft1", by=["task_type"]).filter(pl.col("dataset") == "vid"))
    # over the items both have (b is there: ft2 plays no part here)
    assert got.select("task_type", "budget_id", "rescue", "harm", "n").rows() == [
        ("x", "text", 0, 1, 2), ("x", "f8", 0, 0, 3), ("x", "f16", 1, 0, 3),
        ("y", "text", 1, 0, 1), ("y", "f8", 0, 0, 1), ("y", "f16", 0, 0, 1)]


def test_temporal_trap() -> None:
    trap = collect_both(temporal_trap(checkpoint_table(_rows(), MODELS)))
    assert trap.select("model_id", "order", "frames", "n_video_datasets", "n_image_datasets", "trapped").rows() == [
        ("base", 0, 0, 1, 2, False), ("base", 0, 8, 2, 2, False), ("base", 0, 16, 2, 2, False),
        ("ft1", 1, 0, 1, 2, False), ("ft1", 1, 8, 2, 2, True), ("ft1", 1, 16, 2, 2, True),
        ("ft2", 2, 0, 1, 2, False), ("ft2", 2, 8, 2, 2, False), ("ft2", 2, 16, 2, 2, False),
    ]
    approx = pytest.approx
    assert trap["video_gain"].to_list() == approx([0, 0, 0, -0.5, 0.25, 5 / 12, 0.5, 0, 0.25])
    assert trap["video_accuracy"].to_list() == approx([0.5, 7 / 12, 0.25, 0, 5 / 6, 2 / 3, 1, 7 / 12, 0.5])
    # image datasets count at their dearest budget (img2: "img", not "text")
    assert trap["image_gain"].to_list() == approx([0, 0, 0] + [-5 / 12] * 3 + [0, 0, 0])
    assert trap["image_loss"].to_list() == approx([0, 0, 0] + [5 / 12] * 3 + [0, 0, 0])
    assert trap["image_accuracy"].to_list() == approx([5 / 6] * 3 + [5 / 12] * 3 + [5 / 6] * 3)
    assert not any(str(v).startswith("-0") for v in trap["image_loss"].to_list())


def test_temporal_trap_without_image_datasets() -> None:
    rows = lazy([r for r in checkpoint_rows() if r.dataset.startswith("vid")])
    trap = collect_both(temporal_trap(checkpoint_table(rows, ["base", "ft1"])))
    assert trap.select("model_id", "frames", "n_image_datasets", "image_gain", "trapped").rows() == [
        ("base", 0, 0, None, False), ("base", 8, 0, None, False), ("base", 16, 0, None, False),
        ("ft1", 0, 0, None, False), ("ft1", 8, 0, None, None), ("ft1", 16, 0, None, None)]


def test_models_are_checked() -> None:
    for bad in (["base"], ["base", "base"]):
        with pytest.raises(ValueError, match="two or more distinct models"):
            checkpoint_table(_rows(), bad)


def test_document() -> None:
    tables = checkpoint_tables(_rows(), MODELS, image_datasets=["img", "img2"], categories=("task_type", "duration"))
    doc = checkpoint_document({k: collect_both(v) for k, v in tables.items()}, MODELS)
    assert set(doc) == {"models", "base", "bases", "checkpoints", "dataset_kinds", "image_datasets", "video_datasets",
                        "headlines", "datasets", "temporal_trap", "train_frames", "benchmark_scores", "score_deltas",
                        "per_question"}
    assert doc["dataset_kinds"] == {"img": "image", "img2": "image", "vid": "video", "vid2": "video"}
    assert (doc["base"], doc["image_datasets"], doc["video_datasets"]) == ("base", ["img", "img2"], ["vid", "vid2"])
    pq = doc["per_question"]
    assert list(pq["categories"]) == ["task_type"]  # no duration values: left out
    assert len(pq["table"]) == 24 and len(pq["temporal_trap"]) == 9
    assert len(doc["temporal_trap"]) == 6  # official: the two checkpoints at 0, 8 and 16 frames
    json.dumps(doc, allow_nan=False)


def test_checkpoints_command(tmp_path: Path) -> None:
    write_sweep(tmp_path / "sweep", checkpoint_rows())
    out = tmp_path / "c.json"
    res = CliRunner().invoke(app, ["checkpoints", str(tmp_path / "sweep"), "--models", "base,ft1,ft2",
                                   "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert "temporal trap vs base" in res.output and "yes" in res.output
    doc = json.loads(out.read_text())
    assert doc["schema"] == "framesweep.checkpoints/3"
    # official (no official rule here: each dataset's accuracy over the model's own ok rows): vid at f16 base
    # 1/4, ft1 2/4 -> +1/4; vid2 base 1/2, ft1 1 -> +1/2; video gain 3/8. Per question (paired items) 5/12.
    ft1_16 = next(r for r in doc["temporal_trap"] if (r["model_id"], r["frames"]) == ("ft1", 16))
    assert ft1_16["trapped"] is True and ft1_16["video_gain"] == pytest.approx(3 / 8)
    pq_16 = next(r for r in doc["per_question"]["temporal_trap"] if (r["model_id"], r["frames"]) == ("ft1", 16))
    assert pq_16["trapped"] is True and pq_16["video_gain"] == pytest.approx(5 / 12)
    res = CliRunner().invoke(app, ["checkpoints", str(tmp_path / "sweep"), "--models", "base",
                                   "--image-datasets", "img"])
    assert res.exit_code == 2 and "two or more" in res.output
