"""The checkpoint study on official scores: each benchmark's own score against the base.

A researcher who runs the study reads each benchmark's official score (MME perception and
cognition points, MMBench circular accuracy, POPE F1 and accuracy averaged over its splits,
MMStar accuracy, Video-MME accuracy, Video-MME v2's group score, MVBench mean task accuracy,
TempCompass's score, Video-MMMU per track; accuracy for a dataset of no official rule: each
benchmark's registered `headlines`, `engine.datasets.benchmark`). Per checkpoint, dataset and budget
of its base's chains:

- the *headline deltas* (`headline_table`): each headline score of the checkpoint minus its
  base's, in the benchmark's own unit, and on its full scale (``delta_scaled``);
- the dataset's *official delta* (`official_cells`, column ``gain``): the mean of its headline
  deltas on their full scale (MME: perception / 2000 and cognition / 800; POPE: F1 and
  accuracy; Video-MMMU: its tracks), null when one of them is null (an MME total missing a
  subtask), so such a dataset is left out of the trap and counted nowhere;
- the temporal trap (`official_trap`), per checkpoint and evaluated frame count f: video gain =
  mean over video datasets of their official delta at their dearest budget of f frames; image
  gain = mean over image datasets at their image budget (``image``, else their dearest visual budget:
  `engine.metrics.checkpoint_study.score_rows`; named in ``image_budgets``); image loss = -image gain; trapped =
  video gain > 0 and image gain < 0. The train-frames view is
  `engine.metrics.checkpoint_study.train_frames_view` over the same cells.

Each score is the benchmark's over the model's own ok rows (`benchmark_scores`), not over items
paired across the family: that is what the per-question view (`engine.metrics.checkpoints`) does.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from engine.metrics.checkpoint_study import Checkpoint, families, score_rows
from engine.metrics.grid import budget_table

__all__ = ["chain_cells", "headline_table", "image_budgets", "official_cells", "official_trap"]

_WHO = ["model_id", "order", "base_id"]


def chain_cells(rows: pl.LazyFrame, study: Sequence[Checkpoint]) -> pl.LazyFrame:
    """base_id, dataset, budget_id, frames, rank: each budget of each base's chains, in the base's cost order
    (`rows`: fixed-budget rows of the study's models)."""
    return pl.concat([
        budget_table(rows.filter(pl.col("model_id") == fam[0])).select(
            pl.lit(fam[0]).alias("base_id"), "dataset", "budget_id", "frames",
            pl.col("budget_rank").cast(pl.Int64).alias("rank")).unique()
        for fam in families(study)])


def headline_table(deltas: pl.LazyFrame, cells: pl.LazyFrame, kinds: pl.LazyFrame) -> pl.LazyFrame:
    """The headline rows of `score_deltas` on the base's chains.

    Returns:
        model_id, order, base_id, dataset, kind, budget_id, frames, rank, metric, subset, value, base_value,
        delta (own unit), scale, delta_scaled, missing, base_missing; by order, base, dataset, rank, metric,
        subset.
    """
    return (
        deltas.filter(pl.col("headline"))
        .join(cells, on=["base_id", "dataset", "budget_id"], how="inner")
        .join(kinds, on="dataset", how="left")
        .select(*_WHO, "dataset", "kind", "budget_id", "frames", "rank", "metric", "subset", "value", "base_value",
                "delta", "scale", "delta_scaled", "missing", "base_missing")
        .sort(["order", "base_id", "dataset", "rank", "metric", "subset"], nulls_last=False)
    )


def official_cells(headlines: pl.LazyFrame) -> pl.LazyFrame:
    """Per checkpoint, dataset and budget: n_headlines and gain, the mean of the headline deltas on their full
    scale (null when one is null).

    Returns:
        model_id, order, base_id, dataset, kind, budget_id, frames, rank, n_headlines, gain; by order, base,
        dataset, rank.
    """
    d = pl.col("delta_scaled")
    return (
        headlines.group_by(*_WHO, "dataset", "kind", "budget_id", "frames", "rank")
        .agg(pl.len().cast(pl.Int64).alias("n_headlines"), pl.when(d.null_count() == 0).then(d.mean()).alias("gain"))
        .sort(["order", "base_id", "dataset", "rank"])
    )


def _negate(e: pl.Expr) -> pl.Expr:
    """-e, without the -0.0 that would print as a loss of "-0"."""
    return pl.when(e == 0).then(pl.lit(0.0)).otherwise(-e)


def official_trap(cells: pl.LazyFrame) -> pl.LazyFrame:
    """Video gain against image loss on official scores, per checkpoint and frame count (module docstring).

    Returns:
        model_id, order, base_id, frames, n_video_datasets, video_gain, n_image_datasets, image_gain,
        image_loss, image_budgets (``dataset:budget_id`` of each image dataset counted), trapped; by order,
        base and frames. A dataset whose official delta is null is not
        counted; no image dataset with one: the image columns are null (n_image_datasets 0) and
        ``trapped`` is null where the video gained, false where it did not.
    """
    video = (
        cells.filter(pl.col("kind") == "video")
        .filter(pl.col("rank") == pl.col("rank").max().over([*_WHO, "dataset", "frames"]))
        .group_by([*_WHO, "frames"])
        .agg(pl.col("gain").count().cast(pl.Int64).alias("n_video_datasets"), pl.col("gain").mean().alias("video_gain"))
    )
    image = (
        score_rows(cells.filter(pl.col("kind") == "image"), [*_WHO, "dataset"])
        .group_by(_WHO)
        .agg(pl.col("gain").count().cast(pl.Int64).alias("n_image_datasets"), pl.col("gain").mean().alias("image_gain"),
             image_budgets(pl.col("gain").is_not_null()))
    )
    return (
        video.join(image, on=_WHO, how="left")
        .with_columns(pl.col("n_image_datasets").fill_null(0), _negate(pl.col("image_gain")).alias("image_loss"),
                      ((pl.col("video_gain") > 0) & (pl.col("image_gain") < 0)).alias("trapped"))
        .select([*_WHO, "frames", "n_video_datasets", "video_gain", "n_image_datasets", "image_gain", "image_loss",
                 "image_budgets", "trapped"])
        .sort(["order", "base_id", "frames"])
    )


def image_budgets(counted: pl.Expr) -> pl.Expr:
    """In an aggregation over image datasets' score rows: ``dataset:budget_id`` of each one `counted`, sorted."""
    return pl.concat_str("dataset", pl.lit(":"), "budget_id").filter(counted).sort().alias("image_budgets")
