"""Official benchmark scores beside per-question accuracy, one long table over result rows.

`benchmark_scores` gives one row per (model_id, dataset, budget_id, metric, subset) with its
value, as each benchmark publishes it (the rules live in `engine.datasets.scoring_rules`), a
``headline`` flag (the benchmark's own score, its registration's `headlines`) and ``missing`` (what a null total
lacks). Each benchmark's scores are its registration's `official` (`engine.datasets.benchmark`, the built-in ones
`engine.datasets.builtin`, their scorers `engine.datasets.official`):

- ``accuracy`` (every dataset with judged rows): right / judged over ok rows (a fraction; the
  per-question view, and the headline of a dataset without an official rule).
- MME: ``mme_perception`` and ``mme_cognition`` (headlines, points: max 2000 and 800), the sums of
  the subtask scores, null unless each of the half's 10 / 4 subtasks has a score, ``missing``
  naming those without; per subtask (`subset` = the MME category): ``mme_score`` (acc + acc+),
  ``mme_acc``, ``mme_acc_plus``.
- POPE: ``pope_accuracy``, ``pope_f1``, ``pope_precision``, ``pope_recall``, ``pope_yes_ratio``
  ("yes" positive; fractions) over all questions (`subset` null, as lmms-eval pools them) and per
  split (`subset` = adversarial, popular, random); ``pope_f1_split_mean`` and
  ``pope_accuracy_split_mean`` (headlines): the means over the splits present.
- MMStar: ``mmstar_accuracy`` (headline; its official score is plain accuracy).
- MMBench: ``mmbench_circular_accuracy`` (headline; the official figure, as VLMEvalKit counts: a
  question is right only when every rotation is, and one with a rotation failed or missing is
  wrong), beside ``mmbench_n_questions``, ``mmbench_n_incomplete`` and
  ``mmbench_circular_accuracy_complete`` (over the complete questions only);
  ``mmbench_circular_accuracy`` per l2-category (`subset`, the rows' ``task_type``);
  ``mmbench_leaf_circular_accuracy`` per leaf category (`subset`, the rows' ``category``: the file's
  ``category`` column, e.g. attribute_recognition, celebrity_recognition), each as the overall figure
  (every question of the category counts; one with a rotation failed or missing is wrong);
  ``mmbench_vanilla_accuracy`` (the unrotated question).
- Video-MME: ``videomme_accuracy`` (headline; empty answers left out of the denominator, as the
  official script does), ``videomme_accuracy_counted`` (empty answers wrong), ``videomme_n_empty``.
- Video-MME v2: ``videomme_v2_score`` (headline; the Non-Lin Score, the mean group score over
  complete groups, 0-100), ``videomme_v2_relevance_score``, ``videomme_v2_logic_score``,
  ``videomme_v2_n_groups`` (complete groups), ``videomme_v2_n_incomplete``.
- MVBench: ``mvbench_accuracy`` (headline: the mean of the task accuracies) and per task (`subset`).
- TempCompass: ``tempcompass_accuracy`` per task format (`subset` = multi-choice, yes_no,
  caption_matching: lmms-eval's avg_accuracy of that config) and ``tempcompass_score`` (headline:
  their mean over the formats present).
- Video-MMMU: ``video_mmmu_accuracy`` per track (`subset` = Perception, Comprehension,
  Adaptation; each track a headline).
- A bridged lmms-eval task (rows ``lmms_eval-<v>/<task>@...``): ``lmms_eval_score`` (headline; `subset` = the
  task's metric), the task's own ``aggregation`` over each budget's per-document results (the rows'
  ``score_detail``), in the task's unit; absent where lmms-eval is not installed (`engine.datasets.lmms_official`).

Which benchmark a dataset is: `benchmarks` ({dataset: adapter name}, e.g. from the run's spec,
where a dataset may carry its own id), else its rows' ``dataset_version`` (``mme.fs1``,
``mmbench-dev.fs1``, ``videomme-v2.fs1``, ...: a registration's `versions`).

Groups (an MME image's two questions, an MMBench question's rotations, a Video-MME v2 group) come
from the rows' ``group_id`` and their size, type and structure from ``group_size``,
``group_type`` and ``group_structure``; rows committed before those columns fall back to the ids'
own conventions (MME ``<category>/<image>#<k>``: the image, two questions; MMBench ``index + r x
1,000,000``: the index, with the rotations seen in any row of the dataset as its size).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import polars as pl

from engine.datasets.benchmark import BENCHMARKS, OfficialRows, Unit
from engine.datasets.mmbench import CIRCULAR_STEP
from engine.datasets.official import KEYS, long_scores
from engine.datasets.scoring_rules import GROUP_TABLE_SCHEMA, videomme_v2_group_scores

__all__ = ["BENCHMARK_SCORE_SCHEMA", "GROUP_COLUMNS", "SCORE_COLUMNS", "benchmark_column", "benchmark_scores",
           "full_scale", "group_scores", "headlines", "score_groups", "score_unit"]

BENCHMARK_SCORE_SCHEMA: dict[str, pl.DataType] = {
    "model_id": pl.String(), "dataset": pl.String(), "budget_id": pl.String(), "metric": pl.String(),
    "subset": pl.String(), "value": pl.Float64(), "headline": pl.Boolean(), "missing": pl.List(pl.String()),
}
SCORE_COLUMNS = list(BENCHMARK_SCORE_SCHEMA)
GROUP_COLUMNS: dict[str, pl.DataType] = {"group_id": pl.String(), "group_size": pl.Int32(), "group_type": pl.String(),
                                         "group_structure": pl.String()}
"""The result columns that describe an item's scoring group (null where rows predate them)."""


def headlines() -> dict[str, tuple[str, ...]]:
    """Benchmark -> its own score(s), in its own unit (subset null; a per-subset headline: each subset), for every
    registered benchmark with an official score. A dataset of no benchmark here has ``accuracy`` as its headline."""
    return {name: b.headlines for name, b in BENCHMARKS.items() if b.official is not None}


def full_scale() -> dict[str, float]:
    """A headline's full scale where it is not 1 (fractions): MME points, Video-MME v2's 0-100."""
    return {m: v for b in BENCHMARKS.values() for m, v in b.full_scale.items()}


def score_unit(metric: str) -> Unit:
    """How `metric` is published (its benchmark's `units`; a fraction where none names it)."""
    return next((b.units[metric] for b in BENCHMARKS.values() if metric in b.units), "fraction")


def benchmark_column(benchmarks: Mapping[str, str] | None = None) -> pl.Expr:
    """The adapter name of each row's dataset (null when neither `benchmarks` nor the version tells)."""
    names = {prefix: b.name for b in BENCHMARKS.values() for prefix in b.versions}
    pattern = rf"^({'|'.join(re.escape(p) for p in names)})(?:[.-]|$)"
    from_version = pl.col("dataset_version").str.extract(pattern, 1).replace(names)
    if not benchmarks:
        return from_version.alias("benchmark")
    named = pl.col("dataset").replace_strict(dict(benchmarks), default=None, return_dtype=pl.String)
    return pl.coalesce(named, from_version).alias("benchmark")


def score_groups(rows: pl.LazyFrame) -> pl.LazyFrame:
    """The group table `scoring_rules` takes (`GROUP_TABLE_SCHEMA`) for every item in `rows`.

    `rows` must carry the ``benchmark`` column (`benchmark_column`); position is the MMBench rotation
    (``index // 1,000,000``) and the Video-MME v2 question's place in its group (its id's ``-<k>``).
    """
    index = pl.col("item_id").cast(pl.Int64, strict=False)
    bench = pl.col("benchmark")
    fallback = (pl.when(bench == "mmbench").then((index % CIRCULAR_STEP).cast(pl.String))
                .when(bench == "mme").then(pl.col("item_id").str.replace(r"#\d+$", ""))
                .otherwise(pl.col("item_id")))
    position = (pl.when(bench == "mmbench").then(index // CIRCULAR_STEP)
                .when(bench == "videomme_v2").then(pl.col("item_id").str.extract(r"-(\d+)$", 1).cast(pl.Int64))
                .otherwise(pl.lit(0, pl.Int64)))
    return (
        rows.group_by("dataset", "item_id")
        .agg(*[pl.col(c).drop_nulls().first() for c in ("group_id", "group_size", "group_type", "group_structure")],
             bench.first())
        .select("dataset", "item_id", pl.coalesce("group_id", fallback).alias("group_id"),
                position.alias("position"), pl.col("group_size").cast(pl.Int64), "group_type", "group_structure",
                pl.lit(None, pl.Int64).alias("level"))
        .select(list(GROUP_TABLE_SCHEMA))
    )


def _headline(benchmark: pl.Expr) -> pl.Expr:
    """Whether a score row is its benchmark's headline (its `headlines`; accuracy for a dataset of no benchmark)."""
    own_names = headlines()
    per_subset = [m for b in BENCHMARKS.values() if b.headline_per_subset for m in b.headlines]
    names = pl.lit(None, pl.Boolean)
    for bench, metrics in own_names.items():
        names = pl.when(benchmark == bench).then(pl.col("metric").is_in(list(metrics))).otherwise(names)
    own = pl.when(benchmark.is_in(list(own_names)).fill_null(False)).then(names).otherwise(
        pl.col("metric") == "accuracy")
    return own & (pl.col("subset").is_null() | pl.col("metric").is_in(per_subset))


def benchmark_scores(rows: pl.LazyFrame, benchmarks: Mapping[str, str] | None = None) -> pl.LazyFrame:
    """Accuracy of every dataset and each benchmark's official scores (module docstring).

    Args:
        rows: Result rows (any status; only ok rows are scored, but every row names the questions).
        benchmarks: {dataset: adapter name} where a dataset's id is not its adapter's version prefix.

    Returns:
        `BENCHMARK_SCORE_SCHEMA`: model_id, dataset, budget_id, metric, subset, value, headline, missing;
        sorted by model, dataset, budget, metric, subset.
    """
    have = rows.collect_schema()
    rows = rows.with_columns(benchmark_column(benchmarks),
                             *[pl.lit(None, t).alias(c) for c, t in GROUP_COLUMNS.items() if c not in have])
    judged = rows.filter((pl.col("status") == "ok") & pl.col("correct").is_not_null())
    acc = judged.group_by(KEYS).agg(pl.col("correct").cast(pl.Float64).mean().alias("accuracy"))
    parts = [long_scores(acc, {"accuracy": "accuracy"})]
    for name, bench in BENCHMARKS.items():
        if bench.official is not None:
            own = rows.filter(pl.col("benchmark") == name)
            parts += bench.official(OfficialRows(own, judged.filter(pl.col("benchmark") == name), score_groups(own)))
    kinds = rows.select("dataset", "benchmark").unique(subset="dataset", keep="any")
    return (
        pl.concat([p if "missing" in p.collect_schema() else p.with_columns(
            pl.lit(None, pl.List(pl.String)).alias("missing")) for p in parts])
        .join(kinds, on="dataset", how="left")
        .with_columns(_headline(pl.col("benchmark")).alias("headline"),
                      pl.when(pl.col("missing").list.len() > 0).then(pl.col("missing")).alias("missing"))
        .select(SCORE_COLUMNS)
        .cast(pl.Schema(BENCHMARK_SCORE_SCHEMA))
        .sort([*KEYS, "metric", "subset"], nulls_last=False)
    )


def group_scores(rows: pl.LazyFrame, benchmarks: Mapping[str, str] | None = None) -> pl.LazyFrame:
    """Each Video-MME v2 group's score per (model, dataset, budget), from the rows alone
    (`engine.datasets.scoring_rules.videomme_v2_group_scores`; null while a member is unanswered).

    Returns:
        model_id, dataset, budget_id, group_id, group_type, group_structure, n, n_right, run, complete, score.
    """
    have = rows.collect_schema()
    v2 = rows.with_columns(benchmark_column(benchmarks),
                           *[pl.lit(None, t).alias(c) for c, t in GROUP_COLUMNS.items() if c not in have]).filter(
        pl.col("benchmark") == "videomme_v2")
    return videomme_v2_group_scores(v2, score_groups(v2)).drop("level")
