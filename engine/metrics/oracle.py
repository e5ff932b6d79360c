"""Fixed accuracy per budget, the best fixed budget, and the per-item oracle over the grid.

All functions take the matched long frame of `engine.metrics.grid.matched` (or a
bootstrap resample of it) and group by `by` (default: model and dataset; add a
category column for per-category splits). `value` picks the per-item outcome:
``"c"`` (correctness) or ``"s"`` (graded score, for open tasks).

- fixed accuracy A(g) = mean_i c_i(g); best fixed = max_g A(g) (ties: cheapest budget)
- oracle = mean_i max_g c_i(g); oracle headroom = oracle - best fixed

Registered as the metric ``accuracy`` (group keys ``fixed_accuracy``, ``best_fixed``,
``oracle_accuracy``, ``oracle_headroom``; rates of the same names; report ``fig-accuracy-N``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from engine.metrics.grid import GROUP, matched
from engine.metrics.per_item import feature, rate_of, single_rates
from engine.metrics.registry import GroupRows, Inputs, Live, Metric, register_metric
from engine.metrics.sections import (
    Block,
    Count,
    Figure,
    Headline,
    Interval,
    Name,
    Note,
    Rate,
    Table,
    rate_with_interval,
    text,
)

__all__ = ["best_fixed", "fixed_accuracy", "oracle"]


def fixed_accuracy(m: pl.LazyFrame, by: Sequence[str] = GROUP, *, value: str = "c") -> pl.LazyFrame:
    """Mean outcome per budget over the matched items.

    Args:
        m: Matched long frame.
        by: Group keys.
        value: ``"c"`` or ``"s"``.

    Returns:
        *by, budget_id, rank, frames, n_items, accuracy; sorted by group and rank.
    """
    by = list(by)
    return (
        m.group_by([*by, "budget_id"])
        .agg(pl.col("rank").first(), pl.col("frames").first(), pl.len().cast(pl.Int64).alias("n_items"),
             pl.col(value).cast(pl.Float64).mean().alias("accuracy"))
        .sort([*by, "rank"])
    )


def best_fixed(m: pl.LazyFrame, by: Sequence[str] = GROUP, *, value: str = "c") -> pl.LazyFrame:
    """The budget with the highest fixed accuracy; ties go to the cheapest budget.

    Returns:
        *by, best_budget, best_accuracy.
    """
    by = list(by)
    return (
        fixed_accuracy(m, by, value=value)
        .sort([*by, "accuracy", "rank"], descending=[*([False] * len(by)), True, False])
        .unique(subset=by, keep="first", maintain_order=True)
        .select([*by, pl.col("budget_id").alias("best_budget"), pl.col("accuracy").alias("best_accuracy")])
    )


def oracle(m: pl.LazyFrame, by: Sequence[str] = GROUP, *, value: str = "c") -> pl.LazyFrame:
    """Per-item oracle over the grid against the best fixed budget.

    Returns:
        *by, n_items, oracle_accuracy, best_budget, best_accuracy, oracle_headroom.
    """
    by = list(by)
    per_item = m.group_by([*by, "item_id"]).agg(pl.col(value).cast(pl.Float64).max().alias("_best"))
    return (
        per_item.group_by(by)
        .agg(pl.len().cast(pl.Int64).alias("n_items"), pl.col("_best").mean().alias("oracle_accuracy"))
        .join(best_fixed(m, by, value=value), on=by, how="inner", nulls_equal=True)
        .with_columns((pl.col("oracle_accuracy") - pl.col("best_accuracy")).alias("oracle_headroom"))
        .sort(by)
    )


def _tables(inputs: Inputs) -> dict[str, pl.LazyFrame]:
    return {"fixed": fixed_accuracy(inputs.m), "oracle": oracle(inputs.m)}


def _document(rows: GroupRows, opts: Any) -> dict[str, Any]:
    orc = rows.one("oracle")
    return {
        "fixed_accuracy": {r["budget_id"]: r["accuracy"] for r in rows("fixed")},
        "best_fixed": {"budget_id": orc["best_budget"], "accuracy": orc["best_accuracy"]} if orc else None,
        "oracle_accuracy": orc["oracle_accuracy"] if orc else None,
        "oracle_headroom": orc["oracle_headroom"] if orc else None,
    }


def _features(m: pl.LazyFrame, alt: pl.LazyFrame | None, by: list[str]) -> pl.LazyFrame:
    return pl.concat([
        feature(m, by, "fixed_accuracy", pl.col("c"), key=pl.col("budget_id"), korder=pl.col("rank")),
        feature(m.group_by([*by, "item_id"]).agg(pl.col("c").max()), by, "oracle_accuracy", pl.col("c")),
    ], how="vertical_relaxed")


def _derived(rates: pl.LazyFrame, by: list[str]) -> list[pl.LazyFrame]:
    scalars = rates.group_by(by).agg(
        rate_of("fixed_accuracy").max().alias("best_fixed"), rate_of("oracle_accuracy").first().alias("_o"),
    ).with_columns((pl.col("_o") - pl.col("best_fixed")).alias("oracle_headroom"))
    return [single_rates(scalars, by, ["best_fixed", "oracle_headroom"])]


def _report(g: dict[str, Any], idx: int) -> list[Block]:
    if not g["n_items"]:
        return [Note("No item has a result at every budget of the grid yet.")]
    return [Figure(f"fig-accuracy-{idx}", "Accuracy per budget")]


def _headline(g: dict[str, Any]) -> Headline:
    best = g["best_fixed"] or {}
    return Headline(
        text("best fixed ", Name(best.get("budget_id")), " ", Rate(best.get("accuracy")), ", oracle ",
             Rate(g["oracle_accuracy"]), ", headroom ", Rate(g["oracle_headroom"]), " pts"),
        (("best fixed", text(Name(best.get("budget_id")), ": ", rate_with_interval(g, "best_fixed", best.get("accuracy")))),
         ("oracle", rate_with_interval(g, "oracle_accuracy", g["oracle_accuracy"])),
         ("oracle headroom (pts)", rate_with_interval(g, "oracle_headroom", g["oracle_headroom"]))))


def _live_rows(rows: pl.LazyFrame) -> pl.LazyFrame:
    return fixed_accuracy(matched(rows)).select(*GROUP, "budget_id", "n_items", "accuracy")


def _live_blocks(rows: list[dict[str, Any]]) -> list[Block]:
    return [Table("", ["budget", "items", "accuracy"], [[r["budget_id"], Count(r["n_items"]), Rate(r["accuracy"])]
                                                        for r in rows], title="accuracy per budget")]


def _terminal(g: dict[str, Any]) -> list[Block]:
    cis = g["confidence_intervals"].get("fixed_accuracy", {})
    rows: list[list[object]] = []
    for b in g["grid"]:
        ci = cis.get(b) if isinstance(cis, dict) else None
        rows.append([b, Rate(g["fixed_accuracy"].get(b)), Interval(ci[0], ci[1]) if ci else ""])
    return [Table("", ["budget", "accuracy", "CI"], rows, title="accuracy per budget")]


register_metric(Metric(
    name="accuracy",
    figures=("accuracy",),
    keys=("fixed_accuracy", "best_fixed", "oracle_accuracy", "oracle_headroom"),
    tables=_tables,
    document=_document,
    features=_features,
    derived=_derived,
    rates=("fixed_accuracy", "best_fixed", "oracle_accuracy", "oracle_headroom"),
    report=_report,
    terminal=_terminal,
    headline=_headline,
    live=Live(_live_rows, _live_blocks),
    higher_is_better=True,
    description="accuracy at each fixed budget, the best of them, and the per-item oracle over the chain "
                "(right at some budget) with its headroom over the best fixed budget",
))
