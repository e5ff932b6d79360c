"""Compute every metric of a results dataset in one pass: the tables behind `framesweep metrics`.

`summary_tables` snapshots the rows once (so a sweep that is still writing is read
consistently), builds every metric lazily from that snapshot and collects them
together. `engine.metrics.document.summary_document` turns the tables into the fixed
JSON shape.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import polars as pl

from engine.metrics.cascade import (
    cascade_curve,
    cascade_items,
    crossfit_match,
    fixed_cost,
    match_fixed,
    pareto_front,
)
from engine.metrics.confusion import visual_confusion
from engine.metrics.crossmodel import checkpoint_flows, cross_model_matched, matched_grid
from engine.metrics.flows import all_pair_flows, pair_flows, state_flows, transitions
from engine.metrics.generation import generation_oracle, score_regressions
from engine.metrics.grid import (
    BASE_GROUP,
    CATEGORY_COLUMNS,
    GROUP,
    budget_table,
    grid_summary,
    group_chunks,
    in_groups,
    matched,
    off_chain_budgets,
    restrict_protocols,
)
from engine.metrics.iso_compute import iso_compute_allocations, iso_compute_sets, iso_matched
from engine.metrics.options import SummaryOptions
from engine.metrics.oracle import fixed_accuracy, oracle
from engine.metrics.overwrite import text_overwrite
from engine.metrics.rates import rate_intervals, rate_table
from engine.metrics.registry import Inputs, registered_metrics
from engine.metrics.regression import alternate_rows, sampling_recovery, terminal_regressions
from engine.metrics.robustness import robustness
from engine.results.video_stats import STAT_COLUMNS

VIDEO_STAT_COLUMNS: list[str] = [f"video_{c}" for c in STAT_COLUMNS]
"""Each video's low-level statistics (`engine.results.video_stats.with_video_stats`): kept in the snapshot when
the rows have them."""

__all__ = ["SNAPSHOT_COLUMNS", "VIDEO_STAT_COLUMNS", "SummaryOptions", "load_rows", "registered_table", "summary_tables"]

log = logging.getLogger(__name__)

SNAPSHOT_COLUMNS: list[str] = [
    *BASE_GROUP, "item_id", "budget_id", "frames", "frames_sent", "max_pixels", "short_side", "min_pixels",
    "exact_pixels", "policy", "seed", "pipeline", "pixels_total", "status", "task_kind", "correct", "score",
    "confidence", "frame_indices",
    *CATEGORY_COLUMNS,
    "pred", "answer",
    # what the official scores read (engine.metrics.official): the benchmark and the items' scoring groups
    "dataset_version", "group_id", "group_size", "group_type", "group_structure",
]


def load_rows(out_dir: str | Path) -> pl.LazyFrame:
    """One row per key of a results directory's own sweep (safe while a sweep writes to it), with each video's
    low-level statistics as ``video_<name>`` columns (`engine.results.video_stats`; null where there are none)."""
    from engine.results.store import own_rows
    from engine.results.video_stats import scan_video_stats, with_video_stats

    return with_video_stats(own_rows(out_dir)[0], scan_video_stats(out_dir))  # with each video's statistics


def _correct_tables(m: pl.LazyFrame, alt: pl.LazyFrame, opts: SummaryOptions) -> dict[str, pl.LazyFrame]:
    pairs = all_pair_flows(m) if opts.pairs is None else pair_flows(m, opts.pairs)
    return {
        "fixed": fixed_accuracy(m), "oracle": oracle(m), "transitions": transitions(m), "pairs": pairs,
        "flows": state_flows(m), "confusion": visual_confusion(m), "overwrite": text_overwrite(m),
        "terminal": terminal_regressions(m), "recovery": sampling_recovery(m, alt),
    }


def _score_tables(ms: pl.LazyFrame, opts: SummaryOptions) -> dict[str, pl.LazyFrame]:
    return {"gen_fixed": fixed_accuracy(ms, value="s"), "gen_oracle": generation_oracle(ms),
            "gen_regressions": score_regressions(ms, eps=opts.eps)}


def _category_tables(m: pl.LazyFrame, alt: pl.LazyFrame, ms: pl.LazyFrame,
                     opts: SummaryOptions) -> dict[str, pl.LazyFrame]:
    out = {}
    for col in opts.categories:
        by = [*GROUP, col]
        counts = pl.concat([m.select([*by, "item_id"]), ms.select([*by, "item_id"])]).group_by(by).agg(
            pl.col("item_id").n_unique().cast(pl.Int64).alias("n_items"))
        out[f"cat_n:{col}"] = counts.filter(pl.col(col).is_not_null()).sort(by)
        out[f"cat_rates:{col}"] = rate_table(m, alt=alt, m_score=ms, by=by, eps=opts.eps).filter(
            pl.col(col).is_not_null())
    return out


CASCADE_CHUNK_ROWS = 250_000
"""The cascade is simulated for groups of (model, dataset, protocol) holding about this many stage rows at
a time: its item-by-tau tables are the largest of the audit, so their memory follows a chunk, not the
dataset. Every cascade table is group-local, so the chunks give exactly the tables of one pass."""


def _cascade_tables(snap: pl.LazyFrame, m: pl.LazyFrame, opts: SummaryOptions) -> dict[str, pl.LazyFrame]:
    engine = _engine(opts)
    if opts.cascade_stages is None:
        stages_df = all_df = m.filter(~pl.col("is_text")).collect(engine=engine)
    else:
        budgets = [*opts.cascade_stages, *([opts.cascade_match] if opts.cascade_match else [])]
        all_df = matched(snap, budgets=budgets).collect(engine=engine)
        stages_df = all_df.filter(pl.col("budget_id").is_in(list(opts.cascade_stages)))
    parts: dict[str, list[pl.DataFrame]] = {"curve": [], "crossfit": [], "folds": [], "fixed": []}
    for keys in group_chunks([stages_df], CASCADE_CHUNK_ROWS):
        stages_m = in_groups(stages_df.lazy(), keys)
        all_m = stages_m if all_df is stages_df else in_groups(all_df.lazy(), keys)
        # each item's outcome per tau, computed once: the curve and cross-fitting read it
        outcomes = cascade_items(stages_m, opts.taus).collect(engine=engine).lazy()
        crossfit, folds = crossfit_match(stages_m, all_m, opts.cascade_match, opts.taus, k=opts.cascade_folds,
                                         seed=opts.seed, outcomes=outcomes)
        got = pl.collect_all([cascade_curve(stages_m, opts.taus, outcomes=outcomes), crossfit, folds,
                              fixed_cost(all_m, opts.cascade_match)], engine=engine)
        for name, frame in zip(parts, got, strict=True):
            parts[name].append(frame)
    curve = pl.concat(parts["curve"]).sort([*GROUP, "tau"]).lazy()
    return {
        "cascade_stages": stages_df.lazy().group_by([*GROUP, "budget_id"]).agg(pl.col("rank").first())
        .sort([*GROUP, "rank"]),
        "cascade_curve": curve,
        "cascade_front": pareto_front(curve),
        "cascade_front_unique": pareto_front(curve, cost="mean_unique_frames"),
        "cascade_match": match_fixed(curve, pl.concat(parts["fixed"]).sort(GROUP).lazy()),
        "cascade_crossfit": pl.concat(parts["crossfit"]).sort(GROUP).lazy(),
        "cascade_crossfit_folds": pl.concat(parts["folds"]).sort([*GROUP, "fold"]).lazy(),
    }


def _cross_tables(snap: pl.LazyFrame, opts: SummaryOptions) -> dict[str, pl.LazyFrame]:
    cm = cross_model_matched(snap).collect(engine=_engine(opts)).lazy()
    out = {
        "cross_grid": matched_grid(snap), "cross_fixed": fixed_accuracy(cm), "cross_oracle": oracle(cm),
        "cross_confusion": visual_confusion(cm),
    }
    if opts.compare is not None:
        out["checkpoint_flows"] = checkpoint_flows(snap, *opts.compare)
    return out


def _engine(opts: SummaryOptions) -> Any:
    return opts.engine


def registered_table(metric: str, table: str) -> str:
    """The name under which a registered metric's table is collected (``metric:table``)."""
    return f"{metric}:{table}"


def summary_tables(rows: pl.LazyFrame, opts: SummaryOptions | None = None) -> dict[str, pl.DataFrame]:
    """Every metric table of a results dataset, collected together from one snapshot.

    Args:
        rows: One row per key (e.g. `load_rows`).
        opts: What to compute.

    Returns:
        Named DataFrames (grid, grid_score, budgets, fixed, oracle, transitions, pairs, flows,
        confusion, overwrite, terminal, recovery, iso_sets, iso_allocations, patterns, gen_*,
        cat_n:<col>, cat_rates:<col>, cascade_*, cross_*, intervals, ...).
    """
    opts = opts or SummaryOptions()
    engine: Any = opts.engine
    names = rows.collect_schema().names()
    stats = [c for c in VIDEO_STAT_COLUMNS if c in names]  # each video's statistics, where joined (low_level)
    full = rows.select(*SNAPSHOT_COLUMNS, *stats).collect(engine=engine).lazy()
    snap = restrict_protocols(full, opts.protocols)
    m = matched(snap).collect(engine=engine).lazy()
    ms = matched(snap, track="score").collect(engine=engine).lazy()
    # a kept chain's alternates may be budgets of chains left out: its sampling recovery is the same
    alt = alternate_rows(full)
    if opts.protocols is not None:
        alt = alt.filter(pl.col("protocol_id").is_in(list(opts.protocols)))
    alt = alt.collect(engine=engine).lazy()
    mi = iso_matched(snap, opts.iso_tolerance).collect(engine=engine).lazy()
    plans = {
        "grid": grid_summary(snap), "grid_score": grid_summary(snap, track="score"),
        "budgets": budget_table(snap), "off_chain": off_chain_budgets(snap),
        **_correct_tables(m, alt, opts), **_score_tables(ms, opts), **_category_tables(m, alt, ms, opts),
        **_cascade_tables(snap, m, opts), **_cross_tables(snap, opts),
        "iso_sets": iso_compute_sets(mi), "iso_allocations": iso_compute_allocations(mi), "robustness": robustness(m),
    }
    inputs = Inputs(snapshot=snap, m=m, m_score=ms, alt=alt, opts=opts)
    for metric in registered_metrics():
        plans.update({registered_table(metric.name, k): v for k, v in metric.tables(inputs).items()})
    if opts.n_boot > 0:
        plans["intervals"] = rate_intervals(m, alt=alt, m_score=ms, n_boot=opts.n_boot, seed=opts.seed,
                                            level=opts.level, eps=opts.eps)
    # one table at a time: collected together, every table's intermediates would be alive at once (on 1.6M
    # rows a third more peak memory, for no time gained)
    frames = [plan.collect(engine=engine) for plan in plans.values()]
    log.info("computed %d metric tables", len(frames))
    return dict(zip(plans, frames, strict=True))
