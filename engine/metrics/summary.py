"""Compute every metric of a results dataset in one pass: the tables behind `framesweep metrics`.

`summary_tables` snapshots the rows once (so a sweep that is still writing is read
consistently), builds the shared inputs (`engine.metrics.registry.Inputs`) and every
registered metric's tables lazily from that snapshot, and collects them two at a time.
`engine.metrics.document.summary_document` turns the tables into the fixed JSON shape.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import polars as pl

from engine.metrics.grid import (
    BASE_GROUP,
    CATEGORY_COLUMNS,
    budget_table,
    grid_summary,
    matched,
    off_chain_budgets,
    restrict_protocols,
)
from engine.metrics.options import SummaryOptions
from engine.metrics.registry import Inputs, registered_metrics, registered_table
from engine.metrics.regression import alternate_rows
from engine.results.directory import ResultsDir
from engine.results.video_stats import STAT_COLUMNS

__all__ = ["BASE_COLUMNS", "SNAPSHOT_COLUMNS", "VIDEO_STAT_COLUMNS", "SummaryOptions", "load_rows",
           "registered_table", "snapshot_columns", "summary_tables"]

log = logging.getLogger(__name__)

TABLE_WORKERS = 2
"""Metric tables computed side by side (`summary_tables`)."""

VIDEO_STAT_COLUMNS: list[str] = [f"video_{c}" for c in STAT_COLUMNS]
"""Each video's low-level statistics (`engine.results.video_stats.with_video_stats`)."""

BASE_COLUMNS: list[str] = [
    *BASE_GROUP, "item_id", "budget_id", "frames", "frames_sent", "max_pixels", "short_side", "min_pixels",
    "exact_pixels", "policy", "seed", "pipeline", "pixels_total", "status", "task_kind", "correct", "score",
    "confidence", "frame_indices", *CATEGORY_COLUMNS,
]
"""What the chains, the matched frames and the alternate rows read."""


def snapshot_columns(names: list[str] | None = None) -> list[str]:
    """The base columns, then every registered metric's ``inputs`` and (of `names`, the rows' columns) its
    ``optional_inputs``, each once."""
    extra = [c for m in registered_metrics() for c in m.inputs]
    if names is not None:
        extra += [c for m in registered_metrics() for c in m.optional_inputs if c in names]
    return list(dict.fromkeys([*BASE_COLUMNS, *extra]))


SNAPSHOT_COLUMNS: list[str] = snapshot_columns()
"""The snapshot of the built-in metrics (`engine.metrics` registers them before this module loads)."""


def load_rows(out_dir: str | Path | ResultsDir) -> pl.LazyFrame:
    """One row per key of a results directory's own sweep (`ResultsDir.rows`; safe while a sweep writes to it),
    with each video's low-level statistics as ``video_<name>`` columns (`engine.results.video_stats`; null where
    there are none)."""
    from engine.results.video_stats import scan_video_stats, with_video_stats

    results = ResultsDir.of(out_dir)
    return with_video_stats(results.rows(), scan_video_stats(results.path))  # with each video's statistics


def _inputs(rows: pl.LazyFrame, opts: SummaryOptions) -> Inputs:
    """The snapshot and the frames every metric shares, each materialized once."""
    engine: Any = opts.engine
    full = rows.select(snapshot_columns(rows.collect_schema().names())).collect(engine=engine).lazy()
    snap = restrict_protocols(full, opts.protocols)
    # a kept chain's alternates may be budgets of chains left out: its sampling recovery is the same
    alt = alternate_rows(full)
    if opts.protocols is not None:
        alt = alt.filter(pl.col("protocol_id").is_in(list(opts.protocols)))
    return Inputs(snapshot=snap, m=matched(snap).collect(engine=engine).lazy(),
                  m_score=matched(snap, track="score").collect(engine=engine).lazy(),
                  alt=alt.collect(engine=engine).lazy(), opts=opts)


def _shared_tables(inputs: Inputs) -> dict[str, pl.LazyFrame]:
    """The chains every group of the document is built on (not a metric's: read by all)."""
    snap = inputs.snapshot
    return {"grid": grid_summary(snap, m=inputs.m), "grid_score": grid_summary(snap, track="score", m=inputs.m_score),
            "budgets": budget_table(snap), "off_chain": off_chain_budgets(snap)}


def summary_tables(rows: pl.LazyFrame, opts: SummaryOptions | None = None) -> dict[str, pl.DataFrame]:
    """Every metric table of a results dataset, collected from one snapshot.

    Args:
        rows: One row per key (e.g. `load_rows`).
        opts: What to compute.

    Returns:
        Named DataFrames: the shared ``grid``, ``grid_score``, ``budgets``, ``off_chain``, then each
        registered metric's tables as ``<metric>:<table>``.
    """
    opts = opts or SummaryOptions()
    inputs = _inputs(rows, opts)
    metrics = registered_metrics()

    def collect(plan: pl.LazyFrame) -> pl.DataFrame:
        return plan.collect(engine=opts.engine)

    # TABLE_WORKERS tables at a time, not all of them: collected together, every table's intermediates would
    # be alive at once (on 1.6M rows a third more peak memory). Much of a table's plan runs on one core (and
    # the cascade's and the cross-model tables are computed as their plans are built), so two side by side
    # keep both cores of a small machine busy. Each table is the same whatever runs beside it.
    pool = ThreadPoolExecutor(max_workers=TABLE_WORKERS, thread_name_prefix="metrics")
    try:
        built = [pool.submit(metric.tables, inputs) for metric in metrics]
        futures = {name: pool.submit(collect, plan) for name, plan in _shared_tables(inputs).items()}
        for metric, tables in zip(metrics, built, strict=True):
            futures.update({registered_table(metric.name, k): pool.submit(collect, v)
                            for k, v in tables.result().items()})
        frames = {name: f.result() for name, f in futures.items()}
    finally:  # on an error or an interrupt the tables not started are dropped, not computed
        pool.shutdown(wait=True, cancel_futures=True)
    log.info("computed %d metric tables", len(frames))
    return frames
