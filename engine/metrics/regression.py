"""Terminal regressions and their recovery by a different sampling policy.

terminal regression: c_i(max)=0 and c_i(g)=1 for some *visual* g < max, where max is the
dearest budget of the chain (text-only answers do not count: right only text-only is text
overwrite). sampling recovery: the share of terminal regressions that an alternate
sampling policy at the max budget (same frames, size and pipeline, another policy or seed:
a budget of another chain) answers correctly, over all terminal regressions (one without
a result at the alternate budget counts as not recovered), reported beside the share
over those that have one, per alternate and for "any" alternate.

Registered as the metric ``terminal_regression`` (rates ``terminal_regression``,
``sampling_recovery`` and ``sampling_recovery_with_alt``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from engine.metrics.grid import BASE_GROUP, GROUP, budget_table, track_rows
from engine.metrics.per_item import ALL_ORDER, feature
from engine.metrics.registry import GroupRows, Inputs, Metric, register_metric
from engine.metrics.sections import Headline, Rate, text

__all__ = ["ANY_ALTERNATE", "alternate_rows", "sampling_recovery", "terminal_items", "terminal_regressions"]


def terminal_items(m: pl.LazyFrame, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Per matched item: is it a terminal regression?

    A terminal regression is wrong at the chain's dearest budget and right at some cheaper
    *visual* budget of the chain. Text-only answers do not count: an item right only
    text-only and wrong at every visual budget is text overwrite
    (`engine.metrics.overwrite`), not a terminal regression; a chain whose dearest budget is
    text-only has none.

    Returns:
        *by, item_id, terminal.
    """
    top = pl.col("rank") == pl.col("rank").max()
    wrong_at_top = (~pl.col("c") & ~pl.col("is_text")).filter(top).any()
    right_visual_below = (pl.col("c") & ~pl.col("is_text") & ~top).any()
    terminal = wrong_at_top & right_visual_below
    return m.group_by([*list(by), "item_id"]).agg(terminal.alias("terminal")).sort([*list(by), "item_id"])


def terminal_regressions(m: pl.LazyFrame, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Share of matched items wrong at the dearest budget but right at a cheaper one.

    Returns:
        *by, max_budget, n_items, n_terminal, terminal_regression.
    """
    by = list(by)
    top = m.filter(pl.col("rank") == pl.col("rank").max().over(by)).group_by(by).agg(
        pl.col("budget_id").first().alias("max_budget"))
    return (
        terminal_items(m, by).group_by(by)
        .agg(pl.len().cast(pl.Int64).alias("n_items"), pl.col("terminal").sum().cast(pl.Int64).alias("n_terminal"))
        .with_columns((pl.col("n_terminal") / pl.col("n_items")).alias("terminal_regression"))
        .join(top, on=by, how="inner", nulls_equal=True)
        .select([*by, "max_budget", "n_items", "n_terminal", "terminal_regression"])
        .sort(by)
    )


def alternate_rows(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Usable correctness rows at alternate-policy budgets of each chain's top budget.

    An alternate of a chain's dearest budget is a budget of another chain of the same model
    and dataset with the same frames, size and pipeline (another sampling policy or seed).

    Args:
        rows: One row per key (all budgets of every chain).

    Returns:
        model_id, dataset, protocol_id (the chain recovered), item_id, alt_budget_id, c_alt.
    """
    table = budget_table(rows).filter(~pl.col("is_text"))
    size = ["frames", "max_pixels", "short_side", "min_pixels", "exact_pixels", "pipeline"]
    top = (
        table.filter(pl.col("chain_rank") == pl.col("chain_rank").max().over(GROUP))
        .select([*GROUP, *size])
    )
    alts = (
        table.select([*BASE_GROUP, *size, pl.col("protocol_id").alias("_alt_protocol"), "budget_id"])
        .join(top, on=[*BASE_GROUP, *size], how="inner", nulls_equal=True)
        .filter(pl.col("_alt_protocol") != pl.col("protocol_id"))
        .select([*GROUP, "budget_id"])
    )
    usable = (pl.col("status") == "ok") & pl.col("correct").is_not_null()
    return (
        track_rows(rows, "correct").filter(usable)
        .join(alts, on=[*BASE_GROUP, "budget_id"], how="inner")
        .select([*GROUP, "item_id", pl.col("budget_id").alias("alt_budget_id"), pl.col("correct").alias("c_alt")])
        .sort([*GROUP, "item_id", "alt_budget_id"])
    )


ANY_ALTERNATE = "any"
"""The `alt_budget_id` of the row counting items recovered by at least one alternate policy."""


def sampling_recovery(m: pl.LazyFrame, alt: pl.LazyFrame, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Recovery of terminal regressions by each alternate sampling policy at the top budget.

    ``sampling_recovery`` is the share of **all** terminal regressions that the alternate
    answers correctly: a terminal regression without a result at the alternate budget counts
    as not recovered. ``sampling_recovery_with_alt`` is the share among those that have one.
    The row ``alt_budget_id == "any"`` counts an item recovered when at least one alternate
    answers it correctly (with_alt: it has at least one alternate result); it comes after the
    per-budget rows, and only for groups with an alternate budget.

    Args:
        m: Matched long frame (correctness track).
        alt: `alternate_rows` (or a bootstrap resample of it with the same item ids as `m`).
        by: Group keys (must include model_id and dataset).

    Returns:
        *by, alt_budget_id, n_terminal, n_with_alt, n_missing_alt, n_recovered, sampling_recovery
        (null when there is no terminal regression), sampling_recovery_with_alt (null when no
        terminal regression has an alternate result).
    """
    by = list(by)
    items = terminal_items(m, by)
    n_terminal = items.group_by(by).agg(pl.col("terminal").sum().cast(pl.Int64).alias("n_terminal"))
    alt_ids = alt.select([*GROUP, "alt_budget_id"]).unique()
    keys = [c for c in by if c in alt.collect_schema().names()]
    joined = items.filter(pl.col("terminal")).join(alt, on=[*keys, "item_id"], how="inner", nulls_equal=True)
    counts = joined.group_by([*by, "alt_budget_id"]).agg(
        pl.len().cast(pl.Int64).alias("n_with_alt"), pl.col("c_alt").sum().cast(pl.Int64).alias("n_recovered"))
    any_counts = (
        joined.group_by([*by, "item_id"]).agg(pl.col("c_alt").any().alias("_rec"))
        .group_by(by).agg(pl.len().cast(pl.Int64).alias("n_with_alt"),
                          pl.col("_rec").sum().cast(pl.Int64).alias("n_recovered"))
        .with_columns(pl.lit(ANY_ALTERNATE).alias("alt_budget_id"))
    )
    any_ids = alt_ids.select(GROUP).unique().with_columns(pl.lit(ANY_ALTERNATE).alias("alt_budget_id"))
    per_budget = n_terminal.join(alt_ids, on=GROUP, how="inner").join(
        counts, on=[*by, "alt_budget_id"], how="left", nulls_equal=True)
    anyrow = n_terminal.join(any_ids, on=GROUP, how="inner").join(
        any_counts, on=[*by, "alt_budget_id"], how="left", nulls_equal=True)
    return (
        pl.concat([per_budget.with_columns(pl.lit(0).alias("_any")), anyrow.with_columns(pl.lit(1).alias("_any"))],
                  how="diagonal_relaxed")
        .with_columns(pl.col("n_with_alt").fill_null(0), pl.col("n_recovered").fill_null(0))
        .with_columns(
            (pl.col("n_terminal") - pl.col("n_with_alt")).alias("n_missing_alt"),
            pl.when(pl.col("n_terminal") > 0).then(pl.col("n_recovered") / pl.col("n_terminal"))
            .alias("sampling_recovery"),
            pl.when(pl.col("n_with_alt") > 0).then(pl.col("n_recovered") / pl.col("n_with_alt"))
            .alias("sampling_recovery_with_alt"),
        )
        .sort([*by, "_any", "alt_budget_id"])
        .select([*by, "alt_budget_id", "n_terminal", "n_with_alt", "n_missing_alt", "n_recovered",
                 "sampling_recovery", "sampling_recovery_with_alt"])
    )


def _tables(inputs: Inputs) -> dict[str, pl.LazyFrame]:
    return {"terminal": terminal_regressions(inputs.m), "recovery": sampling_recovery(inputs.m, inputs.alt)}


def _document(rows: GroupRows, opts: Any) -> dict[str, Any] | None:
    term = rows.one("terminal")
    if term is None:
        return None
    rec = [{"alt_budget_id": r["alt_budget_id"], "n_with_alt": r["n_with_alt"], "n_missing_alt": r["n_missing_alt"],
            "n_recovered": r["n_recovered"], "share": r["sampling_recovery"],
            "share_with_alt": r["sampling_recovery_with_alt"]} for r in rows("recovery")]
    return {"max_budget": term["max_budget"], "n_terminal": term["n_terminal"], "share": term["terminal_regression"],
            "sampling_recovery": rec}


def _recovery_features(term: pl.LazyFrame, alt: pl.LazyFrame, by: list[str]) -> list[pl.LazyFrame]:
    """sampling_recovery over every terminal regression (no alternate result: not recovered) and
    sampling_recovery_with_alt over those with one; per alternate budget and for "any" alternate."""
    keys = [c for c in by if c in alt.collect_schema().names()]
    with_alt = term.join(alt, on=[*keys, "item_id"], how="inner", nulls_equal=True)
    alt_ids = alt.select([*keys, "alt_budget_id"]).unique()
    t, rec = pl.col("terminal"), pl.col("c_alt").fill_null(False)
    per_alt = (  # every item of a group with alternates, once per alternate budget (null: no result there)
        term.join(alt_ids, on=keys, how="inner", nulls_equal=True)
        .join(alt, on=[*keys, "item_id", "alt_budget_id"], how="left", nulls_equal=True)
    )
    any_alt = per_alt.group_by([*by, "item_id"]).agg(t.first(), pl.col("c_alt").fill_null(False).any(),
                                                      pl.col("c_alt").is_not_null().any().alias("_has"))
    anykey = pl.lit(ANY_ALTERNATE)
    return [
        feature(per_alt, by, "sampling_recovery", t & rec, t, pl.col("alt_budget_id")),
        feature(any_alt, by, "sampling_recovery", t & rec, t, anykey, ALL_ORDER),
        feature(with_alt, by, "sampling_recovery_with_alt", t & rec, t, pl.col("alt_budget_id")),
        feature(any_alt.filter(pl.col("_has")), by, "sampling_recovery_with_alt", t & rec, t, anykey, ALL_ORDER),
    ]


def _features(m: pl.LazyFrame, alt: pl.LazyFrame | None, by: list[str]) -> pl.LazyFrame:
    term = terminal_items(m, by)
    parts = [feature(term, by, "terminal_regression", pl.col("terminal"))]
    if alt is not None:
        parts += _recovery_features(term, alt, by)
    return pl.concat(parts, how="vertical_relaxed")


def _headline(g: dict[str, Any]) -> Headline:
    term = g["terminal_regression"] or {}
    rows: list[tuple[str, object]] = [
        ("terminal regressions (wrong at the top, right at a cheaper visual budget)", Rate(term.get("share")))]
    for r in term.get("sampling_recovery") or []:
        who = "any alternate policy" if r["alt_budget_id"] == "any" else r["alt_budget_id"]
        counts = f"{r['n_recovered']} of {term.get('n_terminal')}; {r['n_missing_alt']} without a result"
        rows.append((f"recovered by {who} (of all terminal; of those with a result)",
                     text(Rate(r["share"]), "; ", Rate(r.get("share_with_alt")), f" ({counts})")))
    return Headline(text("terminal regressions ", Rate(term.get("share"))), tuple(rows))


register_metric(Metric(
    name="terminal_regression",
    tables=_tables,
    document=_document,
    features=_features,
    rates=("terminal_regression", "sampling_recovery", "sampling_recovery_with_alt"),
    headline=_headline,
    higher_is_better=False,
    description="items wrong at the chain's dearest budget and right at a cheaper visual one, and the share of "
                "them an alternate sampling policy at that budget recovers",
))
