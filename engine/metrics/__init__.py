"""Metrics over a results dataset: pure Polars functions over LazyFrames.

Start from `matched` (the matched long frame of a scan) and apply any metric; or get
everything at once with `summary_tables` + `summary_document` (the JSON of
``framesweep metrics``). Each module's docstring states its metric's definition exactly.

Every metric is registered (`engine.metrics.registry`) by its module when imported.
`METRIC_MODULES` loads the built-in ones first, in the order of the document's keys (a group's
keys, then the top-level ones); a new metric is one module and one line there.
"""

import importlib

METRIC_MODULES: tuple[str, ...] = (
    "oracle", "flows", "confusion", "overwrite", "regression", "generation", "categories", "cascade_metric",
    "letter_prior", "low_level", "official", "trajectories", "intervals",
    "robustness", "iso_compute", "crossmodel",
)
"""The modules of the built-in metrics (`engine.metrics.<name>`), in the order of the document's keys."""

for _name in METRIC_MODULES:
    importlib.import_module(f"engine.metrics.{_name}")

from engine.metrics.cascade import cascade_curve, cascade_items, fixed_cost, match_fixed, pareto_front
from engine.metrics.checkpoints import (
    checkpoint_document,
    checkpoint_table,
    checkpoint_tables,
    dataset_kinds,
    temporal_trap,
)
from engine.metrics.confusion import visual_confusion
from engine.metrics.crossmodel import checkpoint_flows, cross_model_matched, matched_grid
from engine.metrics.document import summary_document
from engine.metrics.flows import all_pair_flows, pair_flows, state_flows, transitions
from engine.metrics.generation import generation_oracle, score_regressions
from engine.metrics.grid import budget_table, chain_rows, grid_summary, matched, protocol_id
from engine.metrics.iso_compute import budget_costs, iso_compute_allocations, iso_compute_sets, iso_matched, iso_sets
from engine.metrics.letter_prior import letter_distribution, letter_prior
from engine.metrics.low_level import stat_tables
from engine.metrics.official import chain_scores
from engine.metrics.oracle import best_fixed, fixed_accuracy, oracle
from engine.metrics.overwrite import text_overwrite
from engine.metrics.predictor import evaluate_predictor, latest_predictions, predictor_document
from engine.metrics.rates import rate_intervals, rate_table
from engine.metrics.regression import alternate_rows, sampling_recovery, terminal_regressions
from engine.metrics.robustness import robustness
from engine.metrics.summary import SummaryOptions, load_rows, summary_tables
from engine.metrics.trajectories import trajectory_patterns, trajectory_table, trajectory_wide

__all__ = [
    "SummaryOptions",
    "all_pair_flows",
    "alternate_rows",
    "best_fixed",
    "budget_costs",
    "budget_table",
    "cascade_curve",
    "cascade_items",
    "chain_rows",
    "chain_scores",
    "checkpoint_document",
    "checkpoint_flows",
    "checkpoint_table",
    "checkpoint_tables",
    "cross_model_matched",
    "dataset_kinds",
    "evaluate_predictor",
    "fixed_accuracy",
    "fixed_cost",
    "generation_oracle",
    "grid_summary",
    "iso_compute_allocations",
    "iso_compute_sets",
    "iso_matched",
    "iso_sets",
    "latest_predictions",
    "letter_distribution",
    "letter_prior",
    "load_rows",
    "match_fixed",
    "matched",
    "matched_grid",
    "oracle",
    "pair_flows",
    "pareto_front",
    "predictor_document",
    "protocol_id",
    "rate_intervals",
    "rate_table",
    "robustness",
    "sampling_recovery",
    "score_regressions",
    "stat_tables",
    "state_flows",
    "summary_document",
    "summary_tables",
    "temporal_trap",
    "terminal_regressions",
    "text_overwrite",
    "trajectory_patterns",
    "trajectory_table",
    "trajectory_wide",
    "transitions",
    "visual_confusion",
]
