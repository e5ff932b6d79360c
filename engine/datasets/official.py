"""Each benchmark's official scores as long rows, the `official` of its registration (`engine.datasets.benchmark`).

Every scorer takes `OfficialRows` (its datasets' rows, the judged ones, their groups) and returns frames of
(model_id, dataset, budget_id, metric, subset, value[, missing]); `engine.metrics.benchmark_scores` joins them
beside accuracy. The rules themselves are `engine.datasets.scoring_rules`; what each metric means is written in
`engine.metrics.benchmark_scores`.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from engine.datasets.benchmark import OfficialRows
from engine.datasets.scoring_rules import (
    mmbench_circular_accuracy,
    mme_scores,
    mme_totals,
    pope_metrics,
    videomme_accuracy,
    videomme_v2_group_scores,
    videomme_v2_summary,
)

__all__ = ["KEYS", "long_scores", "mean_of", "mmbench", "mme", "mmstar", "mvbench", "pope", "tempcompass",
           "video_mmmu", "videomme", "videomme_v2"]

KEYS = ["model_id", "dataset", "budget_id"]


def long_scores(frame: pl.LazyFrame, metrics: Mapping[str, str], subset: str | None = None) -> pl.LazyFrame:
    """Wide score columns -> (KEYS, metric, subset, value) rows; `metrics` maps column -> metric name."""
    sub = pl.col(subset) if subset else pl.lit(None, dtype=pl.String)
    return (
        frame.select(*KEYS, sub.cast(pl.String).alias("subset"),
                     *[pl.col(c).cast(pl.Float64).alias(m) for c, m in metrics.items()])
        .unpivot(index=[*KEYS, "subset"], variable_name="metric", value_name="value")
        .select(*KEYS, "metric", "subset", "value")
    )


def mean_of(per_subset: pl.LazyFrame, value: str, name: str) -> pl.LazyFrame:
    """The mean of `value` over the subsets of each (model, dataset, budget), as metric `name`."""
    return long_scores(per_subset.group_by(KEYS).agg(pl.col(value).mean().alias(name)), {name: name})


def _per_subset(judged: pl.LazyFrame, column: str, name: str) -> pl.LazyFrame:
    """Accuracy per value of `column` (as `subset`), metric `name`."""
    return judged.drop_nulls(column).group_by(*KEYS, column).agg(
        pl.col("correct").cast(pl.Float64).mean().alias(name))


def mme(of: OfficialRows) -> list[pl.LazyFrame]:
    """Perception and cognition totals (with what a null one lacks), and each subtask's scores."""
    scores = mme_scores(of.rows, of.groups)
    totals = mme_totals(scores)
    halves = [long_scores(totals, {half: f"mme_{half}"}).join(
        totals.select(*KEYS, pl.col(f"{half}_missing").alias("missing")), on=KEYS, how="left")
        for half in ("perception", "cognition")]
    return [*halves,
            long_scores(scores, {"score": "mme_score", "acc": "mme_acc", "acc_plus": "mme_acc_plus"},
                        subset="category")]


_POPE = {"accuracy": "pope_accuracy", "f1": "pope_f1", "precision": "pope_precision", "recall": "pope_recall",
         "yes_ratio": "pope_yes_ratio"}


def pope(of: OfficialRows) -> list[pl.LazyFrame]:
    """The pooled and per-split figures, and the split means."""
    splits = pope_metrics(of.rows, by=("category",))
    return [long_scores(pope_metrics(of.rows, by=()), _POPE), long_scores(splits, _POPE, subset="category"),
            mean_of(splits, "f1", "pope_f1_split_mean"), mean_of(splits, "accuracy", "pope_accuracy_split_mean")]


def mmstar(of: OfficialRows) -> list[pl.LazyFrame]:
    """Plain accuracy, MMStar's own score."""
    acc = of.judged.group_by(KEYS).agg(pl.col("correct").cast(pl.Float64).mean().alias("mmstar_accuracy"))
    return [long_scores(acc, {"mmstar_accuracy": "mmstar_accuracy"})]


def mmbench(of: OfficialRows) -> list[pl.LazyFrame]:
    """Circular accuracy overall, per l2 and per leaf category, with its counts and the vanilla accuracy."""
    overall = mmbench_circular_accuracy(of.rows, of.groups, dataset=None)
    per_l2 = mmbench_circular_accuracy(of.rows, of.groups, by=("task_type",), dataset=None)
    per_leaf = mmbench_circular_accuracy(of.rows, of.groups, by=("category",), dataset=None)
    return [long_scores(overall, {"circular_accuracy": "mmbench_circular_accuracy",
                                  "circular_accuracy_complete": "mmbench_circular_accuracy_complete",
                                  "n_questions": "mmbench_n_questions", "n_incomplete": "mmbench_n_incomplete",
                                  "vanilla_accuracy": "mmbench_vanilla_accuracy"}),
            long_scores(per_l2.drop_nulls("task_type"), {"circular_accuracy": "mmbench_circular_accuracy"},
                        subset="task_type"),
            long_scores(per_leaf.drop_nulls("category"), {"circular_accuracy": "mmbench_leaf_circular_accuracy"},
                        subset="category")]


def videomme(of: OfficialRows) -> list[pl.LazyFrame]:
    """Accuracy as the official script counts it (empty answers left out), counted, and the empty answers."""
    return [long_scores(videomme_accuracy(of.rows), {"accuracy_official": "videomme_accuracy",
                                                     "accuracy_counted": "videomme_accuracy_counted",
                                                     "n_empty": "videomme_n_empty"})]


def videomme_v2(of: OfficialRows) -> list[pl.LazyFrame]:
    """The Non-Lin Score and its relevance and logic halves over complete groups, and the group counts."""
    summary = videomme_v2_summary(videomme_v2_group_scores(of.rows, of.groups))
    return [long_scores(summary, {"score": "videomme_v2_score", "relevance_score": "videomme_v2_relevance_score",
                                  "logic_score": "videomme_v2_logic_score", "n_groups": "videomme_v2_n_groups",
                                  "n_incomplete": "videomme_v2_n_incomplete"})]


def mvbench(of: OfficialRows) -> list[pl.LazyFrame]:
    """Accuracy per task, and their mean."""
    tasks = _per_subset(of.judged, "category", "mvbench_accuracy")
    return [long_scores(tasks, {"mvbench_accuracy": "mvbench_accuracy"}, subset="category"),
            mean_of(tasks, "mvbench_accuracy", "mvbench_accuracy")]


def tempcompass(of: OfficialRows) -> list[pl.LazyFrame]:
    """Accuracy per task format, and their mean."""
    formats = _per_subset(of.judged, "task_type", "tempcompass_accuracy")
    return [long_scores(formats, {"tempcompass_accuracy": "tempcompass_accuracy"}, subset="task_type"),
            mean_of(formats, "tempcompass_accuracy", "tempcompass_score")]


def video_mmmu(of: OfficialRows) -> list[pl.LazyFrame]:
    """Accuracy per track."""
    tracks = _per_subset(of.judged, "task_type", "video_mmmu_accuracy")
    return [long_scores(tracks, {"video_mmmu_accuracy": "video_mmmu_accuracy"}, subset="task_type")]
