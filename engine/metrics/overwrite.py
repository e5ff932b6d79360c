"""Text overwrite: items right text-only and wrong once frames are added.

#{i : c_i(text)=1 and c_i(h)=0} for each visual h ("budget"), for some visual h
("any") and for every visual h ("all"); each as a share of all matched items and of
the text-correct items (null when no item is text-correct). The text budget is the
cheapest ``frames == 0`` budget of the grid; groups without one get no rows, and
groups without a visual budget get no "any"/"all" rows.

Registered as the metric ``text_overwrite`` (rates ``text_overwrite_share_all`` and
``text_overwrite_share_text_correct``, keyed by budget, ``any`` and ``all``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from engine.metrics.grid import GROUP
from engine.metrics.per_item import ALL_ORDER, ANY_ORDER, feature
from engine.metrics.registry import GroupRows, Metric, register_metric
from engine.metrics.sections import Headline, Rate, text

__all__ = ["text_items", "text_overwrite"]

_COLUMNS = ["scope", "budget_id", "rank", "n_items", "n_text_correct", "n_overwritten",
            "share_all", "share_text_correct"]


def _shares(frame: pl.LazyFrame) -> pl.LazyFrame:
    return frame.with_columns(
        (pl.col("n_overwritten") / pl.col("n_items")).alias("share_all"),
        pl.when(pl.col("n_text_correct") > 0)
        .then(pl.col("n_overwritten") / pl.col("n_text_correct")).alias("share_text_correct"),
    )


def text_items(m: pl.LazyFrame, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Per matched item of a grid with a text-only budget: right text-only? wrong at some/every visual budget?

    Returns:
        *by, item_id, text_correct, any_wrong (null without visual budgets), all_wrong (likewise),
        n_visual.
    """
    # text-only budgets cost least, so the cheapest one (if any) has rank 0
    text, visual = pl.col("is_text") & (pl.col("rank") == 0), ~pl.col("is_text")
    wrong = pl.when(visual).then(~pl.col("c"))
    return (
        m.group_by([*list(by), "item_id"])
        .agg(pl.when(text).then(pl.col("c")).max().alias("text_correct"), wrong.max().alias("any_wrong"),
             wrong.min().alias("all_wrong"), visual.sum().cast(pl.Int64).alias("n_visual"))
        .filter(pl.col("text_correct").is_not_null())
        .sort([*list(by), "item_id"])
    )


def text_overwrite(m: pl.LazyFrame, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Text overwrite counts and shares.

    Args:
        m: Matched long frame (correctness track).
        by: Group keys.

    Returns:
        *by, scope ("budget" | "any" | "all"), budget_id (null for any/all), rank,
        n_items, n_text_correct, n_overwritten, share_all, share_text_correct;
        "budget" rows in grid order, then "any", then "all".
    """
    by = list(by)
    items = text_items(m, by)
    per_budget = (
        m.filter(~pl.col("is_text"))
        .join(items.select([*by, "item_id", "text_correct"]), on=[*by, "item_id"], how="inner", nulls_equal=True)
        .group_by([*by, "budget_id"])
        .agg(pl.col("rank").first(), pl.len().cast(pl.Int64).alias("n_items"),
             pl.col("text_correct").sum().cast(pl.Int64).alias("n_text_correct"),
             (pl.col("text_correct") & ~pl.col("c")).sum().cast(pl.Int64).alias("n_overwritten"))
        .with_columns(pl.lit("budget").alias("scope"))
    )

    def scoped(name: str, flag: str, rank: int) -> pl.LazyFrame:
        return (
            items.filter(pl.col("n_visual") > 0).group_by(by)
            .agg(pl.len().cast(pl.Int64).alias("n_items"),
                 pl.col("text_correct").sum().cast(pl.Int64).alias("n_text_correct"),
                 (pl.col("text_correct") & pl.col(flag)).sum().cast(pl.Int64).alias("n_overwritten"))
            .with_columns(pl.lit(name).alias("scope"), pl.lit(None, dtype=pl.String).alias("budget_id"),
                          pl.lit(rank, dtype=pl.Int64).alias("rank"))
        )

    big = 1 << 40  # sorts "any" and "all" after every budget
    return (
        _shares(pl.concat([per_budget, scoped("any", "any_wrong", big), scoped("all", "all_wrong", big + 1)],
                          how="diagonal_relaxed"))
        .select([*by, *_COLUMNS])
        .sort([*by, "rank"])
    )


def _shares_of(r: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if r is None else {"share_all": r["share_all"], "share_text_correct": r["share_text_correct"]}


def _has_text(rows: GroupRows) -> bool:
    grid = rows.shared("grid")
    frames = {b["budget_id"]: b["frames"] for b in rows.shared("budgets")}
    return bool(grid and grid[0]["n_items"] and any(frames.get(b) == 0 for b in grid[0]["grid"]))


def _document(rows: GroupRows, opts: Any) -> dict[str, Any] | None:
    """null: no text budget; text budget only (or no matched item): nothing to overwrite it."""
    mine = rows("overwrite")
    if not mine:
        return {"n_text_correct": None, "any": None, "all": None, "by_budget": {}} if _has_text(rows) else None
    scoped = {r["scope"]: r for r in mine if r["scope"] != "budget"}
    return {"n_text_correct": mine[0]["n_text_correct"], "any": _shares_of(scoped.get("any")),
            "all": _shares_of(scoped.get("all")),
            "by_budget": {r["budget_id"]: _shares_of(r) for r in mine if r["scope"] == "budget"}}


def _features(m: pl.LazyFrame, alt: pl.LazyFrame | None, by: list[str]) -> pl.LazyFrame:
    items = text_items(m, by)
    ct = pl.col("text_correct")
    visual = m.filter(~pl.col("is_text")).join(items.select([*by, "item_id", "text_correct"]),
                                                on=[*by, "item_id"], how="inner", nulls_equal=True)
    scoped = items.filter(pl.col("n_visual") > 0)
    out = []
    for metric, den in (("text_overwrite_share_all", pl.lit(1.0)), ("text_overwrite_share_text_correct", ct)):
        out += [
            feature(visual, by, metric, ct & ~pl.col("c"), den, pl.col("budget_id"), pl.col("rank")),
            feature(scoped, by, metric, ct & pl.col("any_wrong"), den, "any", ANY_ORDER),
            feature(scoped, by, metric, ct & pl.col("all_wrong"), den, "all", ALL_ORDER),
        ]
    return pl.concat(out, how="vertical_relaxed")


def _headline(g: dict[str, Any]) -> Headline:
    share = Rate(((g["text_overwrite"] or {}).get("any") or {}).get("share_all"))
    return Headline(text("text overwrite (any) ", share), (("text overwrite (any visual)", share),))


register_metric(Metric(
    name="text_overwrite",
    tables=lambda inputs: {"overwrite": text_overwrite(inputs.m)},
    document=_document,
    features=_features,
    rates=("text_overwrite_share_all", "text_overwrite_share_text_correct"),
    headline=_headline,
    higher_is_better=False,
    description="items right text-only and wrong at a visual budget (each, any, all), over all matched items and "
                "over the text-correct ones",
))
