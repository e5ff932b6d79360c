"""Generation (open-task) metrics over graded scores s_i(g) in [0, 1] (token-F1).

- oracle gap = mean_i max_g s_i(g) - max_g mean_i s_i(g)
- regression share for g < h = #{i : s_i(h) < s_i(g) - eps} / n

Run them on the ``"score"`` track of `engine.metrics.grid.matched`.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from engine.metrics.flows import paired
from engine.metrics.grid import GROUP
from engine.metrics.oracle import oracle

__all__ = ["DEFAULT_EPS", "generation_oracle", "score_regressions"]

DEFAULT_EPS = 1e-9
"""Tolerance below which a score drop is not a regression (guards float noise only)."""


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
