"""The machine-readable metrics document (the JSON of ``framesweep metrics --json``).

Shape (``schema`` = ``"framesweep.metrics/2"``; every rate is a fraction in [0, 1],
differences such as net or headroom in [-1, 1]; a value that is undefined is null).
One group per (model_id, dataset, protocol_id): every per-group metric runs over the
group's chain (the text-only budget plus the protocol's budgets by frames; see
`engine.metrics.grid`). Within a model and dataset the primary chain comes first::

    {schema, source, options: {n_boot, seed, level, eps, taus, pairs, cascade_stages, cascade_match, cascade_folds,
                               protocols, primary_protocol, iso_tolerance},
     groups: [{
        model_id, dataset, protocol_id,
        protocol: {max_pixels, short_side, policy, seed, pipeline},   # what the chain's visual budgets share
        primary,                                   # true for the chain the report leads with
        grid: [the chain's budget ids in cost order], off_grid: [budgets of adaptive runs, on no chain],
        budget_frames: {budget_id: frames},
        n_items, n_excluded,                       # matched items / the model's other items on the dataset
                                                   # (missing a budget of the chain; the sum is every chain's)
        fixed_accuracy: {budget_id: acc}, best_fixed: {budget_id, accuracy},
        oracle_accuracy, oracle_headroom,
        transitions: [{from, to, rescue, harm, net, churn}],         # consecutive budgets
        pair_transitions: [{from, to, rescue, harm, net, churn}],    # chosen pairs (default: all g < h)
        flows: [{from, to, stay_correct, rescue, harm, stay_wrong}], # item states, consecutive
        visual_confusion, visual_confusion_visual_only,
        text_overwrite: {n_text_correct, any: {share_all, share_text_correct}, all: {...},
                         by_budget: {budget_id: {share_all, share_text_correct}}},   # null: no text budget
                                                                                     # or no matched item
        terminal_regression: {max_budget, n_terminal, share,   # wrong at max, right at a cheaper visual budget
                              sampling_recovery: [{alt_budget_id, n_with_alt, n_missing_alt, n_recovered,
                                                   share,            # over all terminal regressions
                                                   share_with_alt}]},  # over those with an alternate result
                                                   # alt_budget_id "any": recovered by at least one alternate
        generation: {grid, n_items, n_excluded, eps, mean_score: {budget_id: s}, best_fixed: {budget_id, score},
                     oracle_score, oracle_gap, regressions: [{from, to, n_regressed, share}]},   # null: no open items
        categories: {column: [{value, n_items, rates: {metric: value | {key: value}}}]},
        cascade: {stages, curve: [{tau, accuracy, mean_frames, mean_unique_frames, mean_stages}],
                  pareto_front: [tau], pareto_front_unique: [tau],
                  match: {selection: "in_sample", fixed_budget, fixed_accuracy, fixed_frames, tau, accuracy,
                          mean_frames, mean_unique_frames, frames_saved, unique_frames_saved},  # tau tuned on
                          # the items it is scored on (optimistic); null: no tau reaches the fixed budget
                  crossfit: {selection: "out_of_sample", k, fixed_budget, n_items, fixed_accuracy, fixed_frames,
                             fixed_unique_frames, accuracy, mean_frames, mean_unique_frames, frames_saved,
                             unique_frames_saved, accuracy_delta, n_folds_matched,
                             folds: [{fold, n_train, n_heldout, tau, matched, train_accuracy,
                                      train_fixed_accuracy, heldout_accuracy}]}},   # null: no visual stage
        trajectory_patterns: [{pattern, n}],       # "1"/"0" per grid budget, most frequent first
        letter_prior: {...}, low_level: {...}, official_scores: [...], trajectory_patterns: [...],
        confidence_intervals: {metric: [lo, hi] | {key: [lo, hi]}},    # paired bootstrap over items
        <key>: ...,                                # every other group metric of engine.metrics.registry
     }],
     robustness: [{model_id, dataset, protocol_a, protocol_b, n_items,     # items matched in both chains
                   frames_common,                                         # the frame counts both chains have
                   confused_a, confused_b, confused_both, jaccard,        # jaccard null when a + b = 0
                   harmed_a, harmed_b, harmed_both, headroom_a, headroom_b, confusion_rate_a, confusion_rate_b,
                                                  # over text-only + frames_common (null when it is empty)
                   <each of those eleven>_whole}],  # over the whole chains (engine.metrics.robustness)
     iso_compute: [{model_id, dataset, cost,       # cost: names the set, the median pixels sent per item of
                                                   # the run of costs it was cut from (engine.metrics.iso_compute)
                    allocations: [{budget_id, protocol_id, frames, budget_cost, accuracy, n_best, n_sole_best}],
                    n_items, best_allocation, best_accuracy, oracle_accuracy, oracle_headroom,
                    n_all_right, n_none_right}],   # across the chains (engine.metrics.iso_compute)
     cross_model: [{dataset, protocol_id, models, grid, n_items, fixed_accuracy: {model: {budget_id: acc}},
                    oracle_accuracy: {model: v}, oracle_headroom: {model: v}, visual_confusion: {model: v}}],
     checkpoint_flows: [{dataset, base, other, budget_id, rescue, harm, n, net, churn}],
     <name>: ...,                                  # every other dataset metric of engine.metrics.registry
     metrics: [{name, scope, keys, rates, higher_is_better, description}]}   # every registered metric

Every key after the group's header (model_id ... n_excluded) and every top-level key after
``groups`` is a registered metric's (`engine.metrics.registry`), in registration order: the
module that defines each says what its entry holds.

Metric names and keys of ``categories[*].rates`` and ``confidence_intervals`` are
those of `engine.metrics.rates` (keys: budget ids, ``g->h`` pairs, ``any``/``all``).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from engine.metrics.grid import GROUP
from engine.metrics.registry import DatasetTables, GroupRows, Metric, TableIndex, metric_list, registered_metrics
from engine.metrics.summary import SummaryOptions

__all__ = ["SCHEMA", "summary_document"]

SCHEMA = "framesweep.metrics/2"
Key = tuple[str, ...]
_NO_OPTIONS = {"max_pixels": None, "short_side": None, "min_pixels": None, "exact_pixels": None, "policy": "uniform",
               "seed": 0, "pipeline": "raw"}


def _protocol(t: TableIndex, key: Key) -> dict[str, Any]:
    """The chain's protocol: what its visual budgets share besides the frame count."""
    visual = [b for b in t.rows("budgets", key) if not b["is_text"]]
    return {k: visual[0][k] for k in _NO_OPTIONS} if visual else dict(_NO_OPTIONS)


def _primary(t: TableIndex, keys: list[Key], wanted: str | None) -> dict[Key, str]:
    """(model_id, dataset) -> its primary protocol: `wanted` where it has that chain, else the chain with
    the most visual budgets (ties: ``default``, then the fewest options, then by name)."""
    def rank(base: Key, p: str) -> tuple[int, bool, int, str]:
        n = sum(not b["is_text"] for b in t.rows("budgets", (*base, p)))
        return (-n, p != "default", p.count("-"), p)

    out: dict[Key, str] = {}
    for base in dict.fromkeys(k[:2] for k in keys):
        mine = [k[2] for k in keys if k[:2] == base]
        out[base] = wanted if wanted is not None and wanted in mine else min(
            mine, key=lambda p, base=base: rank(base, p))  # type: ignore[misc]
    return out


def _off_grid(t: TableIndex, key: Key) -> list[str]:
    off = t.frame("off_chain")
    if off is None:
        return []
    return off.filter((pl.col("model_id") == key[0]) & (pl.col("dataset") == key[1]))["budget_id"].to_list()


def _header(t: TableIndex, key: Key, primary: bool) -> dict[str, Any]:
    """The group's chain: what every metric of it is computed over."""
    grid = t.one("grid", key) or {"grid": (t.one("grid_score", key) or {}).get("grid", []),
                                  "n_items": 0, "n_excluded": 0}
    return {
        "model_id": key[0], "dataset": key[1], "protocol_id": key[2], "protocol": _protocol(t, key),
        "primary": primary, "grid": grid["grid"], "off_grid": _off_grid(t, key),
        "budget_frames": {b["budget_id"]: b["frames"] for b in t.rows("budgets", key)},
        "n_items": grid["n_items"], "n_excluded": grid["n_excluded"],
    }


def _entry(metric: Metric, t: TableIndex, key: Key, opts: SummaryOptions) -> dict[str, Any]:
    """A group metric's keys in the group: its value under its name, or the several keys it fills."""
    value = metric.document(GroupRows(t, metric.name, key), opts)
    if metric.keys:
        return {k: value[k] for k in metric.keys}
    return {metric.name: value}


def _group(t: TableIndex, key: Key, opts: SummaryOptions, primary: bool) -> dict[str, Any]:
    out = _header(t, key, primary)
    for metric in registered_metrics("group"):
        out.update(_entry(metric, t, key, opts))
    return out


def _options(opts: SummaryOptions) -> dict[str, Any]:
    return {"n_boot": opts.n_boot, "seed": opts.seed, "level": opts.level, "eps": opts.eps,
            "taus": list(opts.taus), "pairs": [list(p) for p in opts.pairs] if opts.pairs else None,
            "cascade_stages": list(opts.cascade_stages) if opts.cascade_stages else None,
            "cascade_match": opts.cascade_match, "cascade_folds": opts.cascade_folds,
            "protocols": list(opts.protocols) if opts.protocols else None,
            "primary_protocol": opts.primary_protocol, "iso_tolerance": opts.iso_tolerance}


def _groups(t: TableIndex, opts: SummaryOptions) -> list[dict[str, Any]]:
    """Every chain's group: by model and dataset, the primary chain first."""
    keys: list[Key] = sorted({tuple(r.values()) for name in ("grid", "grid_score")
                              for r in t.frame(name).select(GROUP).to_dicts()})  # type: ignore[union-attr]
    primary = _primary(t, keys, opts.primary_protocol)
    keys.sort(key=lambda k: (k[0], k[1], primary[k[:2]] != k[2], k[2]))
    return [_group(t, k, opts, primary[k[:2]] == k[2]) for k in keys]


def summary_document(tables: dict[str, pl.DataFrame], opts: SummaryOptions | None = None,
                     source: str | None = None) -> dict[str, Any]:
    """The metrics document (shape in the module docstring) from `summary_tables` output.

    Args:
        tables: `engine.metrics.summary.summary_tables` output.
        opts: The options the tables were computed with.
        source: The results directory, recorded as is.
    """
    opts = opts or SummaryOptions()
    t = TableIndex(tables)
    return {
        "schema": SCHEMA, "source": source, "options": _options(opts), "groups": _groups(t, opts),
        **{m.name: m.document(DatasetTables(t, m.name), opts) for m in registered_metrics("dataset")},
        "metrics": metric_list(),
    }
