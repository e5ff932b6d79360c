"""Generation (open-task) metrics over graded scores s_i(g) in [0, 1] (token-F1).

- oracle gap = mean_i max_g s_i(g) - max_g mean_i s_i(g)
- regression share for g < h = #{i : s_i(h) < s_i(g) - eps} / n

Run them on the ``"score"`` track of `engine.metrics.grid.matched`.

Registered as the metric ``generation`` (score-track rates ``generation_mean_score``,
``generation_best_score``, ``generation_oracle_score``, ``generation_oracle_gap``,
``generation_regression_share``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from engine.metrics.flows import paired
from engine.metrics.grid import GROUP
from engine.metrics.options import DEFAULT_EPS
from engine.metrics.oracle import fixed_accuracy, oracle
from engine.metrics.per_item import arrow, feature, pair_order, rate_of, single_rates
from engine.metrics.registry import GroupRows, Inputs, Metric, register_metric
from engine.metrics.sections import Block, Note, Rate, text

__all__ = ["DEFAULT_EPS", "generation_oracle", "score_regressions"]


def generation_oracle(m: pl.LazyFrame, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Per-item oracle over budgets against the best single budget, on graded scores.

    Returns:
        *by, n_items, oracle_score, best_budget, best_score, oracle_gap.
    """
    return oracle(m, by, value="s").rename(
        {"oracle_accuracy": "oracle_score", "best_accuracy": "best_score", "oracle_headroom": "oracle_gap"}
    )


def score_regressions(m: pl.LazyFrame, by: Sequence[str] = GROUP, *, eps: float = DEFAULT_EPS,
                      consecutive: bool = False) -> pl.LazyFrame:
    """Share of items whose score drops by more than `eps` from g to h, for every g < h.

    Args:
        m: Matched long frame (score track).
        by: Group keys.
        eps: Drops of at most `eps` do not count.
        consecutive: Only consecutive pairs of the grid.

    Returns:
        *by, from, to, n, n_regressed, regression_share; in grid order.
    """
    by = list(by)
    return (
        paired(m, by, consecutive=consecutive)
        .group_by([*by, "from", "to"])
        .agg(pl.col("rank_from").first(), pl.col("rank_to").first(), pl.len().cast(pl.Int64).alias("n"),
             (pl.col("s_to") < pl.col("s_from") - eps).sum().cast(pl.Int64).alias("n_regressed"))
        .with_columns((pl.col("n_regressed") / pl.col("n")).alias("regression_share"))
        .sort([*by, "rank_from", "rank_to"])
        .select([*by, "from", "to", "n", "n_regressed", "regression_share"])
    )


def _tables(inputs: Inputs) -> dict[str, pl.LazyFrame]:
    ms = inputs.m_score
    return {"fixed": fixed_accuracy(ms, value="s"), "oracle": generation_oracle(ms),
            "regressions": score_regressions(ms, eps=inputs.opts.eps)}


def _document(rows: GroupRows, opts: Any) -> dict[str, Any] | None:
    grid = next(iter(rows.shared("grid_score")), None)
    if grid is None:
        return None
    orc = rows.one("oracle")
    return {
        "grid": grid["grid"], "n_items": grid["n_items"], "n_excluded": grid["n_excluded"], "eps": opts.eps,
        "mean_score": {r["budget_id"]: r["accuracy"] for r in rows("fixed")},
        "best_fixed": {"budget_id": orc["best_budget"], "score": orc["best_score"]} if orc else None,
        "oracle_score": orc["oracle_score"] if orc else None, "oracle_gap": orc["oracle_gap"] if orc else None,
        "regressions": [{"from": r["from"], "to": r["to"], "n_regressed": r["n_regressed"],
                         "share": r["regression_share"]} for r in rows("regressions")],
    }


def _score_features(m: pl.LazyFrame, by: list[str], eps: float) -> pl.LazyFrame:
    pairs = paired(m, by)
    return pl.concat([
        feature(m, by, "generation_mean_score", pl.col("s"), key=pl.col("budget_id"), korder=pl.col("rank")),
        feature(m.group_by([*by, "item_id"]).agg(pl.col("s").max()), by, "generation_oracle_score", pl.col("s")),
        feature(pairs, by, "generation_regression_share", pl.col("s_to") < pl.col("s_from") - eps,
                key=arrow(), korder=pair_order()),
    ], how="vertical_relaxed")


def _derived(rates: pl.LazyFrame, by: list[str]) -> list[pl.LazyFrame]:
    scalars = rates.group_by(by).agg(
        rate_of("generation_mean_score").max().alias("generation_best_score"),
        rate_of("generation_oracle_score").first().alias("_go"),
    ).with_columns((pl.col("_go") - pl.col("generation_best_score")).alias("generation_oracle_gap"))
    return [single_rates(scalars, by, ["generation_best_score", "generation_oracle_gap"])]


def _terminal(g: dict[str, Any]) -> list[Block]:
    gen = g["generation"]
    return [Note(text(f"open tasks: {gen['n_items']} items, oracle gap ", Rate(gen["oracle_gap"]), " pts"))] if gen else []


register_metric(Metric(
    name="generation",
    tables=_tables,
    document=_document,
    score_features=_score_features,
    derived=_derived,
    rates=("generation_mean_score", "generation_best_score", "generation_oracle_score", "generation_oracle_gap",
           "generation_regression_share"),
    terminal=_terminal,
    higher_is_better=True,
    description="open tasks (graded scores): mean score per budget, the best of them, the per-item oracle and its "
                "gap, and the share of items whose score drops between budgets",
))
