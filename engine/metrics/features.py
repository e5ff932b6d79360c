"""Every rate as a sum over items: per-item numerators and denominators.

Each rate of `engine.metrics.rates` is ``sum_i num_i / sum_i den_i`` over the matched
items of a group, or is derived from such rates (best fixed, headroom, net, churn,
oracle gap; see `engine.metrics.rates`). This module gathers each item's (num, den) for
every base rate of every registered metric (`engine.metrics.registry.Metric.features` on
the correctness track, ``score_features`` on the score track). Because a rate is a sum
over items, a bootstrap replicate only needs how many times each item was drawn.

The built-in base rates (key in brackets, "" when single):
``fixed_accuracy[budget]``, ``oracle_accuracy`` (`engine.metrics.oracle`), ``rescue_rate[g->h]``,
``harm_rate[g->h]`` (consecutive; `engine.metrics.flows`), ``visual_confusion``,
``visual_confusion_visual_only`` (`engine.metrics.confusion`), ``text_overwrite_share_all[budget|any|all]``,
``text_overwrite_share_text_correct[...]`` (`engine.metrics.overwrite`), ``terminal_regression``,
``sampling_recovery[alt budget|any]`` (over every terminal regression), ``sampling_recovery_with_alt[alt
budget|any]`` (over those with an alternate result; `engine.metrics.regression`); score track:
``generation_mean_score[budget]``, ``generation_oracle_score``, ``generation_regression_share[g->h]``
(every g < h; `engine.metrics.generation`).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from engine.metrics.grid import GROUP
from engine.metrics.options import DEFAULT_EPS
from engine.metrics.registry import registered_metrics

__all__ = ["correct_features", "metric_order", "score_features"]

_COLUMNS = {"metric": pl.String, "key": pl.String, "korder": pl.Int64, "num": pl.Float64, "den": pl.Float64}


def metric_order() -> tuple[str, ...]:
    """Every registered rate, in the order the rate tables list them (registration order)."""
    return tuple(rate for metric in registered_metrics() for rate in metric.rates)


def _gather(parts: list[pl.LazyFrame], by: list[str]) -> pl.LazyFrame:
    if not parts:
        return pl.LazyFrame(schema={**dict.fromkeys(by, pl.String), "item_id": pl.String, **_COLUMNS})
    return pl.concat(parts, how="vertical_relaxed").sort([*by, "item_id", "metric", "korder", "key"])


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
    return _gather([mt.features(m, alt, by) for mt in registered_metrics() if mt.features is not None], by)


def score_features(m: pl.LazyFrame, by: Sequence[str] = GROUP, *, eps: float = DEFAULT_EPS) -> pl.LazyFrame:
    """Per-item (num, den) of every base rate of the score track (open tasks).

    Returns:
        *by, item_id, metric, key, korder, num, den.
    """
    by = list(by)
    return _gather([mt.score_features(m, by, eps) for mt in registered_metrics() if mt.score_features is not None],
                   by)
