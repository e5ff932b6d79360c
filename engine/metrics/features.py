"""Every rate as a sum over items: per-item numerators and denominators.

Each rate of `engine.metrics.rates` is ``sum_i num_i / sum_i den_i`` over the matched
items of a group, or is derived from such rates (best fixed, headroom, net, churn,
oracle gap; see `engine.metrics.rates`). This module gives each item's (num, den) for
every base rate, built from the same per-item quantities as the detailed metric
functions. Because a rate is a sum over items, a bootstrap replicate only needs how
many times each item was drawn.

Base rates (key in brackets, "" when single):
``fixed_accuracy[budget]``, ``oracle_accuracy``, ``rescue_rate[g->h]``, ``harm_rate[g->h]``
(consecutive), ``visual_confusion``, ``visual_confusion_visual_only``,
``text_overwrite_share_all[budget|any|all]``, ``text_overwrite_share_text_correct[...]``,
``terminal_regression``, ``sampling_recovery[alt budget|any]`` (over every terminal regression),
``sampling_recovery_with_alt[alt budget|any]`` (over those with an alternate result); score track:
``generation_mean_score[budget]``, ``generation_oracle_score``,
``generation_regression_share[g->h]`` (every g < h); plus the rates of every metric of
`engine.metrics.registry` that declares `features`.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from engine.metrics.confusion import confusion_items
from engine.metrics.flows import paired
from engine.metrics.generation import DEFAULT_EPS
from engine.metrics.grid import GROUP
from engine.metrics.overwrite import text_items
from engine.metrics.registry import registered_metrics
from engine.metrics.regression import ANY_ALTERNATE, terminal_items

__all__ = ["FEATURE_COLUMNS", "METRIC_ORDER", "correct_features", "score_features"]

METRIC_ORDER: tuple[str, ...] = (
    "fixed_accuracy", "best_fixed", "oracle_accuracy", "oracle_headroom",
    "rescue_rate", "harm_rate", "net", "churn",
    "visual_confusion", "visual_confusion_visual_only",
    "text_overwrite_share_all", "text_overwrite_share_text_correct",
    "terminal_regression", "sampling_recovery", "sampling_recovery_with_alt",
    "generation_mean_score", "generation_best_score", "generation_oracle_score", "generation_oracle_gap",
    "generation_regression_share",
)
FEATURE_COLUMNS = ["metric", "key", "korder", "num", "den"]
_ANY, _ALL = 1 << 40, (1 << 40) + 1  # key order of "any"/"all": after every budget


def _feat(frame: pl.LazyFrame, by: list[str], metric: str, num: pl.Expr, den: pl.Expr | float = 1.0,
          key: pl.Expr | str = "", korder: pl.Expr | int = 0) -> pl.LazyFrame:
    def lit(v: object) -> pl.Expr:
        return v if isinstance(v, pl.Expr) else pl.lit(v)

    return frame.select(
        *by, "item_id", pl.lit(metric).alias("metric"), lit(key).cast(pl.String).alias("key"),
        lit(korder).cast(pl.Int64).alias("korder"), num.cast(pl.Float64).alias("num"),
        lit(den).cast(pl.Float64).alias("den"),
    )


def _arrow() -> pl.Expr:
    return pl.concat_str([pl.col("from"), pl.lit("->"), pl.col("to")])


def _pair_order() -> pl.Expr:
    return pl.col("rank_from") * 4096 + pl.col("rank_to")


def _overwrite_features(m: pl.LazyFrame, by: list[str]) -> list[pl.LazyFrame]:
    items = text_items(m, by)
    ct = pl.col("text_correct")
    visual = m.filter(~pl.col("is_text")).join(items.select([*by, "item_id", "text_correct"]),
                                                on=[*by, "item_id"], how="inner", nulls_equal=True)
    scoped = items.filter(pl.col("n_visual") > 0)
    out = []
    for metric, den in (("text_overwrite_share_all", pl.lit(1.0)), ("text_overwrite_share_text_correct", ct)):
        out += [
            _feat(visual, by, metric, ct & ~pl.col("c"), den, pl.col("budget_id"), pl.col("rank")),
            _feat(scoped, by, metric, ct & pl.col("any_wrong"), den, "any", _ANY),
            _feat(scoped, by, metric, ct & pl.col("all_wrong"), den, "all", _ALL),
        ]
    return out


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
        _feat(per_alt, by, "sampling_recovery", t & rec, t, pl.col("alt_budget_id")),
        _feat(any_alt, by, "sampling_recovery", t & rec, t, anykey, _ALL),
        _feat(with_alt, by, "sampling_recovery_with_alt", t & rec, t, pl.col("alt_budget_id")),
        _feat(any_alt.filter(pl.col("_has")), by, "sampling_recovery_with_alt", t & rec, t, anykey, _ALL),
    ]


def correct_features(m: pl.LazyFrame, alt: pl.LazyFrame | None = None, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Per-item (num, den) of every base rate of the correctness track.

    Args:
        m: Matched long frame (correctness track).
        alt: `engine.metrics.regression.alternate_rows`, for sampling recovery (None to skip).
        by: Group keys.

    Returns:
        *by, item_id, metric, key, korder, num, den.
    """
    by = list(by)
    steps = paired(m, by, consecutive=True)
    g, h = pl.col("c_from"), pl.col("c_to")
    conf, term = confusion_items(m, by), terminal_items(m, by)
    parts = [
        _feat(m, by, "fixed_accuracy", pl.col("c"), key=pl.col("budget_id"), korder=pl.col("rank")),
        _feat(m.group_by([*by, "item_id"]).agg(pl.col("c").max()), by, "oracle_accuracy", pl.col("c")),
        _feat(steps, by, "rescue_rate", ~g & h, key=_arrow(), korder=_pair_order()),
        _feat(steps, by, "harm_rate", g & ~h, key=_arrow(), korder=_pair_order()),
        _feat(conf, by, "visual_confusion", pl.col("confused")),
        _feat(conf, by, "visual_confusion_visual_only", pl.col("confused_visual")),
        *_overwrite_features(m, by),
        _feat(term, by, "terminal_regression", pl.col("terminal")),
        *(metric.features(m, alt, by) for metric in registered_metrics() if metric.features is not None),
    ]
    if alt is not None:
        parts += _recovery_features(term, alt, by)
    return pl.concat(parts, how="vertical_relaxed").sort([*by, "item_id", "metric", "korder", "key"])


def score_features(m: pl.LazyFrame, by: Sequence[str] = GROUP, *, eps: float = DEFAULT_EPS) -> pl.LazyFrame:
    """Per-item (num, den) of every base rate of the score track (open tasks).

    Returns:
        *by, item_id, metric, key, korder, num, den.
    """
    by = list(by)
    pairs = paired(m, by)
    return pl.concat([
        _feat(m, by, "generation_mean_score", pl.col("s"), key=pl.col("budget_id"), korder=pl.col("rank")),
        _feat(m.group_by([*by, "item_id"]).agg(pl.col("s").max()), by, "generation_oracle_score", pl.col("s")),
        _feat(pairs, by, "generation_regression_share", pl.col("s_to") < pl.col("s_from") - eps,
              key=_arrow(), korder=_pair_order()),
    ], how="vertical_relaxed").sort([*by, "item_id", "metric", "korder", "key"])
