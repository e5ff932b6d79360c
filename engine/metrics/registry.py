"""The metric registry: every metric of the audit is one `Metric`, registered by its module.

A registered `Metric` brings everything the audit needs of it:

- ``inputs``: the snapshot columns it reads beyond the matched frames' (`engine.metrics.summary`
  selects them; ``optional_inputs`` where the rows have them);
- ``tables(inputs)``: its computation, named lazy tables over the snapshot's shared inputs
  (`Inputs`: the matched correctness and score frames, the alternate-policy rows, the
  snapshot and the options); `summary_tables` collects them as ``<metric>:<table>``;
- ``document``: its value in the metrics JSON. A ``"group"`` metric fills ``groups[*].<key>`` for
  each of its ``keys`` (default: its name) from its own tables restricted to one group
  (`GroupRows`); a ``"dataset"`` metric fills the top-level ``<name>`` from whole tables
  (`DatasetTables`);
- ``features`` / ``score_features`` (optional): per-item ``(num, den)`` of its rates on the
  correctness / score track, so the rates get paired bootstrap intervals and per-category splits;
  ``derived`` the rates computed from those; ``rates`` names them all in the order they are listed;
- ``report`` / ``terminal`` (optional): its section in the HTML report and in the terminal
  (``framesweep metrics``), as presentation-neutral blocks (`engine.metrics.sections`) that
  `engine.report` and the CLI render; ``headline`` (optional): its share of each chain's headline (the
  terminal's first line per chain, the report's headline table); ``live`` (optional): its table over the rows
  while they come in (`run`'s ending, `status`);
- ``annotations`` (optional): per-item columns of the exported artifact (``engine.export``), with
  ``annotation_columns`` describing them;
- ``higher_is_better`` and ``description``: written into the document's ``metrics`` list.

A metric module registers itself when imported; `engine.metrics` imports every built-in one in the
order of the document's keys, so a new one is one module plus one import line there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import polars as pl

from engine.metrics.grid import GROUP
from engine.metrics.options import SummaryOptions
from engine.registry import Registry, where

__all__ = ["METRICS", "DatasetTables", "GroupRows", "Inputs", "Live", "Metric", "TableIndex", "live_tables",
           "metric_list", "register_metric", "registered_metrics", "registered_table"]

Key = tuple[str, ...]
Scope = Literal["group", "dataset"]


@dataclass(frozen=True)
class Inputs:
    """What every metric computation reads (each materialized once per `summary_tables` call)."""

    snapshot: pl.LazyFrame
    """One row per key: the base columns of `engine.metrics.summary` plus every metric's ``inputs``."""
    m: pl.LazyFrame
    """Matched long frame, correctness track (`engine.metrics.grid.matched`)."""
    m_score: pl.LazyFrame
    """Matched long frame, score track (open tasks)."""
    alt: pl.LazyFrame
    """Alternate-policy rows at the grid's largest budget (`engine.metrics.regression.alternate_rows`)."""
    opts: SummaryOptions


def registered_table(metric: str, table: str) -> str:
    """The name under which a registered metric's table is collected (``metric:table``)."""
    return f"{metric}:{table}"


class TableIndex:
    """Collected tables, each split once by (model_id, dataset, protocol_id)."""

    def __init__(self, tables: Mapping[str, pl.DataFrame]) -> None:
        self._t = tables
        self._parts: dict[str, dict[Key, list[dict[str, Any]]]] = {}

    def rows(self, name: str, key: Key) -> list[dict[str, Any]]:
        """The rows of table `name` in group `key`, without the group columns."""
        if name not in self._parts:
            self._parts[name] = self._split(self._t.get(name))
        return self._parts[name].get(key, [])

    @staticmethod
    def _split(df: pl.DataFrame | None) -> dict[Key, list[dict[str, Any]]]:
        if df is None or df.is_empty() or not all(c in df.columns for c in GROUP):
            return {}
        return {tuple(str(v) for v in k): part.drop(GROUP).to_dicts()
                for k, part in df.partition_by(GROUP, as_dict=True, maintain_order=True).items()}

    def one(self, name: str, key: Key) -> dict[str, Any] | None:
        """The first row of table `name` in group `key` (None: none)."""
        rows = self.rows(name, key)
        return rows[0] if rows else None

    def frame(self, name: str) -> pl.DataFrame | None:
        """Table `name` whole (None: not computed)."""
        return self._t.get(name)


@dataclass(frozen=True)
class GroupRows:
    """What a group metric's ``document`` reads: its own tables in one group, and the shared ones."""

    index: TableIndex
    metric: str
    key: Key

    def __call__(self, table: str) -> list[dict[str, Any]]:
        """This metric's table `table`, restricted to the group (group keys dropped)."""
        return self.index.rows(registered_table(self.metric, table), self.key)

    def one(self, table: str) -> dict[str, Any] | None:
        """The first row of this metric's table `table` in the group (None: none)."""
        rows = self(table)
        return rows[0] if rows else None

    def shared(self, table: str) -> list[dict[str, Any]]:
        """A table every metric may read (``grid``, ``grid_score``, ``budgets``), restricted to the group."""
        return self.index.rows(table, self.key)


@dataclass(frozen=True)
class DatasetTables:
    """What a dataset metric's ``document`` reads: its own tables whole, or by group."""

    index: TableIndex
    metric: str

    def frame(self, table: str) -> pl.DataFrame | None:
        return self.index.frame(registered_table(self.metric, table))

    def rows(self, table: str, key: Key) -> list[dict[str, Any]]:
        return self.index.rows(registered_table(self.metric, table), key)

    def one(self, table: str, key: Key) -> dict[str, Any] | None:
        return self.index.one(registered_table(self.metric, table), key)


Features = Callable[[pl.LazyFrame, pl.LazyFrame | None, list[str]], pl.LazyFrame]
ScoreFeatures = Callable[[pl.LazyFrame, list[str], float], pl.LazyFrame]
Derived = Callable[[pl.LazyFrame, list[str]], list[pl.LazyFrame]]


@dataclass(frozen=True)
class Live:
    """A group metric's table over the result rows while they come in: what `run` prints at its end and `status`
    while a sweep writes (per chain, under the chain's heading).

    Attributes:
        rows: Result rows (one per key) -> its rows, the group columns first, each chain's in the chain's order.
        blocks: One chain's rows (dicts, group columns dropped) -> what people read of them.
    """

    rows: Callable[[pl.LazyFrame], pl.LazyFrame]
    blocks: Callable[[list[dict[str, Any]]], list[Any]]


@dataclass(frozen=True)
class Metric:
    """One registered metric (see the module docstring).

    Attributes:
        name: Unique; the top-level key of a dataset metric, the group key of a group metric with no ``keys``.
        tables: inputs -> {table name: LazyFrame (group metrics: with the group columns model_id, dataset,
            protocol_id)}.
        document: group: (GroupRows, opts) -> the value of one group (a dict of its ``keys`` when it has
            several); dataset: (DatasetTables, opts) -> the top-level value.
        scope: ``"group"`` (one value per chain) or ``"dataset"`` (one top-level value across chains).
        keys: The group keys its document fills, in order (default: its name).
        inputs: Snapshot columns it reads beyond the base ones; ``optional_inputs`` where the rows have them.
        features: (m, alt, by) -> *by, item_id, metric, key, korder, num, den (correctness track).
        score_features: (m_score, by, eps) -> the same on the score track (open tasks).
        derived: (rates, by) -> frames of *by, metric, key, korder, value computed from its base rates.
        rates: Its rate names (base and derived), in the order the rate tables list them.
        report: (group entry, group index) for a group metric, (its entries of one model and dataset,
            index) for a dataset metric -> blocks of its report section ([] for nothing).
        terminal: the same arguments without the index -> blocks printed by ``framesweep metrics``.
        headline: (group entry) -> its share of the chain's headline (`engine.metrics.sections.Headline`): the
            line ``framesweep metrics`` prints first per chain and the report's headline table.
        live: Its table over result rows as they come in (`Live`): `run`'s ending tables, `status`.
        figures: The kinds of paper figure drawn from its entry (`engine.report.figures.FIGURES`), in order:
            what `framesweep figures` writes and the report shows for it.
        annotations: matched frame -> GROUP, item_id[, budget_id], its per-item columns of the export.
        annotation_columns: Each annotation column's meaning (the export's datacard).
        higher_is_better: Whether larger values are better (None: not a score); in the document's ``metrics``.
        description: One line for the document's ``metrics`` and the docs.
    """

    name: str
    tables: Callable[[Inputs], dict[str, pl.LazyFrame]]
    document: Callable[[Any, Any], Any]
    scope: Scope = "group"
    keys: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    optional_inputs: tuple[str, ...] = ()
    features: Features | None = None
    score_features: ScoreFeatures | None = None
    derived: Derived | None = None
    rates: tuple[str, ...] = ()
    report: Callable[..., list[Any]] | None = None
    terminal: Callable[..., list[Any]] | None = None
    headline: Callable[[dict[str, Any]], Any] | None = None
    live: Live | None = None
    figures: tuple[str, ...] = ()
    annotations: Callable[[pl.LazyFrame], pl.LazyFrame] | None = None
    annotation_columns: Mapping[str, str] = field(default_factory=dict)
    higher_is_better: bool | None = None
    description: str = ""

    @property
    def group_keys(self) -> tuple[str, ...]:
        """The keys it fills in each group of the document (none for a dataset metric)."""
        return () if self.scope == "dataset" else (self.keys or (self.name,))


METRICS: Registry[Metric] = Registry("metric", describe=lambda m: where(m.tables))
"""Metric name -> the metric, in registration order (the document's order)."""


def register_metric(metric: Metric) -> Metric:
    """Register `metric` (a name registered twice is an error)."""
    METRICS.register(metric.name, metric)
    return metric


def registered_metrics(scope: Scope | None = None) -> list[Metric]:
    """Every registered metric (of `scope`, when given), in registration order."""
    return [m for m in METRICS.values() if scope is None or m.scope == scope]


def live_tables(rows: pl.LazyFrame) -> dict[str, pl.DataFrame]:
    """Every registered metric's live table over result `rows` (`Live.rows`), by name, in registration order."""
    return {m.name: m.live.rows(rows).collect() for m in registered_metrics("group") if m.live is not None}


def metric_list() -> list[dict[str, Any]]:
    """The document's ``metrics``: each registered metric's name, scope, keys, rates, direction and description."""
    return [{"name": m.name, "scope": m.scope, "keys": list(m.group_keys), "rates": list(m.rates),
             "higher_is_better": m.higher_is_better, "description": m.description} for m in registered_metrics()]
