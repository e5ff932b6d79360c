"""Checkpoint audits: what video fine-tuning did to a model family ("temporal trap").

The headline is each benchmark's official score against the base (`engine.metrics.checkpoint_official`:
the study's numbers); this module gives the per-question view beside it, item by item.

The study (`engine.metrics.checkpoint_study`) names each checkpoint's base. Per family (a base
and the checkpoints naming it), dataset and budget of the base's chains
(`engine.metrics.grid.budget_table`), the *paired items* are those with a usable (ok, non-null
``correct``) result for every model of the family at that budget, so every checkpoint is
measured on the same items and a checkpoint's gain equals its net flow:

- accuracy A_k(d, g) = mean over the paired items; gain = A_k(d, g) - A_base(d, g)
- rescue / harm / net / churn from the base to checkpoint k at the same budget
  (`engine.metrics.crossmodel.checkpoint_flows`; the base against itself is all zeros)

Budgets of the online predicted run (``pred-<predictor>``: a frame count per item) are no
fixed budget and are left out.

A dataset's kind comes from its items' media (the rows' ``media_kind``), never from a budget's
frame count: an image benchmark evaluated at a 16-frame budget is still an image benchmark.
``video`` when any row's item is a video, else ``image`` when any is an image, else ``text``
(text-only data). Rows committed before ``media_kind`` fall back to what was sent: ``image``
when none of them sent more than one frame (``frames_sent``). ``image_datasets`` overrides it all.

Temporal trap, per checkpoint and frame count f: video gain = mean over video datasets of
the gain at f (macro mean; a dataset with several chain budgets of f frames counts at its
dearest); image gain = mean over image datasets of the gain at the dataset's image budget
(``image``: the image asked once as one image at its own size; it does not depend on f; rows of
older sweeps without one: the dearest visual budget, which sent the same image capped at its
size; `engine.metrics.checkpoint_study.score_rows`), named in ``image_budgets``; image loss = -image gain;
``trapped`` = video gain > 0 and image gain < 0. On official scores the gain is a dataset's
official delta (`official_trap`); per question (`temporal_trap`) its accuracy gain on the paired
items, where every MMBench rotation and every MME question is an item.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from engine.metrics.benchmark_scores import GROUP_COLUMNS, benchmark_scores
from engine.metrics.checkpoint_official import (
    chain_cells,
    headline_table,
    image_budgets,
    official_cells,
    official_trap,
)
from engine.metrics.checkpoint_study import (
    Checkpoint,
    families,
    resolve_study,
    score_budget,
    score_deltas,
    score_rows,
    study_frame,
    study_records,
    train_frames_view,
)
from engine.metrics.crossmodel import checkpoint_flows
from engine.metrics.grid import CATEGORY_COLUMNS, budget_table
from engine.metrics.predictor import fixed_budget_rows
from engine.metrics.summary import SNAPSHOT_COLUMNS

__all__ = ["CHECKPOINT_COLUMNS", "checkpoint_document", "checkpoint_table", "checkpoint_tables", "dataset_kinds",
           "dataset_view", "official_trap", "temporal_trap"]

CHECKPOINT_COLUMNS: list[str] = list(dict.fromkeys([*SNAPSHOT_COLUMNS, "dataset_version", "media_kind",
                                                    *GROUP_COLUMNS]))
"""The result columns the checkpoint tables read."""

_CELL = ["dataset", "budget_id"]

Study = Sequence[Checkpoint] | Sequence[str]


def dataset_kinds(rows: pl.LazyFrame, image_datasets: Sequence[str] | None = None) -> pl.LazyFrame:
    """Each dataset's kind, ``image``, ``video`` or ``text``, from its items' media (module docstring).

    Returns:
        dataset, kind; by dataset.
    """
    media = pl.col("media_kind")
    stats = rows.group_by("dataset").agg(
        (media == "video").any().alias("_video"), (media == "image").any().alias("_image"),
        (media == "none").any().alias("_none"),
        pl.col("frames_sent").filter(media.is_null()).max().alias("_sent"))
    kind = (pl.when(pl.col("_video")).then(pl.lit("video")).when(pl.col("_image")).then(pl.lit("image"))
            .when(pl.col("_none")).then(pl.lit("text"))
            .when(pl.col("_sent").fill_null(0) > 1).then(pl.lit("video")).otherwise(pl.lit("image")))
    if image_datasets is not None:
        kind = pl.when(pl.col("dataset").is_in(list(image_datasets))).then(pl.lit("image")).otherwise(
            pl.when(kind == "image").then(pl.lit("video")).otherwise(kind))
    return stats.select("dataset", kind.alias("kind")).sort("dataset")


def _paired_rows(rows: pl.LazyFrame, models: list[str]) -> pl.LazyFrame:
    """Usable rows on the base's chain, restricted to the paired items (`rows`: the listed models only)."""
    ok = rows.filter((pl.col("status") == "ok") & pl.col("correct").is_not_null())
    chain = budget_table(ok.filter(pl.col("model_id") == models[0])).select(_CELL).unique()
    ok = ok.join(chain, on=_CELL, how="semi")
    common = (ok.group_by([*_CELL, "item_id"]).agg(pl.col("model_id").n_unique().alias("_n"))
              .filter(pl.col("_n") == len(models)).select([*_CELL, "item_id"]))
    return ok.join(common, on=[*_CELL, "item_id"], how="semi")


def _family_table(rows: pl.LazyFrame, models: list[str], by: list[str]) -> pl.LazyFrame:
    """One family's table (`rows`: fixed-budget rows of its models; the first model is the base)."""
    rows = rows.filter(pl.col("model_id").is_in(models))
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
    return (
        acc.join(base, on=["dataset", *by, "budget_id"], how="inner", nulls_equal=True)
        .join(flows.drop("n"), on=["model_id", "dataset", *by, "budget_id"], how="inner", nulls_equal=True)
        .join(ranks, on=_CELL, how="left")
        .with_columns(pl.lit(models[0]).alias("base_id"), (pl.col("accuracy") - pl.col("base_accuracy")).alias("gain"))
    )


def checkpoint_table(rows: pl.LazyFrame, study: Study, image_datasets: Sequence[str] | None = None,
                     by: Sequence[str] = ()) -> pl.LazyFrame:
    """Accuracy, gain and flows of every checkpoint against its base, per dataset and budget.

    Args:
        rows: One row per key.
        study: The checkpoints (`engine.metrics.checkpoint_study.Checkpoint`), or model ids in order, the
            first the base of the others.
        image_datasets: The image benchmarks (default: from the items' media, `dataset_kinds`).
        by: Extra split columns (a category); rows where one is null are left out.

    Returns:
        model_id, order (position in the study), base_id (the family's base; a base's own rows name
        itself), dataset, kind, *by, budget_id, frames, rank (the budget's place in the base's cost
        order), score_budget (the budget the dataset's score is read from: a video dataset's dearest,
        an image dataset's image budget; `engine.metrics.checkpoint_study.score_budget`), n_items,
        accuracy, base_accuracy, gain, rescue, harm, net, churn; by order, base, dataset, *by, rank.
    """
    study, by = resolve_study(study), list(by)
    ids = [c.model_id for c in study]
    rows = fixed_budget_rows(rows.filter(pl.col("model_id").is_in(ids)))
    order = study_frame(study).select("model_id", "order")
    return (
        pl.concat([_family_table(rows, fam, by) for fam in families(study)])
        .join(order, on="model_id", how="left").join(dataset_kinds(rows, image_datasets), on="dataset", how="left")
        .with_columns(score_budget(["base_id", "model_id", "dataset", *by]).alias("score_budget"))
        .select(["model_id", "order", "base_id", "dataset", "kind", *by, "budget_id", "frames", "rank", "score_budget",
                 "n_items", "accuracy", "base_accuracy", "gain", "rescue", "harm", "net", "churn"])
        .sort(["order", "base_id", "dataset", *by, "rank"])
    )


def dataset_view(table: pl.LazyFrame) -> pl.LazyFrame:
    """Per (checkpoint, dataset): the row of `table` (`checkpoint_table` or `official_cells`) at the budget the
    dataset's score is read from: a video dataset's dearest budget, an image dataset's image budget
    (`engine.metrics.checkpoint_study.score_rows`)."""
    return score_rows(table)


def _negate(e: pl.Expr) -> pl.Expr:
    """-e, without the -0.0 that would print as a loss of "-0"."""
    return pl.when(e == 0).then(pl.lit(0.0)).otherwise(-e)


def temporal_trap(table: pl.LazyFrame) -> pl.LazyFrame:
    """Video gain against image loss per checkpoint and frame count (definitions in the module docstring).

    Args:
        table: `checkpoint_table` output without a category split.

    Returns:
        model_id, order, base_id, frames, n_video_datasets, video_accuracy, video_gain, n_image_datasets,
        image_accuracy, image_gain, image_loss, image_budgets (``dataset:budget_id`` of each image dataset
        counted, the budget its score is read from), trapped; by order, base and frames. No image dataset:
        the image columns are null (n_image_datasets 0) and ``trapped`` is null where the video
        gained, false where it did not.
    """
    who = ["model_id", "order", "base_id"]
    video = (
        table.filter(pl.col("kind") == "video")
        .filter(pl.col("rank") == pl.col("rank").max().over([*who, "dataset", "frames"]))
        .group_by([*who, "frames"])
        .agg(pl.len().cast(pl.Int64).alias("n_video_datasets"), pl.col("accuracy").mean().alias("video_accuracy"),
             pl.col("gain").mean().alias("video_gain"))
    )
    image = (
        score_rows(table.filter(pl.col("kind") == "image"), [*who, "dataset"])
        .group_by(who)
        .agg(pl.len().cast(pl.Int64).alias("n_image_datasets"), pl.col("accuracy").mean().alias("image_accuracy"),
             pl.col("gain").mean().alias("image_gain"), image_budgets(pl.col("gain").is_not_null()))
    )
    return (
        video.join(image, on=who, how="left")
        .with_columns(pl.col("n_image_datasets").fill_null(0), _negate(pl.col("image_gain")).alias("image_loss"),
                      ((pl.col("video_gain") > 0) & (pl.col("image_gain") < 0)).alias("trapped"))
        .select([*who, "frames", "n_video_datasets", "video_accuracy", "video_gain",
                 "n_image_datasets", "image_accuracy", "image_gain", "image_loss", "image_budgets", "trapped"])
        .sort(["order", "base_id", "frames"])
    )


def _held(frame: pl.LazyFrame) -> pl.LazyFrame:
    return frame.collect().lazy()


def checkpoint_tables(rows: pl.LazyFrame, study: Study, image_datasets: Sequence[str] | None = None,
                      categories: Sequence[str] = CATEGORY_COLUMNS,
                      benchmarks: Mapping[str, str] | None = None) -> dict[str, pl.LazyFrame]:
    """Every checkpoint table: lazy frames over the shared pieces, which are computed here.

    Args:
        rows: One row per key.
        study: The checkpoints, or model ids in order (the first the base).
        image_datasets: Override of the datasets' kinds (default: from the items' media).
        categories: Category columns to split the per-question table by.
        benchmarks: {dataset: adapter name} (`engine.metrics.benchmark_scores.benchmark_scores`).

    Returns:
        On official scores: ``headlines`` (`engine.metrics.checkpoint_official.headline_table`), ``cells``
        (`official_cells`), ``datasets`` (those at each dataset's dearest budget), ``trap`` (`official_trap`),
        ``train_frames`` (`train_frames_view` of the cells), ``scores`` (`benchmark_scores` of the study's
        models at fixed budgets) and ``score_deltas``; ``kinds`` (`dataset_kinds` of the datasets the study's
        models ran); per question: ``pq:table`` (`checkpoint_table`), ``pq:datasets`` (`dataset_view`),
        ``pq:trap`` (`temporal_trap`), ``pq:train_frames`` and ``cat:<column>`` (`checkpoint_table` split by
        each category column).
    """
    study = resolve_study(study)
    # the pieces every table reads are computed once here (small: per model, dataset and budget): as one lazy
    # plan each table repeated them (~5,000 plan lines for the trap table, seconds on a few dozen rows)
    table = _held(checkpoint_table(rows, study, image_datasets))
    mine = _held(fixed_budget_rows(rows.filter(pl.col("model_id").is_in([c.model_id for c in study]))))
    kinds = _held(dataset_kinds(mine, image_datasets))
    scores = _held(benchmark_scores(mine, benchmarks))
    deltas = _held(score_deltas(scores, study))
    headlines = _held(headline_table(deltas, chain_cells(mine, study), kinds))
    cells = _held(official_cells(headlines))
    return {"headlines": headlines, "cells": cells, "datasets": dataset_view(cells), "trap": official_trap(cells),
            "train_frames": train_frames_view(cells, study), "kinds": kinds, "scores": scores,
            "score_deltas": deltas, "pq:table": table, "pq:datasets": dataset_view(table),
            "pq:trap": temporal_trap(table), "pq:train_frames": train_frames_view(table, study),
            **{f"cat:{c}": checkpoint_table(rows, study, image_datasets, by=[c]) for c in categories}}


def checkpoint_document(tables: dict[str, pl.DataFrame], study: Study) -> dict[str, Any]:
    """The collected `checkpoint_tables` as JSON-ready data.

    Shape: {models (ids in study order), base (the first base), bases, checkpoints (the study:
    model_id, base, train_frames, size, architecture, label), dataset_kinds: {dataset: kind},
    image_datasets, video_datasets,
    headlines: [rows of `headline_table`: each headline score beside the base's, every chain budget],
    datasets: [rows of `official_cells` at each dataset's dearest budget],
    temporal_trap: [rows of `official_trap`], train_frames: [rows of `train_frames_view` on official deltas],
    benchmark_scores: [{model_id, dataset, budget_id, metric, subset, value, headline, missing}],
    score_deltas: [rows of `score_deltas`],
    per_question: {table: [rows of `checkpoint_table`], datasets: [rows of `dataset_view`], temporal_trap:
    [rows of `temporal_trap`], train_frames: [rows of `train_frames_view` with rescue / harm], categories:
    {column: [rows]} (only categories with rows)}}.
    Rates are fractions; gains and net in [-1, 1]; official deltas in the score's unit (MME points) and
    on its full scale (``delta_scaled``, ``gain``).
    """
    study = resolve_study(study)
    kinds = tables["kinds"]
    bases = [fam[0] for fam in families(study)]
    return {
        "models": [c.model_id for c in study], "base": bases[0], "bases": bases, "checkpoints": study_records(study),
        "dataset_kinds": dict(kinds.select("dataset", "kind").iter_rows()),
        "image_datasets": kinds.filter(pl.col("kind") == "image")["dataset"].to_list(),
        "video_datasets": kinds.filter(pl.col("kind") == "video")["dataset"].to_list(),
        "headlines": tables["headlines"].to_dicts(), "datasets": tables["datasets"].to_dicts(),
        "temporal_trap": tables["trap"].to_dicts(), "train_frames": tables["train_frames"].to_dicts(),
        "benchmark_scores": tables["scores"].to_dicts(), "score_deltas": tables["score_deltas"].to_dicts(),
        "per_question": {
            "table": tables["pq:table"].to_dicts(), "datasets": tables["pq:datasets"].to_dicts(),
            "temporal_trap": tables["pq:trap"].to_dicts(), "train_frames": tables["pq:train_frames"].to_dicts(),
            "categories": {name.removeprefix("cat:"): df.to_dicts() for name, df in tables.items()
                           if name.startswith("cat:") and not df.is_empty()},
        },
    }
