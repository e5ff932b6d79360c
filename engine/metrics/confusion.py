"""Visual confusion: items right at a cheaper budget and wrong at a dearer one.

visual confusion = #{i : exists g < h in G, c_i(g)=1 and c_i(h)=0} / n over the whole
grid (g may be text-only), and the same restricted to visual g (text-only budgets
dropped). A grid without two visual budgets has a visual-only rate of 0.

Registered as the metric ``visual_confusion`` (group keys ``visual_confusion``,
``visual_confusion_visual_only``; rates of the same names).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from engine.metrics.grid import GROUP
from engine.metrics.per_item import feature
from engine.metrics.registry import GroupRows, Inputs, Metric, register_metric
from engine.metrics.sections import Headline, Rate, rate_with_interval, text

__all__ = ["confusion_items", "visual_confusion"]


def _confused(mask: pl.Expr) -> pl.Expr:
    """Aggregation over an item's rows: a right answer at some rank below a wrong one (within `mask`)?

    Vectorised: the cheapest right rank is below the dearest wrong rank.
    """
    right = pl.when(mask & pl.col("c")).then(pl.col("rank")).min()
    wrong = pl.when(mask & ~pl.col("c")).then(pl.col("rank")).max()
    return (right < wrong).fill_null(False)


def confusion_items(m: pl.LazyFrame, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Per matched item: confused over the whole grid, and over its visual budgets only.

    Returns:
        *by, item_id, confused, confused_visual.
    """
    by = list(by)
    return m.group_by([*by, "item_id"]).agg(
        _confused(pl.lit(True)).alias("confused"), _confused(~pl.col("is_text")).alias("confused_visual")
    ).sort([*by, "item_id"])


def visual_confusion(m: pl.LazyFrame, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Visual confusion rates over the matched items.

    Args:
        m: Matched long frame (correctness track).
        by: Group keys.

    Returns:
        *by, n_items, n_confused, visual_confusion, n_confused_visual, visual_confusion_visual_only.
    """
    by = list(by)
    per_item = confusion_items(m, by)
    return (
        per_item.group_by(by)
        .agg(pl.len().cast(pl.Int64).alias("n_items"),
             pl.col("confused").sum().cast(pl.Int64).alias("n_confused"),
             pl.col("confused_visual").sum().cast(pl.Int64).alias("n_confused_visual"))
        .with_columns((pl.col("n_confused") / pl.col("n_items")).alias("visual_confusion"),
                      (pl.col("n_confused_visual") / pl.col("n_items")).alias("visual_confusion_visual_only"))
        .select([*by, "n_items", "n_confused", "visual_confusion", "n_confused_visual",
                 "visual_confusion_visual_only"])
        .sort(by)
    )


def _tables(inputs: Inputs) -> dict[str, pl.LazyFrame]:
    return {"confusion": visual_confusion(inputs.m)}


def _document(rows: GroupRows, opts: Any) -> dict[str, Any]:
    vc = rows.one("confusion")
    return {"visual_confusion": vc["visual_confusion"] if vc else None,
            "visual_confusion_visual_only": vc["visual_confusion_visual_only"] if vc else None}


def _features(m: pl.LazyFrame, alt: pl.LazyFrame | None, by: list[str]) -> pl.LazyFrame:
    conf = confusion_items(m, by)
    return pl.concat([feature(conf, by, "visual_confusion", pl.col("confused")),
                      feature(conf, by, "visual_confusion_visual_only", pl.col("confused_visual"))],
                     how="vertical_relaxed")


def _headline(g: dict[str, Any]) -> Headline:
    return Headline(text("visual confusion ", Rate(g["visual_confusion"]), " (visual only ",
                         Rate(g["visual_confusion_visual_only"]), ")"),
                    (("visual confusion", rate_with_interval(g, "visual_confusion", g["visual_confusion"])),))


register_metric(Metric(
    name="visual_confusion",
    keys=("visual_confusion", "visual_confusion_visual_only"),
    tables=_tables,
    document=_document,
    features=_features,
    rates=("visual_confusion", "visual_confusion_visual_only"),
    headline=_headline,
    higher_is_better=False,
    description="share of items right at a budget and wrong at a dearer one of the chain (and over its visual "
                "budgets only)",
))
