"""Letter-prior bias: does the model lean on one option letter whatever it sees?

Per group and budget of the chain, over the matched items (correctness track):

- the distribution of predicted letters (``pred``; items with no prediction are counted
  apart) against the distribution of answer letters;
- the *dominant* letter, the most frequent prediction (ties: alphabetical), its share, and
  the accuracy of always answering it (the share of items whose answer is that letter):
  a model whose accuracy is near that baseline is answering from the letter prior.

Text overwrite, read with the prior: an item right text-only whose text-only prediction
is the group's dominant text-only letter may be right by the prior rather than by
knowledge; such items are *flagged*, and the overwrite table (items right text-only and
wrong at a visual budget) counts the flagged ones among them.

Registered as the metric ``letter_prior`` (JSON key, report section).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from engine.metrics.grid import GROUP
from engine.metrics.registry import GroupRows, Inputs, Metric, register_metric
from engine.metrics.sections import Block, Heading, Note, Rate, Table, joined, text

__all__ = ["letter_cells", "letter_distribution", "letter_prior", "prior_overwrite"]

_ROW_KEYS = ["model_id", "dataset", "item_id", "budget_id"]


def letter_cells(m: pl.LazyFrame, rows: pl.LazyFrame) -> pl.LazyFrame:
    """The matched cells with their predicted and answer letters.

    Args:
        m: Matched long frame (correctness track).
        rows: One row per key with ``pred`` and ``answer`` (e.g. the metrics snapshot).

    Returns:
        The columns of `m` plus pred, answer.
    """
    return m.join(rows.select(*_ROW_KEYS, "pred", "answer"), on=_ROW_KEYS, how="left")


def letter_distribution(cells: pl.LazyFrame, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Predicted and answer letters per budget.

    Returns:
        *by, budget_id, rank, letter, n_pred, n_answer, share_pred, share_answer (shares of the
        budget's matched items); by rank, then letter.
    """
    keys = [*list(by), "budget_id"]
    n = cells.group_by(keys).agg(pl.len().cast(pl.Int64).alias("_n"), pl.col("rank").first())
    preds = (cells.filter(pl.col("pred").is_not_null()).group_by([*keys, pl.col("pred").alias("letter")])
             .agg(pl.len().cast(pl.Int64).alias("n_pred")))
    answers = (cells.filter(pl.col("answer").is_not_null()).group_by([*keys, pl.col("answer").alias("letter")])
               .agg(pl.len().cast(pl.Int64).alias("n_answer")))
    return (
        preds.join(answers, on=[*keys, "letter"], how="full", coalesce=True, nulls_equal=True)
        .join(n, on=keys, how="inner", nulls_equal=True)
        .with_columns(pl.col("n_pred").fill_null(0), pl.col("n_answer").fill_null(0))
        .with_columns((pl.col("n_pred") / pl.col("_n")).alias("share_pred"),
                      (pl.col("n_answer") / pl.col("_n")).alias("share_answer"))
        .select([*keys, "rank", "letter", "n_pred", "n_answer", "share_pred", "share_answer"])
        .sort([*list(by), "rank", "letter"])
    )


def letter_prior(cells: pl.LazyFrame, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """The dominant predicted letter per budget and the accuracy of always answering it.

    Returns:
        *by, budget_id, rank, is_text, n_items, n_no_pred, accuracy, dominant_letter (null when
        nothing was predicted), dominant_share, always_dominant_accuracy; by rank.
    """
    keys = [*list(by), "budget_id"]
    dominant = (
        cells.filter(pl.col("pred").is_not_null()).group_by([*keys, "pred"]).agg(pl.len().alias("_k"))
        .sort([*keys, "_k", "pred"], descending=[*([False] * len(keys)), True, False])
        .unique(subset=keys, keep="first", maintain_order=True)
        .select([*keys, pl.col("pred").alias("dominant_letter")])
    )
    return (
        cells.join(dominant, on=keys, how="left", nulls_equal=True)
        .group_by(keys)
        .agg(pl.col("rank").first(), pl.col("is_text").first(), pl.len().cast(pl.Int64).alias("n_items"),
             pl.col("pred").is_null().sum().cast(pl.Int64).alias("n_no_pred"),
             pl.col("c").cast(pl.Float64).mean().alias("accuracy"),
             pl.col("dominant_letter").first(),
             (pl.col("pred") == pl.col("dominant_letter")).fill_null(False).cast(pl.Float64).mean()
             .alias("dominant_share"),
             (pl.col("answer") == pl.col("dominant_letter")).fill_null(False).cast(pl.Float64).mean()
             .alias("always_dominant_accuracy"))
        .with_columns(pl.when(pl.col("dominant_letter").is_not_null()).then(pl.col("dominant_share"))
                      .alias("dominant_share"),
                      pl.when(pl.col("dominant_letter").is_not_null()).then(pl.col("always_dominant_accuracy"))
                      .alias("always_dominant_accuracy"))
        .select([*keys, "rank", "is_text", "n_items", "n_no_pred", "accuracy", "dominant_letter", "dominant_share",
                 "always_dominant_accuracy"])
        .sort([*list(by), "rank"])
    )


def prior_overwrite(cells: pl.LazyFrame, by: Sequence[str] = GROUP) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Text overwrite with the letter-prior flag.

    An item is flagged when it is right at the (cheapest) text-only budget and its text-only
    prediction is the group's dominant text-only letter.

    Returns:
        (items, overwrite). items: *by, item_id, text_pred, dominant_text_letter, flagged (items
        right text-only only). overwrite: *by, budget_id, rank, n_text_correct, n_flagged,
        n_overwritten (right text-only, wrong here), n_overwritten_flagged; visual budgets by rank.
    """
    by = list(by)
    text = cells.filter(pl.col("is_text") & (pl.col("rank") == 0))
    dominant = letter_prior(text, by).select([*by, pl.col("dominant_letter").alias("dominant_text_letter")])
    items = (
        text.filter(pl.col("c").fill_null(False))
        .join(dominant, on=by, how="left", nulls_equal=True)
        .select([*by, "item_id", pl.col("pred").alias("text_pred"), "dominant_text_letter",
                 (pl.col("pred") == pl.col("dominant_text_letter")).fill_null(False).alias("flagged")])
        .sort([*by, "item_id"])
    )
    flagged = pl.col("flagged")
    right_text = flagged.is_not_null()  # only items right text-only have a flag
    visual = cells.filter(~pl.col("is_text")).join(items, on=[*by, "item_id"], how="left", nulls_equal=True)
    overwrite = (
        visual.with_columns(right_text.alias("_tc"), flagged.fill_null(False))
        .group_by([*by, "budget_id"])
        .agg(pl.col("rank").first(), pl.col("_tc").sum().cast(pl.Int64).alias("n_text_correct"),
             flagged.sum().cast(pl.Int64).alias("n_flagged"),
             (pl.col("_tc") & ~pl.col("c")).sum().cast(pl.Int64).alias("n_overwritten"),
             (flagged & ~pl.col("c")).sum().cast(pl.Int64).alias("n_overwritten_flagged"))
        .join(text.select(by).unique(), on=by, how="semi", nulls_equal=True)  # only groups with a text budget
        .sort([*by, "rank"])
    )
    return items, overwrite


def _tables(inputs: Inputs) -> dict[str, pl.LazyFrame]:
    cells = letter_cells(inputs.m, inputs.snapshot)
    items, overwrite = prior_overwrite(cells)
    return {"prior": letter_prior(cells), "letters": letter_distribution(cells), "flagged": items,
            "overwrite": overwrite}


def _document(rows: GroupRows, opts: Any) -> dict[str, Any] | None:
    prior = rows("prior")
    if not prior:
        return None
    letters = rows("letters")
    by_budget = []
    for p in prior:
        mine = [r for r in letters if r["budget_id"] == p["budget_id"]]
        by_budget.append({
            **{k: p[k] for k in ("budget_id", "n_items", "n_no_pred", "accuracy", "dominant_letter", "dominant_share",
                                 "always_dominant_accuracy")},
            "predicted": {r["letter"]: r["share_pred"] for r in mine},
            "answers": {r["letter"]: r["share_answer"] for r in mine},
        })
    text = next((p for p in prior if p["is_text"]), None)
    flagged = rows("flagged")
    return {
        "by_budget": by_budget,
        "text": None if text is None else {
            "budget_id": text["budget_id"], "dominant_letter": text["dominant_letter"],
            "n_text_correct": len(flagged), "n_flagged": sum(r["flagged"] for r in flagged),
            "flagged_items": [r["item_id"] for r in flagged if r["flagged"]],
            "overwrite": [{k: r[k] for k in ("budget_id", "n_overwritten", "n_overwritten_flagged")}
                          for r in rows("overwrite")],
        },
    }


def _report(g: dict[str, Any], idx: int) -> list[Block]:
    lp = g.get("letter_prior")
    if not lp or all(b["n_no_pred"] >= b["n_items"] for b in lp["by_budget"]):
        return []  # no letter predicted anywhere (free-text answers): no prior to show
    rows = [[b["budget_id"], b["n_items"], Rate(b["accuracy"]), b["dominant_letter"] or "none", Rate(b["dominant_share"]),
             Rate(b["always_dominant_accuracy"]),
             joined(" ", (text(f"{k} ", Rate(v)) for k, v in sorted(b["predicted"].items()))),
             joined(" ", (text(f"{k} ", Rate(v)) for k, v in sorted(b["answers"].items())))] for b in lp["by_budget"]]
    out: list[Block] = [Heading("Letter prior"), Table(f"table-letter-prior-{idx}", [
        "budget", "items", "accuracy", "dominant letter", "its share", "always answering it", "predicted letters",
        "answer letters"], rows)]
    t = lp.get("text")
    if t and t["overwrite"]:
        note = (f"{t['n_flagged']} of {t['n_text_correct']} items right text-only answered the dominant text-only "
                f"letter {t['dominant_letter']} (flagged: possibly right by the prior)")
        out += [Note(note), Table(
            f"table-text-overwrite-prior-{idx}", ["budget", "text overwrite (items)", "of which flagged"],
            [[r["budget_id"], r["n_overwritten"], r["n_overwritten_flagged"]] for r in t["overwrite"]])]
    return out


register_metric(Metric(
    name="letter_prior",
    inputs=("pred", "answer"),
    tables=_tables,
    document=_document,
    report=_report,
    description="predicted vs answer letters per budget, the dominant letter and the accuracy of always answering "
                "it; text-only right answers that are the dominant text-only letter are flagged in text overwrite",
))
