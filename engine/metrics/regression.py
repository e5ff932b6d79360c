"""Terminal regressions and their recovery by a different sampling policy.

terminal regression: c_i(max)=0 and c_i(g)=1 for some g < max, where max is the
dearest budget of the grid. sampling recovery: the share of terminal regressions that
an alternate sampling policy at the max budget (same frames and size, another
policy or seed, off the chain) answers correctly, among the regressions that have a
result at that alternate budget (the others are counted as missing).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from engine.metrics.grid import GROUP, budget_table, track_rows

__all__ = ["alternate_rows", "sampling_recovery", "terminal_items", "terminal_regressions"]


def terminal_items(m: pl.LazyFrame, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Per matched item: is it a terminal regression?

    Returns:
        *by, item_id, terminal.
    """
    # wrong at the top rank, and right somewhere (necessarily below the top)
    last_wrong = pl.when(~pl.col("c")).then(pl.col("rank")).max()
    terminal = (last_wrong == pl.col("rank").max()).fill_null(False) & pl.col("c").any()
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
    """Usable correctness rows at alternate-policy budgets of each group's top chain budget.

    Args:
        rows: One row per key (all budgets, on and off the chain).

    Returns:
        model_id, dataset, item_id, alt_budget_id, c_alt.
    """
    table = budget_table(rows)
    size = ["frames", "max_pixels", "short_side"]
    top = (
        table.filter(pl.col("on_chain") & (pl.col("chain_rank") == pl.col("chain_rank").max().over(GROUP)))
        .select([*GROUP, *size])
    )
    alts = (
        table.filter(~pl.col("on_chain") & (pl.col("frames") > 0))
        .join(top, on=[*GROUP, *size], how="semi", nulls_equal=True)
        .select([*GROUP, "budget_id"])
    )
    usable = (pl.col("status") == "ok") & pl.col("correct").is_not_null()
    return (
        track_rows(rows, "correct").filter(usable)
        .join(alts, on=[*GROUP, "budget_id"], how="semi")
        .select([*GROUP, "item_id", pl.col("budget_id").alias("alt_budget_id"), pl.col("correct").alias("c_alt")])
        .sort([*GROUP, "item_id", "alt_budget_id"])
    )


def sampling_recovery(m: pl.LazyFrame, alt: pl.LazyFrame, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Recovery of terminal regressions by each alternate sampling policy at the top budget.

    Args:
        m: Matched long frame (correctness track).
        alt: `alternate_rows` (or a bootstrap resample of it with the same item ids as `m`).
        by: Group keys (must include model_id and dataset).

    Returns:
        *by, alt_budget_id, n_terminal, n_with_alt, n_missing_alt, n_recovered, sampling_recovery
        (null when no terminal regression has an alternate result).
    """
    by = list(by)
    items = terminal_items(m, by)
    n_terminal = items.group_by(by).agg(pl.col("terminal").sum().cast(pl.Int64).alias("n_terminal"))
    alt_ids = alt.select([*GROUP, "alt_budget_id"]).unique()
    keys = [c for c in by if c in alt.collect_schema().names()]
    joined = items.filter(pl.col("terminal")).join(alt, on=[*keys, "item_id"], how="inner", nulls_equal=True)
    counts = joined.group_by([*by, "alt_budget_id"]).agg(
        pl.len().cast(pl.Int64).alias("n_with_alt"), pl.col("c_alt").sum().cast(pl.Int64).alias("n_recovered"))
    return (
        n_terminal.join(alt_ids, on=GROUP, how="inner")
        .join(counts, on=[*by, "alt_budget_id"], how="left", nulls_equal=True)
        .with_columns(pl.col("n_with_alt").fill_null(0), pl.col("n_recovered").fill_null(0))
        .with_columns(
            (pl.col("n_terminal") - pl.col("n_with_alt")).alias("n_missing_alt"),
            pl.when(pl.col("n_with_alt") > 0).then(pl.col("n_recovered") / pl.col("n_with_alt"))
            .alias("sampling_recovery"),
        )
        .select([*by, "alt_budget_id", "n_terminal", "n_with_alt", "n_missing_alt", "n_recovered",
                 "sampling_recovery"])
        .sort([*by, "alt_budget_id"])
    )
