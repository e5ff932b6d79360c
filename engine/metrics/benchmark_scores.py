"""Official benchmark scores beside per-question accuracy, one long table over result rows.

`benchmark_scores` gives one row per (model_id, dataset, budget_id, metric, subset) with its
value, as each benchmark publishes it (the rules live in `engine.datasets.scoring_rules`), a
``headline`` flag (the benchmark's own score, `HEADLINES`) and ``missing`` (what a null total lacks):

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

Which benchmark a dataset is: `benchmarks` ({dataset: adapter name}, e.g. from the run's spec,
where a dataset may carry its own id), else its rows' ``dataset_version`` (``mme.fs1``,
``mmbench-dev.fs1``, ``videomme-v2.fs1``, ...).

Groups (an MME image's two questions, an MMBench question's rotations, a Video-MME v2 group) come
from the rows' ``group_id`` and their size, type and structure from ``group_size``,
``group_type`` and ``group_structure``; rows committed before those columns fall back to the ids'
own conventions (MME ``<category>/<image>#<k>``: the image, two questions; MMBench ``index + r x
1,000,000``: the index, with the rotations seen in any row of the dataset as its size).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from engine.datasets.mmbench import CIRCULAR_STEP
from engine.datasets.scoring_rules import (
    GROUP_TABLE_SCHEMA,
    mmbench_circular_accuracy,
    mme_scores,
    mme_totals,
    pope_metrics,
    videomme_accuracy,
    videomme_v2_group_scores,
    videomme_v2_summary,
)
from engine.runtime.output import points

__all__ = ["BENCHMARK_SCORE_SCHEMA", "FULL_SCALE", "GROUP_COLUMNS", "HEADLINES", "SCORE_COLUMNS", "benchmark_column",
           "benchmark_scores", "group_scores", "score_groups", "score_text"]

KEYS = ["model_id", "dataset", "budget_id"]

HEADLINES: dict[str, tuple[str, ...]] = {
    "mme": ("mme_perception", "mme_cognition"),
    "pope": ("pope_f1_split_mean", "pope_accuracy_split_mean"),
    "mmstar": ("mmstar_accuracy",),
    "mmbench": ("mmbench_circular_accuracy",),
    "videomme": ("videomme_accuracy",),
    "videomme_v2": ("videomme_v2_score",),
    "mvbench": ("mvbench_accuracy",),
    "tempcompass": ("tempcompass_score",),
    "video_mmmu": ("video_mmmu_accuracy",),
}
"""Each benchmark's own score(s), in its own unit (subset null; Video-MMMU: each track). A dataset of no
benchmark here has ``accuracy`` as its headline."""
_PER_SUBSET_HEADLINES = ("video_mmmu_accuracy",)

FULL_SCALE: dict[str, float] = {"mme_perception": 2000.0, "mme_cognition": 800.0, "videomme_v2_score": 100.0}
"""A headline's full scale where it is not 1 (fractions): MME points, Video-MME v2's 0-100."""

BENCHMARK_SCORE_SCHEMA: dict[str, pl.DataType] = {
    "model_id": pl.String(), "dataset": pl.String(), "budget_id": pl.String(), "metric": pl.String(),
    "subset": pl.String(), "value": pl.Float64(), "headline": pl.Boolean(), "missing": pl.List(pl.String()),
}
SCORE_COLUMNS = list(BENCHMARK_SCORE_SCHEMA)
GROUP_COLUMNS: dict[str, pl.DataType] = {"group_id": pl.String(), "group_size": pl.Int32(), "group_type": pl.String(),
                                         "group_structure": pl.String()}
"""The result columns that describe an item's scoring group (null where rows predate them)."""

def score_text(metric: str, v: float | None, signed: bool = False) -> str:
    """A score as published: MME and Video-MME v2 in points, counts as counts, fractions as percentages."""
    if v is None:
        return "n/a"
    if "_n_" in metric:
        return f"{v:+.0f}" if signed else f"{v:.0f}"
    if metric.startswith("mme_") or (metric.startswith("videomme_v2_") and metric.endswith("score")):
        return f"{v:+.1f}" if signed else f"{v:.1f}"
    return points(v, signed)


_VERSION_PREFIX = r"^(mme|pope|mmstar|mmbench|videomme-v1|videomme-v2|mvbench|tempcompass|video_mmmu)(?:[.-]|$)"
_VERSION_NAMES = {"videomme-v1": "videomme", "videomme-v2": "videomme_v2"}


def benchmark_column(benchmarks: Mapping[str, str] | None = None) -> pl.Expr:
    """The adapter name of each row's dataset (null when neither `benchmarks` nor the version tells)."""
    prefix = pl.col("dataset_version").str.extract(_VERSION_PREFIX, 1)
    from_version = prefix.replace(_VERSION_NAMES)
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


def _long(frame: pl.LazyFrame, metrics: Mapping[str, str], subset: str | None = None) -> pl.LazyFrame:
    """Wide score columns -> (KEYS, metric, subset, value) rows; `metrics` maps column -> metric name."""
    sub = pl.col(subset) if subset else pl.lit(None, dtype=pl.String)
    return (
        frame.select(*KEYS, sub.cast(pl.String).alias("subset"),
                     *[pl.col(c).cast(pl.Float64).alias(m) for c, m in metrics.items()])
        .unpivot(index=[*KEYS, "subset"], variable_name="metric", value_name="value")
        .select(*KEYS, "metric", "subset", "value")
    )


def _mean_of(per_subset: pl.LazyFrame, value: str, name: str) -> pl.LazyFrame:
    """The mean of `value` over the subsets of each (model, dataset, budget), as metric `name`."""
    return _long(per_subset.group_by(KEYS).agg(pl.col(value).mean().alias(name)), {name: name})


_POPE = {"accuracy": "pope_accuracy", "f1": "pope_f1", "precision": "pope_precision", "recall": "pope_recall",
         "yes_ratio": "pope_yes_ratio"}


def _mme(rows: pl.LazyFrame, groups: pl.LazyFrame) -> list[pl.LazyFrame]:
    scores = mme_scores(rows, groups)
    totals = mme_totals(scores)
    halves = [_long(totals, {half: f"mme_{half}"}).join(
        totals.select(*KEYS, pl.col(f"{half}_missing").alias("missing")), on=KEYS, how="left")
        for half in ("perception", "cognition")]
    return [*halves,
            _long(scores, {"score": "mme_score", "acc": "mme_acc", "acc_plus": "mme_acc_plus"}, subset="category")]


def _pope(rows: pl.LazyFrame) -> list[pl.LazyFrame]:
    splits = pope_metrics(rows, by=("category",))
    return [_long(pope_metrics(rows, by=()), _POPE), _long(splits, _POPE, subset="category"),
            _mean_of(splits, "f1", "pope_f1_split_mean"), _mean_of(splits, "accuracy", "pope_accuracy_split_mean")]


def _mmbench(rows: pl.LazyFrame, groups: pl.LazyFrame) -> list[pl.LazyFrame]:
    overall = mmbench_circular_accuracy(rows, groups, dataset=None)
    per_l2 = mmbench_circular_accuracy(rows, groups, by=("task_type",), dataset=None)
    per_leaf = mmbench_circular_accuracy(rows, groups, by=("category",), dataset=None)
    return [_long(overall, {"circular_accuracy": "mmbench_circular_accuracy",
                            "circular_accuracy_complete": "mmbench_circular_accuracy_complete",
                            "n_questions": "mmbench_n_questions", "n_incomplete": "mmbench_n_incomplete",
                            "vanilla_accuracy": "mmbench_vanilla_accuracy"}),
            _long(per_l2.drop_nulls("task_type"), {"circular_accuracy": "mmbench_circular_accuracy"},
                  subset="task_type"),
            _long(per_leaf.drop_nulls("category"), {"circular_accuracy": "mmbench_leaf_circular_accuracy"},
                  subset="category")]


def _videomme_v2(rows: pl.LazyFrame, groups: pl.LazyFrame) -> list[pl.LazyFrame]:
    summary = videomme_v2_summary(videomme_v2_group_scores(rows, groups))
    return [_long(summary, {"score": "videomme_v2_score", "relevance_score": "videomme_v2_relevance_score",
                            "logic_score": "videomme_v2_logic_score", "n_groups": "videomme_v2_n_groups",
                            "n_incomplete": "videomme_v2_n_incomplete"})]


def _per_subset(judged: pl.LazyFrame, column: str, name: str) -> pl.LazyFrame:
    """Accuracy per value of `column` (as `subset`), metric `name`."""
    return judged.drop_nulls(column).group_by(*KEYS, column).agg(
        pl.col("correct").cast(pl.Float64).mean().alias(name))


def _video(judged: pl.LazyFrame, of: dict[str, pl.LazyFrame]) -> list[pl.LazyFrame]:
    """Video-MME, MVBench, TempCompass and Video-MMMU (`judged`: usable rows of those benchmarks)."""
    vmme = videomme_accuracy(of["videomme"])
    tasks = _per_subset(judged.filter(pl.col("benchmark") == "mvbench"), "category", "mvbench_accuracy")
    formats = _per_subset(judged.filter(pl.col("benchmark") == "tempcompass"), "task_type", "tempcompass_accuracy")
    tracks = _per_subset(judged.filter(pl.col("benchmark") == "video_mmmu"), "task_type", "video_mmmu_accuracy")
    return [
        _long(vmme, {"accuracy_official": "videomme_accuracy", "accuracy_counted": "videomme_accuracy_counted",
                     "n_empty": "videomme_n_empty"}),
        _long(tasks, {"mvbench_accuracy": "mvbench_accuracy"}, subset="category"),
        _mean_of(tasks, "mvbench_accuracy", "mvbench_accuracy"),
        _long(formats, {"tempcompass_accuracy": "tempcompass_accuracy"}, subset="task_type"),
        _mean_of(formats, "tempcompass_accuracy", "tempcompass_score"),
        _long(tracks, {"video_mmmu_accuracy": "video_mmmu_accuracy"}, subset="task_type"),
    ]


def _headline(benchmark: pl.Expr) -> pl.Expr:
    """Whether a score row is its benchmark's headline (`HEADLINES`; accuracy for a dataset of no benchmark)."""
    names = pl.lit(None, pl.Boolean)
    for bench, metrics in HEADLINES.items():
        names = pl.when(benchmark == bench).then(pl.col("metric").is_in(list(metrics))).otherwise(names)
    own = pl.when(benchmark.is_in(list(HEADLINES)).fill_null(False)).then(names).otherwise(
        pl.col("metric") == "accuracy")
    return own & (pl.col("subset").is_null() | pl.col("metric").is_in(list(_PER_SUBSET_HEADLINES)))


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
    of = {name: rows.filter(pl.col("benchmark") == name) for name in HEADLINES}
    groups = {name: score_groups(of[name]) for name in ("mme", "mmbench", "videomme_v2")}
    mmstar = judged.filter(pl.col("benchmark") == "mmstar").group_by(KEYS).agg(
        pl.col("correct").cast(pl.Float64).mean().alias("mmstar_accuracy"))
    parts = [
        _long(acc, {"accuracy": "accuracy"}), *_mme(of["mme"], groups["mme"]), *_pope(of["pope"]),
        _long(mmstar, {"mmstar_accuracy": "mmstar_accuracy"}), *_mmbench(of["mmbench"], groups["mmbench"]),
        *_videomme_v2(of["videomme_v2"], groups["videomme_v2"]), *_video(judged, of),
    ]
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
