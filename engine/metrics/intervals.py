"""Paired bootstrap percentile intervals of every rate of a group (`engine.metrics.rates.rate_intervals`).

Registered as the metric ``confidence_intervals`` (``groups[].confidence_intervals``: {metric:
[lo, hi] | {key: [lo, hi]}}; none with ``n_boot = 0``). Registered last: it covers the rates
of every metric registered before it.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from engine.metrics.categories import nest
from engine.metrics.rates import rate_intervals
from engine.metrics.registry import GroupRows, Inputs, Metric, register_metric

__all__: list[str] = []


def _tables(inputs: Inputs) -> dict[str, pl.LazyFrame]:
    opts = inputs.opts
    if opts.n_boot <= 0:
        return {}
    return {"intervals": rate_intervals(inputs.m, alt=inputs.alt, m_score=inputs.m_score, n_boot=opts.n_boot,
                                        seed=opts.seed, level=opts.level, eps=opts.eps)}


def _document(rows: GroupRows, opts: Any) -> dict[str, Any]:
    return nest(rows("intervals"), ("lo", "hi"))


register_metric(Metric(
    name="confidence_intervals",
    tables=_tables,
    document=_document,
    description="paired bootstrap percentile intervals (over items) of every rate, at the options' level",
))
