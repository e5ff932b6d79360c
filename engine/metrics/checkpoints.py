"""Checkpoint audits: what video fine-tuning did to a model family, item by item ("temporal trap").

Models are given in order, the first is the base. Per dataset and budget of the base's
chains (`engine.metrics.grid.budget_table`), the *paired items* are those with a usable
(ok, non-null ``correct``) result for every listed model at that budget, so every
checkpoint is measured on the same items and a checkpoint's gain equals its net flow:

- accuracy A_k(d, g) = mean over the paired items; gain = A_k(d, g) - A_base(d, g)
- rescue / harm / net / churn from the base to checkpoint k at the same budget
  (`engine.metrics.crossmodel.checkpoint_flows`; the base against itself is all zeros)

Budgets of the online predicted run (``pred-<predictor>``: a frame count per item) are no
fixed budget and are left out.

A dataset is an *image* benchmark when named in ``image_datasets``; without that list,
when none of its rows has more than one frame. Everything else is *video*.

Temporal trap, per checkpoint and frame count f: video gain = mean over video datasets of
the gain at f (macro mean; a dataset with several chain budgets of f frames counts at its
dearest); image gain = mean over image datasets of the gain at the dataset's dearest
budget (the image itself; it does not depend on f); image loss = -image gain;
``trapped`` = video gain > 0 and image gain < 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from engine.metrics.crossmodel import checkpoint_flows
from engine.metrics.grid import CATEGORY_COLUMNS, budget_table
from engine.metrics.predictor import fixed_budget_rows

__all__ = ["checkpoint_document", "checkpoint_table", "checkpoint_tables", "dataset_kinds", "temporal_trap"]

_CELL = ["dataset", "budget_id"]


def _check(models: Sequence[str]) -> list[str]:
    models = list(models)
    if len(models) < 2 or len(set(models)) != len(models):
        raise ValueError(f"need two or more distinct models (the first is the base), got {models}")
    return models


def dataset_kinds(rows: pl.LazyFrame, image_datasets: Sequence[str] | None = None) -> pl.LazyFrame:
    """Each dataset's kind, ``image`` or ``video``.

    Returns:
        dataset, kind; by dataset.
    """
    stats = rows.group_by("dataset").agg(pl.col("frames").max().alias("_max"))
    image = pl.col("_max").fill_null(0) <= 1 if image_datasets is None else pl.col("dataset").is_in(
        list(image_datasets))
    return stats.select("dataset", pl.when(image).then(pl.lit("image")).otherwise(pl.lit("video")).alias("kind")).sort(
        "dataset")


def _paired_rows(rows: pl.LazyFrame, models: list[str]) -> pl.LazyFrame:
    """Usable rows on the base's chain, restricted to the paired items (`rows`: the listed models only)."""
    ok = rows.filter((pl.col("status") == "ok") & pl.col("correct").is_not_null())
    chain = budget_table(ok.filter(pl.col("model_id") == models[0])).select(_CELL).unique()
    ok = ok.join(chain, on=_CELL, how="semi")
    common = (ok.group_by([*_CELL, "item_id"]).agg(pl.col("model_id").n_unique().alias("_n"))
              .filter(pl.col("_n") == len(models)).select([*_CELL, "item_id"]))
    return ok.join(common, on=[*_CELL, "item_id"], how="semi")


def checkpoint_table(rows: pl.LazyFrame, models: Sequence[str], image_datasets: Sequence[str] | None = None,
                     by: Sequence[str] = ()) -> pl.LazyFrame:
    """Accuracy, gain and flows of every checkpoint against the base, per dataset and budget.

    Args:
        rows: One row per key.
        models: The checkpoints in order; the first is the base.
        image_datasets: The image benchmarks (default: datasets with at most one frame per row).
        by: Extra split columns (a category); rows where one is null are left out.

    Returns:
        model_id, order (position in `models`), dataset, kind, *by, budget_id, frames, rank (the
        budget's place in the base's cost order), n_items, accuracy, base_accuracy, gain, rescue,
        harm, net, churn; by order, dataset, *by, rank.
    """
    models, by = _check(models), list(by)
    rows = fixed_budget_rows(rows.filter(pl.col("model_id").is_in(models)))
    paired = _paired_rows(rows, models)
    if by:
        paired = paired.drop_nulls(by)
    ranks = budget_table(rows.filter(pl.col("model_id") == models[0])).select(
        *_CELL, pl.col("budget_rank").alias("rank")).unique()
    acc = paired.group_by(["model_id", "dataset", *by, "budget_id"]).agg(
        pl.len().cast(pl.Int64).alias("n_items"), pl.col("correct").cast(pl.Float64).mean().alias("accuracy"))
    base = acc.filter(pl.col("model_id") == models[0]).select(
        "dataset", *by, "budget_id", pl.col("accuracy").alias("base_accuracy"))
    flows = pl.concat([checkpoint_flows(paired, models[0], m, by).with_columns(pl.lit(m).alias("model_id"))
                       for m in models])
    order = pl.col("model_id").replace_strict(models, list(range(len(models))), return_dtype=pl.Int64)
    return (
        acc.join(base, on=["dataset", *by, "budget_id"], how="inner", nulls_equal=True)
        .join(flows.drop("n"), on=["model_id", "dataset", *by, "budget_id"], how="inner", nulls_equal=True)
        .join(ranks, on=_CELL, how="left").join(dataset_kinds(rows, image_datasets), on="dataset", how="left")
        .with_columns(order.alias("order"), (pl.col("accuracy") - pl.col("base_accuracy")).alias("gain"))
        .select(["model_id", "order", "dataset", "kind", *by, "budget_id", "frames", "rank", "n_items", "accuracy",
                 "base_accuracy", "gain", "rescue", "harm", "net", "churn"])
        .sort(["order", "dataset", *by, "rank"])
    )


def _negate(e: pl.Expr) -> pl.Expr:
    """-e, without the -0.0 that would print as a loss of "-0"."""
    return pl.when(e == 0).then(pl.lit(0.0)).otherwise(-e)


def temporal_trap(table: pl.LazyFrame) -> pl.LazyFrame:
    """Video gain against image loss per checkpoint and frame count (definitions in the module docstring).

    Args:
        table: `checkpoint_table` output without a category split.

    Returns:
        model_id, order, frames, n_video_datasets, video_accuracy, video_gain, n_image_datasets,
        image_accuracy, image_gain, image_loss, trapped; by order and frames. No image dataset:
        the image columns are null (n_image_datasets 0) and ``trapped`` is null where the video
        gained, false where it did not.
    """
    video = (
        table.filter(pl.col("kind") == "video")
        .filter(pl.col("rank") == pl.col("rank").max().over(["model_id", "dataset", "frames"]))
        .group_by(["model_id", "order", "frames"])
        .agg(pl.len().cast(pl.Int64).alias("n_video_datasets"), pl.col("accuracy").mean().alias("video_accuracy"),
             pl.col("gain").mean().alias("video_gain"))
    )
    image = (
        table.filter(pl.col("kind") == "image")
        .filter(pl.col("rank") == pl.col("rank").max().over(["model_id", "dataset"]))
        .group_by("model_id")
        .agg(pl.len().cast(pl.Int64).alias("n_image_datasets"), pl.col("accuracy").mean().alias("image_accuracy"),
             pl.col("gain").mean().alias("image_gain"))
    )
    return (
        video.join(image, on="model_id", how="left")
        .with_columns(pl.col("n_image_datasets").fill_null(0), _negate(pl.col("image_gain")).alias("image_loss"),
                      ((pl.col("video_gain") > 0) & (pl.col("image_gain") < 0)).alias("trapped"))
        .select(["model_id", "order", "frames", "n_video_datasets", "video_accuracy", "video_gain",
                 "n_image_datasets", "image_accuracy", "image_gain", "image_loss", "trapped"])
        .sort(["order", "frames"])
    )


def checkpoint_tables(rows: pl.LazyFrame, models: Sequence[str], image_datasets: Sequence[str] | None = None,
                      categories: Sequence[str] = CATEGORY_COLUMNS) -> dict[str, pl.LazyFrame]:
    """Every checkpoint table, to be collected together.

    Returns:
        ``table`` (`checkpoint_table`), ``trap`` (`temporal_trap`), ``kinds`` (`dataset_kinds` of
        the datasets the listed models ran) and ``cat:<column>`` (`checkpoint_table` split by each category column).
    """
    table = checkpoint_table(rows, models, image_datasets)
    kinds = dataset_kinds(rows.filter(pl.col("model_id").is_in(list(models))), image_datasets)
    return {"table": table, "trap": temporal_trap(table), "kinds": kinds,
            **{f"cat:{c}": checkpoint_table(rows, models, image_datasets, by=[c]) for c in categories}}


def checkpoint_document(tables: dict[str, pl.DataFrame], models: Sequence[str]) -> dict[str, Any]:
    """The collected `checkpoint_tables` as JSON-ready data.

    Shape: {models, base, image_datasets, video_datasets, table: [rows of `checkpoint_table`],
    temporal_trap: [rows of `temporal_trap`], categories: {column: [rows]}} (only categories
    with rows). Rates are fractions; gains and net in [-1, 1].
    """
    kinds = tables["kinds"]
    return {
        "models": list(models), "base": models[0],
        "image_datasets": kinds.filter(pl.col("kind") == "image")["dataset"].to_list(),
        "video_datasets": kinds.filter(pl.col("kind") == "video")["dataset"].to_list(),
        "table": tables["table"].to_dicts(), "temporal_trap": tables["trap"].to_dicts(),
        "categories": {name.removeprefix("cat:"): df.to_dicts() for name, df in tables.items()
                       if name.startswith("cat:") and not df.is_empty()},
    }
