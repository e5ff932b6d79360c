"""The metric registry: adding a metric is one module and one `register_metric` call.

A registered `Metric` brings everything the audit needs of it:

- ``tables(inputs)``: its computation, named lazy tables over the snapshot's shared inputs
  (`Inputs`: the matched correctness and score frames, the alternate-policy rows, the
  snapshot and the options); `summary_tables` collects them with every other table;
- ``document(rows, opts)``: its value under ``groups[*].<name>`` of the metrics JSON, from
  its own collected tables restricted to one group (``rows("table") -> [dict]``);
- ``features(m, alt, by)`` (optional): per-item ``(num, den)`` of its rates, so the rates get
  paired bootstrap intervals and per-category splits exactly like the built-in ones;
- ``report(group, idx)`` (optional): its HTML section in the report, from the group's entry.

A metric module registers itself when imported; `engine.metrics` imports every
metric module, so a new one is listed there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

from engine.metrics.options import SummaryOptions

__all__ = ["Inputs", "Metric", "get_metric", "register_metric", "registered_metrics", "unregister_metric"]


@dataclass(frozen=True)
class Inputs:
    """What every metric computation reads (each materialized once per `summary_tables` call)."""

    snapshot: pl.LazyFrame
    """One row per key, the columns of `engine.metrics.summary.SNAPSHOT_COLUMNS`."""
    m: pl.LazyFrame
    """Matched long frame, correctness track (`engine.metrics.grid.matched`)."""
    m_score: pl.LazyFrame
    """Matched long frame, score track (open tasks)."""
    alt: pl.LazyFrame
    """Alternate-policy rows at the grid's largest budget (`engine.metrics.regression.alternate_rows`)."""
    opts: SummaryOptions


GroupRows = Callable[[str], list[dict[str, Any]]]
"""rows(table_name) -> that table's rows for one (model, dataset) group, group keys dropped."""


@dataclass(frozen=True)
class Metric:
    """One registered metric (see the module docstring).

    Attributes:
        name: Its key in each group of the metrics document (unique).
        tables: inputs -> {table name: LazyFrame with the group columns model_id, dataset}.
        document: (rows, opts) -> the JSON value of one group.
        features: (m, alt, by) -> *by, item_id, metric, key, korder, num, den (correctness track).
        report: (group entry, group index) -> an HTML fragment ("" for nothing).
        higher_is_better: Whether larger values are better (recorded in the document's `metrics`).
        description: One line for the document and the docs.
    """

    name: str
    tables: Callable[[Inputs], dict[str, pl.LazyFrame]]
    document: Callable[[GroupRows, Any], Any]
    features: Callable[[pl.LazyFrame, pl.LazyFrame | None, list[str]], pl.LazyFrame] | None = None
    report: Callable[[dict[str, Any], int], str] | None = None
    higher_is_better: bool | None = None
    description: str = ""


_REGISTRY: dict[str, Metric] = {}


def register_metric(metric: Metric) -> Metric:
    """Register `metric` (a name registered twice is an error)."""
    if metric.name in _REGISTRY:
        raise ValueError(f"metric {metric.name!r} registered twice")
    _REGISTRY[metric.name] = metric
    return metric


def unregister_metric(name: str) -> None:
    """Remove a registered metric (tests that register a temporary one)."""
    _REGISTRY.pop(name, None)


def get_metric(name: str) -> Metric:
    """The metric registered as `name`; an unknown name lists the known ones."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None


def registered_metrics() -> list[Metric]:
    """Every registered metric, in registration order."""
    return list(_REGISTRY.values())
