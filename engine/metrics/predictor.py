"""The hybrid-frame predictor scored against a finished sweep.

Each item of the matched grid (`engine.metrics.grid.matched`, correctness track) that
has a prediction is answered at its *chosen budget*: the grid budget whose frames equal
the predicted frames (the cheapest such budget when resolutions share a frame count;
restrict the grid with ``budgets`` to choose). An unparsed prediction, or one naming a
frame count the grid lacks (``off_grid``), falls back to the fallback budget (default:
the dearest budget of the grid).

- accuracy = mean_i c_i(chosen_i); mean frames = mean_i frames sent at chosen_i
- cheapest sufficient budget s_i = the cheapest g with c_i(g) = 1; items right nowhere have
  none ("unsolvable")
- agreement = #{solvable i : chosen_i = s_i} / #solvable; under / over: chosen cheaper /
  dearer than s_i. Unsolvable items are left out of agreement (no choice can be right) and
  counted on their own; the confusion matrix gives them the sufficient budget null.
- oracle: accuracy = #solvable / n; mean frames = mean_i frames at s_i (at the cheapest
  budget for unsolvable items)
- fixed: each grid budget's accuracy and mean frames over the same items, with the
  predictor's accuracy minus it and its frames saved (1 - predictor / fixed frames)

Rows of the online predicted run (budget ids ``pred-<predictor>``, one frame count per
item: `engine.adaptive.predictor.run_predicted`) are no fixed budget and stay off the grid.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from engine.metrics.grid import GROUP, matched

__all__ = ["PREDICTED_BUDGET_PREFIX", "PRED_GROUP", "evaluate_predictor", "fixed_budget_rows", "latest_predictions",
           "predictor_document"]

PRED_GROUP: list[str] = ["predictor_id", *GROUP]
PREDICTED_BUDGET_PREFIX = "pred-"
"""Budget ids of rows answered at a per-item predicted budget (`engine.adaptive.predictor.predicted_budget_id`)."""
_KEY = ["predictor_id", "dataset", "item_id"]


def fixed_budget_rows(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Result rows without those of per-item predicted budgets (`PREDICTED_BUDGET_PREFIX`)."""
    return rows.filter(~pl.col("budget_id").str.starts_with(PREDICTED_BUDGET_PREFIX))


def latest_predictions(predictions: pl.LazyFrame) -> pl.LazyFrame:
    """One prediction per (predictor_id, dataset, item_id): the latest one."""
    return (
        predictions.sort(["finished_at", "raw_answer"], descending=[True, False], nulls_last=True)
        .unique(subset=_KEY, keep="first", maintain_order=True)
    )


def _grid(m: pl.LazyFrame) -> pl.LazyFrame:
    return m.group_by([*GROUP, "budget_id"]).agg(pl.col("rank").first(), pl.col("frames").first())


def _fallback(m: pl.LazyFrame, fallback: str | None) -> pl.LazyFrame:
    """Per group: the fallback budget, or the dearest when none is asked for or the grid lacks it."""
    wanted = pl.lit(fallback, dtype=pl.String)
    return _grid(m).group_by(GROUP).agg(pl.coalesce(
        pl.col("budget_id").filter(pl.col("budget_id") == wanted).first(),
        pl.col("budget_id").sort_by("rank").last()).alias("fallback_budget"))


def _choices(m: pl.LazyFrame, preds: pl.LazyFrame, fallback: pl.LazyFrame) -> pl.LazyFrame:
    """Per (predictor, model, dataset, item): the budget the prediction picks, and why."""
    by_frames = (
        _grid(m).sort([*GROUP, "rank"]).unique(subset=[*GROUP, "frames"], keep="first", maintain_order=True)
        .select([*GROUP, pl.col("frames").alias("predicted_frames"), pl.col("budget_id").alias("_pred")])
    )
    items = m.select([*GROUP, "item_id"]).unique()
    source = (pl.when(pl.col("predicted_frames").is_null()).then(pl.lit("unparsed"))
              .when(pl.col("_pred").is_null()).then(pl.lit("off_grid")).otherwise(pl.lit("predicted")))
    return (
        items.join(preds, on=["dataset", "item_id"], how="inner")
        .join(by_frames, on=[*GROUP, "predicted_frames"], how="left")
        .join(fallback, on=GROUP, how="left")
        .with_columns(source.alias("source"), pl.coalesce("_pred", "fallback_budget").alias("budget_id"))
        .drop("_pred", "fallback_budget")
    )


def _items(m: pl.LazyFrame, choices: pl.LazyFrame) -> pl.LazyFrame:
    keys = [*GROUP, "item_id"]
    outcome = m.select([*keys, "budget_id", "rank", pl.col("n_frames").alias("frames"), pl.col("c").alias("correct")])
    sufficient = m.filter(pl.col("c")).group_by(keys).agg(
        pl.col("budget_id").sort_by("rank").first().alias("sufficient_budget"),
        pl.col("rank").min().alias("sufficient_rank"),
        pl.col("n_frames").sort_by("rank").first().alias("sufficient_frames"))
    cheapest = m.filter(pl.col("rank") == 0).select([*keys, pl.col("n_frames").alias("_cheapest")])
    diff = pl.col("rank") - pl.col("sufficient_rank")
    direction = (pl.when(pl.col("sufficient_rank").is_null()).then(pl.lit("unsolvable"))
                 .when(diff < 0).then(pl.lit("under")).when(diff > 0).then(pl.lit("over")).otherwise(pl.lit("match")))
    return (
        choices.join(outcome, on=[*keys, "budget_id"], how="inner")
        .join(sufficient, on=keys, how="left").join(cheapest, on=keys, how="left")
        .with_columns((diff == 0).alias("agree"), direction.alias("direction"),
                      pl.coalesce("sufficient_frames", "_cheapest").alias("oracle_frames"))
        .select([*PRED_GROUP, "item_id", "predicted_frames", "parse_status", "source", "budget_id", "rank",
                 "frames", "correct", "sufficient_budget", "sufficient_rank", "sufficient_frames", "oracle_frames",
                 "agree", "direction"])
        .sort([*PRED_GROUP, "item_id"])
    )


def _summary(items: pl.LazyFrame, m: pl.LazyFrame, preds: pl.LazyFrame, fallback: pl.LazyFrame) -> pl.LazyFrame:
    def count(e: pl.Expr) -> pl.Expr:
        return e.sum().cast(pl.Int64)

    n_matched = m.group_by(GROUP).agg(pl.col("item_id").n_unique().cast(pl.Int64).alias("_matched"))
    n_preds = preds.group_by(["predictor_id", "dataset"]).agg(pl.len().cast(pl.Int64).alias("_preds"))
    solvable = pl.col("sufficient_rank").is_not_null()
    return (
        items.group_by(PRED_GROUP).agg(
            pl.len().cast(pl.Int64).alias("n_items"), count(solvable).alias("n_solvable"),
            count(~solvable).alias("n_unsolvable"), count(pl.col("source") == "unparsed").alias("n_unparsed"),
            count(pl.col("source") == "off_grid").alias("n_off_grid"),
            pl.col("correct").cast(pl.Float64).mean().alias("accuracy"),
            pl.col("frames").cast(pl.Float64).mean().alias("mean_frames"),
            count(pl.col("agree").fill_null(False)).alias("n_agree"),
            count(pl.col("direction") == "under").alias("n_under"),
            count(pl.col("direction") == "over").alias("n_over"),
            pl.col("oracle_frames").cast(pl.Float64).mean().alias("oracle_mean_frames"))
        .join(fallback, on=GROUP, how="left").join(n_matched, on=GROUP, how="left")
        .join(n_preds, on=["predictor_id", "dataset"], how="left")
        .with_columns(
            pl.when(pl.col("n_solvable") > 0).then(pl.col("n_agree") / pl.col("n_solvable")).alias("agreement"),
            (pl.col("n_solvable") / pl.col("n_items")).alias("oracle_accuracy"),
            (pl.col("_matched") - pl.col("n_items")).alias("n_without_prediction"),
            (pl.col("_preds") - pl.col("n_items")).alias("n_predictions_unmatched"))
        .select([*PRED_GROUP, "n_items", "n_solvable", "n_unsolvable", "n_unparsed", "n_off_grid",
                 "n_without_prediction", "n_predictions_unmatched", "fallback_budget", "accuracy", "mean_frames",
                 "agreement", "n_agree", "n_under", "n_over", "oracle_accuracy", "oracle_mean_frames"])
        .sort(PRED_GROUP)
    )


def _fixed(items: pl.LazyFrame, m: pl.LazyFrame, summary: pl.LazyFrame) -> pl.LazyFrame:
    keys = [*GROUP, "item_id"]
    pairs = items.select([*PRED_GROUP, "item_id"]).join(m, on=keys, how="inner")
    return (
        pairs.group_by([*PRED_GROUP, "budget_id"])
        .agg(pl.col("rank").first(), pl.col("frames").first(), pl.col("c").cast(pl.Float64).mean().alias("accuracy"),
             pl.col("n_frames").cast(pl.Float64).mean().alias("mean_frames"))
        .join(summary.select([*PRED_GROUP, pl.col("accuracy").alias("_pa"), pl.col("mean_frames").alias("_pf")]),
              on=PRED_GROUP, how="inner")
        .with_columns((pl.col("_pa") - pl.col("accuracy")).alias("accuracy_delta"),
                      pl.when(pl.col("mean_frames") > 0).then(1 - pl.col("_pf") / pl.col("mean_frames"))
                      .alias("frames_saved"))
        .select([*PRED_GROUP, "budget_id", "rank", "frames", "accuracy", "mean_frames", "accuracy_delta",
                 "frames_saved"])
        .sort([*PRED_GROUP, "rank"])
    )


def evaluate_predictor(results: pl.LazyFrame, predictions: pl.LazyFrame, model_id: str | None = None, *,
                       fallback: str | None = None, budgets: Sequence[str] | None = None) -> dict[str, pl.LazyFrame]:
    """Score frame-count predictions against a sweep (definitions in the module docstring).

    Args:
        results: Result rows, one per key (e.g. `engine.metrics.summary.load_rows`).
        predictions: The predictions table (`engine.adaptive.predictions.PREDICTION_SCHEMA`); the
            latest prediction per key is used.
        model_id: Evaluate against this model only (default: every model in `results`).
        fallback: Budget id for unparsed and off-grid predictions (default, or when a group's
            grid lacks it: the group's dearest budget; ``fallback_budget`` says which was used).
        budgets: Restrict the grid to these budget ids (default: each group's chain).

    Returns:
        LazyFrames keyed by predictor_id, model_id, dataset:
        ``items``: item_id, predicted_frames, parse_status, source (predicted | unparsed |
        off_grid), budget_id (chosen), rank, frames, correct, sufficient_budget, sufficient_rank,
        sufficient_frames, oracle_frames, agree (null: unsolvable), direction (match | under |
        over | unsolvable);
        ``summary``: n_items, n_solvable, n_unsolvable, n_unparsed, n_off_grid, n_without_prediction,
        n_predictions_unmatched, fallback_budget, accuracy, mean_frames, agreement, n_agree,
        n_under, n_over, oracle_accuracy, oracle_mean_frames;
        ``fixed``: budget_id, rank, frames, accuracy, mean_frames, accuracy_delta, frames_saved;
        ``confusion``: predicted, predicted_rank, sufficient (null: unsolvable), sufficient_rank, n;
        ``parse``: parse_kind, n.
    """
    rows = fixed_budget_rows(results if model_id is None else results.filter(pl.col("model_id") == model_id))
    m = matched(rows, budgets=budgets)
    preds = latest_predictions(predictions).select([*_KEY, "predicted_frames", "parse_status"]).with_columns(
        pl.col("predicted_frames").cast(pl.Int64))
    fb = _fallback(m, fallback)
    items = _items(m, _choices(m, preds, fb))
    summary = _summary(items, m, preds, fb)
    confusion = (
        items.group_by([*PRED_GROUP, "budget_id", "sufficient_budget"])
        .agg(pl.col("rank").first().alias("predicted_rank"), pl.col("sufficient_rank").first(),
             pl.len().cast(pl.Int64).alias("n"))
        .rename({"budget_id": "predicted", "sufficient_budget": "sufficient"})
        .select([*PRED_GROUP, "predicted", "predicted_rank", "sufficient", "sufficient_rank", "n"])
        .sort([*PRED_GROUP, "predicted_rank", "sufficient_rank"], nulls_last=True)
    )
    parse = (
        items.with_columns(pl.col("parse_status").str.extract(r"^(\w+)").fill_null("unparsed").alias("parse_kind"))
        .group_by([*PRED_GROUP, "parse_kind"]).agg(pl.len().cast(pl.Int64).alias("n")).sort([*PRED_GROUP, "parse_kind"])
    )
    return {"items": items, "summary": summary, "fixed": _fixed(items, m, summary), "confusion": confusion,
            "parse": parse}


def predictor_document(tables: dict[str, pl.DataFrame]) -> list[dict[str, Any]]:
    """The collected `evaluate_predictor` tables as JSON-ready groups (one per predictor, model, dataset).

    Each group: the summary's columns, ``grid`` (budget ids in cost order), ``fixed``
    ([{budget_id, frames, accuracy, mean_frames, accuracy_delta, frames_saved}]),
    ``best_fixed`` ({budget_id, accuracy}; ties: the cheapest), ``confusion``
    ([{predicted, sufficient, n}]) and ``parse`` ({parse_kind: n}).
    """
    def part(name: str, key: tuple[Any, ...]) -> list[dict[str, Any]]:
        df = tables[name]
        for c, v in zip(PRED_GROUP, key, strict=True):
            df = df.filter(pl.col(c) == v)
        return df.drop(PRED_GROUP).to_dicts()

    out = []
    for s in tables["summary"].to_dicts():
        key = tuple(s[c] for c in PRED_GROUP)
        fixed = part("fixed", key)
        best = max(fixed, key=lambda r: (r["accuracy"], -r["rank"]), default=None)
        out.append({
            **s, "grid": [r["budget_id"] for r in fixed],
            "fixed": [{k: r[k] for k in ("budget_id", "frames", "accuracy", "mean_frames", "accuracy_delta",
                                         "frames_saved")} for r in fixed],
            "best_fixed": {"budget_id": best["budget_id"], "accuracy": best["accuracy"]} if best else None,
            "confusion": [{k: r[k] for k in ("predicted", "sufficient", "n")} for r in part("confusion", key)],
            "parse": {r["parse_kind"]: r["n"] for r in part("parse", key)},
        })
    return out
