"""Official benchmark scores beside per-question accuracy, one long table over result rows.

`benchmark_scores` gives one row per (model_id, dataset, budget_id, metric, subset) with its
value, as each benchmark publishes it (the rules live in `engine.datasets.scoring_rules`):

- ``accuracy`` (every dataset with judged rows): right / judged over ok rows (a fraction).
- MME: ``mme_perception`` and ``mme_cognition``, points summed over the subtasks present
  (acc + acc+ per subtask, x100; at most 2000 and 800); per subtask (`subset` = the MME
  category): ``mme_score`` (acc + acc+), ``mme_acc``, ``mme_acc_plus``.
- POPE: ``pope_accuracy``, ``pope_f1``, ``pope_precision``, ``pope_recall``, ``pope_yes_ratio``
  ("yes" positive; fractions) over all questions (`subset` null, as lmms-eval pools them) and
  per split (`subset` = adversarial, popular, random).
- MMStar: ``mmstar_accuracy`` (its official score is plain accuracy).
- MMBench: ``mmbench_circular_accuracy`` (a question right only when every rotation is, over
  questions with every rotation answered) and ``mmbench_vanilla_accuracy`` (the unrotated question).

Which benchmark a dataset is: `benchmarks` ({dataset: adapter name}, e.g. from the run's spec,
where a dataset may carry its own id), else its rows' ``dataset_version`` (``mme.fs1``,
``pope.fs1``, ``mmstar-val.fs1``, ``mmbench-dev.fs1``).

Groups (an MME image's two questions, an MMBench question's rotations) come from the rows'
``group_id``; rows committed before that column fall back to the ids' own conventions (MME
``<category>/<image>#<k>``: the image; MMBench ``index + r x 1,000,000``: the index). An MMBench
question's rotations are the items seen in any row of the dataset (error rows too), so a
rotation no model ever ran leaves the question looking complete with one rotation fewer.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from engine.datasets.mmbench import CIRCULAR_STEP
from engine.datasets.mme import COGNITION, PERCEPTION
from engine.datasets.scoring_rules import mmbench_circular_accuracy, mme_scores, mme_totals, pope_metrics

__all__ = ["BENCHMARK_SCORE_SCHEMA", "SCORED_BENCHMARKS", "benchmark_column", "benchmark_scores", "score_groups"]

KEYS = ["model_id", "dataset", "budget_id"]
SCORED_BENCHMARKS = ("mme", "pope", "mmstar", "mmbench")
"""Benchmarks with an official score beside accuracy."""

BENCHMARK_SCORE_SCHEMA: dict[str, pl.DataType] = {
    "model_id": pl.String(), "dataset": pl.String(), "budget_id": pl.String(), "metric": pl.String(),
    "subset": pl.String(), "value": pl.Float64(),
}

_VERSION_PREFIX = r"^(mme|pope|mmstar|mmbench)(?:[.-]|$)"


def benchmark_column(benchmarks: Mapping[str, str] | None = None) -> pl.Expr:
    """The adapter name of each row's dataset (null when neither `benchmarks` nor the version tells)."""
    from_version = pl.col("dataset_version").str.extract(_VERSION_PREFIX, 1)
    if not benchmarks:
        return from_version.alias("benchmark")
    named = pl.col("dataset").replace_strict(dict(benchmarks), default=None, return_dtype=pl.String)
    return pl.coalesce(named, from_version).alias("benchmark")


def score_groups(rows: pl.LazyFrame) -> pl.LazyFrame:
    """dataset, item_id, group_id, position of every item in `rows` (the group table `scoring_rules` takes).

    `rows` must carry the ``benchmark`` column (`benchmark_column`); position is the MMBench rotation.
    """
    index = pl.col("item_id").cast(pl.Int64, strict=False)
    mmbench = pl.col("benchmark") == "mmbench"
    fallback = (pl.when(mmbench).then((index % CIRCULAR_STEP).cast(pl.String))
                .when(pl.col("benchmark") == "mme").then(pl.col("item_id").str.replace(r"#\d+$", ""))
                .otherwise(pl.col("item_id")))
    return (
        rows.group_by("dataset", "item_id")
        .agg(pl.col("group_id").drop_nulls().first(), pl.col("benchmark").first())
        .select("dataset", "item_id", pl.coalesce("group_id", fallback).alias("group_id"),
                pl.when(mmbench).then(index // CIRCULAR_STEP).otherwise(0).alias("position"))
    )


def _long(frame: pl.LazyFrame, metrics: Mapping[str, str], subset: str | None = None) -> pl.LazyFrame:
    """Wide score columns -> (KEYS, metric, subset, value) rows; `metrics` maps column -> metric name."""
    sub = pl.col(subset) if subset else pl.lit(None, dtype=pl.String)
    return (
        frame.select(*KEYS, sub.alias("subset"), *[pl.col(c).cast(pl.Float64).alias(m) for c, m in metrics.items()])
        .unpivot(index=[*KEYS, "subset"], variable_name="metric", value_name="value")
        .select(list(BENCHMARK_SCORE_SCHEMA))
    )


_POPE = {"accuracy": "pope_accuracy", "f1": "pope_f1", "precision": "pope_precision", "recall": "pope_recall",
         "yes_ratio": "pope_yes_ratio"}


def benchmark_scores(rows: pl.LazyFrame, benchmarks: Mapping[str, str] | None = None) -> pl.LazyFrame:
    """Accuracy of every dataset and the official scores of MME, POPE, MMStar and MMBench (module docstring).

    Args:
        rows: Result rows (any status; only ok rows are scored).
        benchmarks: {dataset: adapter name} where a dataset's id is not its adapter's version prefix.

    Returns:
        model_id, dataset, budget_id, metric, subset, value; sorted by those.
    """
    rows = rows.with_columns(benchmark_column(benchmarks))
    ok = rows.filter(pl.col("status") == "ok")
    judged = ok.filter(pl.col("correct").is_not_null())
    acc = judged.group_by(KEYS).agg(pl.col("correct").cast(pl.Float64).mean().alias("accuracy"))
    groups = score_groups(rows)

    def of(name: str) -> pl.LazyFrame:
        return rows.filter(pl.col("benchmark") == name)

    mme = mme_scores(of("mme"), groups)
    present = mme.group_by(KEYS).agg(pl.col("category").is_in(list(PERCEPTION)).any().alias("_p"),
                                     pl.col("category").is_in(list(COGNITION)).any().alias("_c"))
    totals = mme_totals(mme).join(present, on=KEYS).with_columns(  # a half of MME that was not run has no total
        pl.when(pl.col("_p")).then(pl.col("perception")).alias("perception"),
        pl.when(pl.col("_c")).then(pl.col("cognition")).alias("cognition"))
    mmstar = judged.filter(pl.col("benchmark") == "mmstar").group_by(KEYS).agg(
        pl.col("correct").cast(pl.Float64).mean().alias("mmstar_accuracy"))
    mmbench = mmbench_circular_accuracy(of("mmbench"), groups.join(
        of("mmbench").select("dataset").unique(), on="dataset", how="semi"), dataset=None)
    parts = [
        _long(acc, {"accuracy": "accuracy"}),
        _long(totals, {"perception": "mme_perception", "cognition": "mme_cognition"}).drop_nulls("value"),
        _long(mme, {"score": "mme_score", "acc": "mme_acc", "acc_plus": "mme_acc_plus"}, subset="category"),
        _long(pope_metrics(of("pope"), by=()), _POPE),
        _long(pope_metrics(of("pope"), by=("category",)), _POPE, subset="category"),
        _long(mmstar, {"mmstar_accuracy": "mmstar_accuracy"}),
        _long(mmbench, {"circular_accuracy": "mmbench_circular_accuracy",
                        "vanilla_accuracy": "mmbench_vanilla_accuracy"}),
    ]
    return pl.concat(parts).sort([*KEYS, "metric", "subset"], nulls_last=False)
