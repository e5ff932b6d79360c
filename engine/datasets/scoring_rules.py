"""Benchmark scores beyond one item, as pure Polars functions over result rows.

`rows` is a LazyFrame with the columns of `engine.results.schema.RESULT_SCHEMA`; only rows
with ``status == "ok"`` are scored (error rows are retried, not answers). Every
result is keyed by (model_id, dataset, budget_id) plus any `by` columns. Group-based
rules also take the items' group table (`GROUP_TABLE_SCHEMA`; `engine.metrics.benchmark_scores.score_groups`
reads it from the rows).

- `videomme_accuracy`: Video-MME accuracy with empty extractions excluded from the
  denominator (official) and counted wrong.
- `videomme_v2_group_scores` / `videomme_v2_summary`: Video-MME v2 relevance and logic
  group scores (0-100) and their means (the "Non-Lin Score").
- `pope_metrics`: POPE accuracy, precision, recall, F1 and yes-ratio ("yes" positive).
- `mme_scores` / `mme_totals`: MME acc and acc+ per category (x100), score = acc + acc+,
  and the perception / cognition totals (null, naming the missing subtasks, unless every
  subtask of the half has a score).
- `mmbench_circular_accuracy`: MMBench circular evaluation (a question is right only when
  every rotation of its options is; one with a rotation failed or missing counts wrong, as in
  VLMEvalKit) beside the accuracy over complete questions and the vanilla accuracy of the
  unrotated questions.

A group's size is the benchmark's (``group_size`` in the group table: MME 2, an MMBench
question's option count, Video-MME v2 4), never the number of rows that happen to exist.

Rates here follow each benchmark's convention: Video-MME accuracy, POPE metrics and
MMBench accuracies are fractions in [0, 1]; MME and Video-MME v2 scores are on their official 0-100 scale.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from engine.datasets.mme import COGNITION, PERCEPTION, QUESTIONS_PER_IMAGE
from engine.datasets.videomme_v2 import GROUP_SIZE as V2_GROUP_SIZE
from engine.datasets.videomme_v2 import LOGIC_STEPS

__all__ = [
    "GROUP_TABLE_SCHEMA",
    "mmbench_circular_accuracy",
    "mme_scores",
    "mme_totals",
    "pope_metrics",
    "videomme_accuracy",
    "videomme_v2_group_scores",
    "videomme_v2_summary",
]

KEYS = ["model_id", "dataset", "budget_id"]

GROUP_TABLE_SCHEMA: dict[str, pl.DataType] = {
    "dataset": pl.String(),
    "item_id": pl.String(),
    "group_id": pl.String(),
    "position": pl.Int64(),
    "group_size": pl.Int64(),
    "group_type": pl.String(),
    "group_structure": pl.String(),
    "level": pl.Int64(),
}

_SIXTEENTHS = {0: 0.0, 1: 100 / 16, 2: 400 / 16, 3: 900 / 16, 4: 100.0}
_GROUP_MAPS: dict[str, dict[int, float]] = {
    "relevance": _SIXTEENTHS,
    "logic:[1,2,3,4]": _SIXTEENTHS,
    "logic:[1,[2,3],4]": {0: 0.0, 1: 100 / 12, 2: 400 / 12, 3: 700 / 12, 4: 100.0},
    "logic:[[1,2],3,4]": {0: 0.0, 1: 10.0, 2: 20.0, 3: 50.0, 4: 100.0},
}


def _ok(rows: pl.LazyFrame) -> pl.LazyFrame:
    return rows.filter(pl.col("status") == "ok")


_GROUP_COLUMNS = ("group_id", "group_size", "group_type", "group_structure")


def _ok_for_groups(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Ok rows without their own group columns: the group table given beside them is the membership."""
    return _ok(rows).drop(*_GROUP_COLUMNS, strict=False)


def videomme_accuracy(rows: pl.LazyFrame, by: Sequence[str] = ()) -> pl.LazyFrame:
    """n, n_empty, n_correct, accuracy_official (empty answers left out) and accuracy_counted (empty = wrong)."""
    keys = [*KEYS, *by]
    empty = pl.col("pred").is_null() | (pl.col("pred").str.strip_chars() == "")
    answered = pl.col("n") - pl.col("n_empty")
    return (
        _ok(rows)
        .group_by(keys)
        .agg(n=pl.len(), n_empty=empty.sum(), n_correct=pl.col("correct").fill_null(False).sum())
        .with_columns(
            accuracy_official=pl.when(answered > 0).then(pl.col("n_correct") / answered),
            accuracy_counted=pl.col("n_correct") / pl.col("n"),
        )
        .sort(keys)
    )


def _group_map() -> pl.LazyFrame:
    recs = [(key, k, score) for key, m in _GROUP_MAPS.items() for k, score in m.items()]
    return pl.LazyFrame(recs, schema={"map_key": pl.String, "k": pl.Int64, "score": pl.Float64}, orient="row")


def _chain_steps() -> pl.LazyFrame:
    recs = [(structure, q, step) for structure, steps in LOGIC_STEPS.items() for q, step in enumerate(steps, 1)]
    return pl.LazyFrame(recs, schema={"_structure": pl.String, "position": pl.Int64, "step": pl.Int64},
                        orient="row")


def _logic_runs(answers: pl.LazyFrame) -> pl.LazyFrame:
    """Per (model, dataset, budget, group): run, the right answers on the chain steps reached (`chain_steps` in
    `engine.datasets.videomme_v2`: a step is reached when every earlier one is wholly right); a structure of no
    known chain counts each position as its own step (the plain leading run)."""
    c = pl.col("correct").fill_null(False).cast(pl.Int64)
    per_step = (
        answers.with_columns(_structure=pl.col("group_structure").str.replace_all(r"\s", ""))
        .join(_chain_steps(), on=["_structure", "position"], how="left")
        .group_by([*KEYS, "group_id", pl.coalesce("step", "position").alias("step")])
        .agg(n_right=c.sum(), whole=c.min() == 1)
    )
    reached = pl.col("whole").sort_by("step").shift(1, fill_value=True).cum_min()
    return per_step.group_by([*KEYS, "group_id"]).agg(run=pl.col("n_right").sort_by("step").filter(reached).sum())


def videomme_v2_group_scores(rows: pl.LazyFrame, groups: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    """One row per (model, dataset, budget, group): its answers right, chain run and score (0-100).

    relevance: k = answers right (any order) -> {0, 100/16, 400/16, 900/16, 100}.
    logic: k = ``run``, the right answers along the group's chain (first-error truncation, where the parallel
    questions of a structure such as ``[1,[2,3],4]`` are one step: each right one counts, and the chain goes on
    past them only when all are right; the official rule, `engine.datasets.videomme_v2.chain_steps`), mapped by
    the group's structure. A group missing any of its answers (``group_size``, 4) gets no score (`complete`
    false).
    """
    c = pl.col("correct").fill_null(False).cast(pl.Int64)
    answers = _ok_for_groups(rows).join(groups.lazy(), on=["dataset", "item_id"], how="inner")
    per_group = (
        answers
        .group_by([*KEYS, "group_id"])
        .agg(
            group_type=pl.col("group_type").first(),
            group_structure=pl.col("group_structure").first(),
            level=pl.col("level").first(),
            group_size=pl.col("group_size").first(),
            n=pl.len(),
            n_right=c.sum(),
        )
        .join(_logic_runs(answers), on=[*KEYS, "group_id"], how="left")
        .with_columns(
            complete=pl.col("n") == pl.col("group_size").fill_null(V2_GROUP_SIZE),
            map_key=pl.when(pl.col("group_type") == "logic")
            .then(pl.lit("logic:") + pl.col("group_structure").str.replace_all(r"\s", ""))
            .otherwise(pl.col("group_type")),
            k=pl.when(pl.col("group_type") == "logic").then(pl.col("run")).otherwise(pl.col("n_right")),
        )
    )
    return (
        per_group.join(_group_map(), on=["map_key", "k"], how="left")
        .with_columns(score=pl.when(pl.col("complete")).then(pl.col("score")))
        .drop("map_key", "k", "group_size")
        .sort([*KEYS, "group_id"])
    )


def videomme_v2_summary(group_scores: pl.LazyFrame, by: Sequence[str] = ()) -> pl.LazyFrame:
    """Mean group score overall and per group type, over complete groups (the Non-Lin Score, 0-100).

    n_groups counts the complete groups, n_incomplete those with some of their answers but not all
    (no score yet); a (model, dataset, budget) with no complete group has null scores.
    """
    keys = [*KEYS, *by]
    score = pl.col("score")  # null for an incomplete group: means skip it
    return (
        group_scores.group_by(keys)
        .agg(
            n_groups=pl.col("complete").sum(),
            n_incomplete=(~pl.col("complete")).sum(),
            score=score.mean(),
            relevance_score=score.filter(pl.col("group_type") == "relevance").mean(),
            logic_score=score.filter(pl.col("group_type") == "logic").mean(),
        )
        .sort(keys)
    )


def pope_metrics(rows: pl.LazyFrame, by: Sequence[str] = ("category",)) -> pl.LazyFrame:
    """POPE's accuracy, precision, recall, F1 and yes-ratio with "yes" as positive (fractions)."""
    keys = [*KEYS, *by]
    pred = pl.col("pred").str.strip_chars().str.to_lowercase()
    said_yes, said_no = (pred == "yes").fill_null(False), (pred == "no").fill_null(False)
    gold = pl.col("answer").str.to_lowercase() == "yes"
    p, r = pl.col("precision"), pl.col("recall")
    return (
        _ok(rows)
        .group_by(keys)
        .agg(n=pl.len(), tp=(said_yes & gold).sum(), fp=(said_yes & ~gold).sum(),
             tn=(said_no & ~gold).sum(), fn=(~said_yes & gold).sum())
        .with_columns(
            accuracy=(pl.col("tp") + pl.col("tn")) / pl.col("n"),
            precision=pl.when(pl.col("tp") + pl.col("fp") > 0).then(pl.col("tp") / (pl.col("tp") + pl.col("fp"))),
            recall=pl.when(pl.col("tp") + pl.col("fn") > 0).then(pl.col("tp") / (pl.col("tp") + pl.col("fn"))),
            yes_ratio=(pl.col("tp") + pl.col("fp")) / pl.col("n"),
        )
        .with_columns(f1=pl.when(p + r > 0).then(2 * p * r / (p + r)).when(p + r == 0).then(0.0))
        .sort(keys)
    )


def mme_scores(rows: pl.LazyFrame, groups: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    """Per category: acc (questions right) and acc+ (images with both questions right), x100; score = sum.

    acc is over the ok rows, as every accuracy here; acc+ is over the *complete* images, those
    with an ok row for each of the image's questions (its ``group_size`` in `groups`, MME's 2 where
    the table has none): an image with a question unanswered (an error row, or no row) is neither
    right nor wrong yet, and an image of one question is never complete (acc+ over it would repeat
    acc). Columns: n (ok rows), n_images (images with an ok row), n_complete, acc, acc_plus, score.
    """
    keys = [*KEYS, "category"]
    members = groups.lazy().select("dataset", "item_id", "group_id")
    sizes = groups.lazy().group_by("dataset", "group_id").agg(
        n_questions=pl.col("group_size").drop_nulls().first().fill_null(QUESTIONS_PER_IMAGE))
    scored = (
        _ok_for_groups(rows)
        .join(members, on=["dataset", "item_id"], how="left")
        .with_columns(pl.col("correct").fill_null(False), pl.coalesce("group_id", "item_id").alias("group_id"))
    )
    acc = scored.group_by(keys).agg(n=pl.len(), acc=pl.col("correct").mean() * 100)
    plus = (
        scored.group_by([*keys, "group_id"]).agg(n_answered=pl.len(), all_right=pl.col("correct").all())
        .join(sizes, on=["dataset", "group_id"], how="left")
        .with_columns(complete=pl.col("n_answered") == pl.col("n_questions").fill_null(QUESTIONS_PER_IMAGE))
        .group_by(keys).agg(n_images=pl.len(), n_complete=pl.col("complete").sum(),
                            acc_plus=pl.col("all_right").filter(pl.col("complete")).mean() * 100)
    )
    return (
        acc.join(plus, on=keys, how="left")
        .with_columns(score=pl.col("acc") + pl.col("acc_plus"))
        .sort(keys)
    )


def mme_totals(scores: pl.LazyFrame) -> pl.LazyFrame:
    """MME's perception and cognition totals: sums of category scores (max 2000 and 800).

    A total needs every subtask of its half (the 10 perception, the 4 cognition ones) to have a
    score, i.e. rows and a complete image: a subtask with no rows (cut by `limit`, skipped by
    ``strict = false``, a missing shard, a sweep still running) or no complete image makes it null,
    since a sum that skipped a subtask would read as a low score. Columns: perception, cognition,
    perception_missing, cognition_missing (the subtasks without a score, in MME's order; empty
    when the total is given), n_categories.
    """
    def scored(names: tuple[str, ...]) -> pl.Expr:
        return pl.col("category").is_in(list(names)) & pl.col("score").is_not_null()

    def total(names: tuple[str, ...]) -> pl.Expr:
        return pl.when(pl.col("category").filter(scored(names)).n_unique() == len(names)).then(
            pl.col("score").filter(scored(names)).sum())

    def missing(names: tuple[str, ...], have: str) -> pl.Expr:
        return pl.concat_list([pl.when(~pl.col(have).list.contains(n)).then(pl.lit(n)) for n in names]
                              ).list.drop_nulls()

    return (
        scores.group_by(KEYS)
        .agg(perception=total(PERCEPTION), cognition=total(COGNITION), n_categories=pl.len(),
             _p=pl.col("category").filter(scored(PERCEPTION)), _c=pl.col("category").filter(scored(COGNITION)))
        .with_columns(perception_missing=missing(PERCEPTION, "_p"), cognition_missing=missing(COGNITION, "_c"))
        .select(*KEYS, "perception", "cognition", "perception_missing", "cognition_missing", "n_categories")
        .sort(KEYS)
    )


def mmbench_circular_accuracy(rows: pl.LazyFrame, groups: pl.DataFrame | pl.LazyFrame, by: Sequence[str] = (),
                              dataset: str | None = "mmbench") -> pl.LazyFrame:
    """MMBench circular evaluation per (model, dataset, budget) and `by` columns (fractions).

    `dataset`: the MMBench dataset's name in the rows; None when `rows` and `groups` hold MMBench
    datasets only (several, under their own ids).

    The questions are the groups of `groups` (every rotation seen in any row, any status); a
    question has ``group_size`` rotations, its number of options (where the table has none, the
    rotations it lists). Per (model, dataset, budget) that has rows, every question counts: it is
    *complete* with an ok row for each rotation, and right when complete and every rotation is
    right. A question with a rotation failed (an error row) or missing is wrong, as VLMEvalKit
    counts it. `by` values are a question's own (its first non-null over its rows).

    Columns: n_questions, n_complete, n_incomplete, circular_accuracy (right / n_questions: the
    official figure), circular_accuracy_complete (right / n_complete), vanilla_accuracy (the
    unrotated question, position 0, over the questions answered there).
    """
    keys = [*KEYS, *by]
    members = groups.lazy() if dataset is None else groups.lazy().filter(pl.col("dataset") == dataset)
    mine = rows if dataset is None else rows.filter(pl.col("dataset") == dataset)
    questions = members.group_by("dataset", "group_id").agg(
        n_rotations=pl.coalesce(pl.col("group_size").drop_nulls().first(), pl.len().cast(pl.Int64)))
    if by:
        labels = (mine.drop(*_GROUP_COLUMNS, strict=False)
                  .join(members.select("dataset", "item_id", "group_id"), on=["dataset", "item_id"])
                  .group_by("dataset", "group_id").agg(*[pl.col(c).drop_nulls().first() for c in by]))
        questions = questions.join(labels, on=["dataset", "group_id"], how="left")
    cells = mine.select(KEYS).unique().join(questions, on="dataset", how="inner")
    right = pl.col("correct").fill_null(False)
    answered = (
        _ok_for_groups(mine)
        .join(members.select("dataset", "item_id", "group_id", "position"), on=["dataset", "item_id"], how="inner")
        .group_by([*KEYS, "group_id"])
        .agg(n=pl.len(), all_right=right.all(), vanilla=right.filter(pl.col("position") == 0).first())
    )
    per_question = (
        cells.join(answered, on=[*KEYS, "group_id"], how="left")
        .with_columns(complete=pl.col("n").fill_null(0) == pl.col("n_rotations"))
        .with_columns(right=pl.col("complete") & pl.col("all_right").fill_null(False))
    )
    n_right = pl.col("right").sum()
    return (
        per_question.group_by(keys)
        .agg(n_questions=pl.len(), n_complete=pl.col("complete").sum(),
             circular_accuracy=n_right / pl.len(),
             circular_accuracy_complete=pl.when(pl.col("complete").any()).then(n_right / pl.col("complete").sum()),
             vanilla_accuracy=pl.col("vanilla").cast(pl.Float64).mean())
        .with_columns(n_incomplete=pl.col("n_questions") - pl.col("n_complete"))
        .select(*keys, "n_questions", "n_complete", "n_incomplete", "circular_accuracy",
                "circular_accuracy_complete", "vanilla_accuracy")
        .sort(keys)
    )
