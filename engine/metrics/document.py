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
        <name>: ...,                               # every metric of engine.metrics.registry, by its name
        confidence_intervals: {metric: [lo, hi] | {key: [lo, hi]}},    # paired bootstrap over items
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
     checkpoint_flows: [{dataset, base, other, budget_id, rescue, harm, n, net, churn}]}

Metric names and keys of ``categories[*].rates`` and ``confidence_intervals`` are
those of `engine.metrics.rates` (keys: budget ids, ``g->h`` pairs, ``any``/``all``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

import polars as pl

from engine.metrics.grid import GROUP
from engine.metrics.registry import registered_metrics
from engine.metrics.summary import SummaryOptions, registered_table

__all__ = ["SCHEMA", "summary_document"]

SCHEMA = "framesweep.metrics/2"
Key = tuple[str, ...]
_NO_OPTIONS = {"max_pixels": None, "short_side": None, "min_pixels": None, "exact_pixels": None, "policy": "uniform",
               "seed": 0, "pipeline": "raw"}


class _Tables:
    """Collected tables, indexed by (model_id, dataset, protocol_id)."""

    def __init__(self, tables: dict[str, pl.DataFrame]) -> None:
        self._t = tables
        self._parts: dict[str, dict[Key, list[dict[str, Any]]]] = {}

    def rows(self, name: str, key: Key) -> list[dict[str, Any]]:
        if name not in self._parts:
            df = self._t.get(name)
            parts: dict[Key, list[dict[str, Any]]] = {}
            if df is not None and not df.is_empty() and all(c in df.columns for c in GROUP):
                for k, part in df.partition_by(GROUP, as_dict=True, maintain_order=True).items():
                    parts[tuple(str(v) for v in k)] = part.drop(GROUP).to_dicts()
            self._parts[name] = parts
        return self._parts[name].get(key, [])

    def one(self, name: str, key: Key) -> dict[str, Any] | None:
        rows = self.rows(name, key)
        return rows[0] if rows else None

    def frame(self, name: str) -> pl.DataFrame | None:
        return self._t.get(name)


def _flow(r: dict[str, Any]) -> dict[str, Any]:
    return {k: r[k] for k in ("from", "to", "rescue", "harm", "net", "churn")}


def _nest(rows: Iterable[dict[str, Any]], value: str | tuple[str, str]) -> dict[str, Any]:
    """metric -> value (single) or {key: value}, from tidy (metric, key, ...) rows."""
    out: dict[str, Any] = {}
    for r in rows:
        v = [r[value[0]], r[value[1]]] if isinstance(value, tuple) else r[value]
        if r["key"] == "":
            out[r["metric"]] = v
        else:
            out.setdefault(r["metric"], {})[r["key"]] = v
    return out


def _overwrite(rows: list[dict[str, Any]], has_text: bool) -> dict[str, Any] | None:
    if not rows:  # no text budget: undefined; text budget only: nothing to overwrite it
        return {"n_text_correct": None, "any": None, "all": None, "by_budget": {}} if has_text else None

    def shares(r: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if r is None else {"share_all": r["share_all"], "share_text_correct": r["share_text_correct"]}

    scoped = {r["scope"]: r for r in rows if r["scope"] != "budget"}
    by_budget = {r["budget_id"]: shares(r) for r in rows if r["scope"] == "budget"}
    first = rows[0]
    return {"n_text_correct": first["n_text_correct"], "any": shares(scoped.get("any")),
            "all": shares(scoped.get("all")), "by_budget": by_budget}


def _terminal(t: _Tables, key: Key) -> dict[str, Any] | None:
    term = t.one("terminal", key)
    if term is None:
        return None
    rec = [{"alt_budget_id": r["alt_budget_id"], "n_with_alt": r["n_with_alt"], "n_missing_alt": r["n_missing_alt"],
            "n_recovered": r["n_recovered"], "share": r["sampling_recovery"],
            "share_with_alt": r["sampling_recovery_with_alt"]} for r in t.rows("recovery", key)]
    return {"max_budget": term["max_budget"], "n_terminal": term["n_terminal"], "share": term["terminal_regression"],
            "sampling_recovery": rec}


def _generation(t: _Tables, key: Key, opts: SummaryOptions) -> dict[str, Any] | None:
    grid = t.one("grid_score", key)
    if grid is None:
        return None
    orc = t.one("gen_oracle", key)
    return {
        "grid": grid["grid"], "n_items": grid["n_items"], "n_excluded": grid["n_excluded"], "eps": opts.eps,
        "mean_score": {r["budget_id"]: r["accuracy"] for r in t.rows("gen_fixed", key)},
        "best_fixed": {"budget_id": orc["best_budget"], "score": orc["best_score"]} if orc else None,
        "oracle_score": orc["oracle_score"] if orc else None, "oracle_gap": orc["oracle_gap"] if orc else None,
        "regressions": [{"from": r["from"], "to": r["to"], "n_regressed": r["n_regressed"],
                         "share": r["regression_share"]} for r in t.rows("gen_regressions", key)],
    }


def _iso(t: _Tables) -> list[dict[str, Any]]:
    sets, allocs = t.frame("iso_sets"), t.frame("iso_allocations")
    if sets is None or allocs is None:
        return []
    keys = ("budget_id", "protocol_id", "frames", "budget_cost", "accuracy", "n_best", "n_sole_best")
    out = []
    for s in sets.to_dicts():
        mine = allocs.filter((pl.col("model_id") == s["model_id"]) & (pl.col("dataset") == s["dataset"])
                             & (pl.col("cost") == s["cost"]))
        out.append({**{k: v for k, v in s.items() if k != "allocations"},
                    "allocations": [{k: a[k] for k in keys} for a in mine.to_dicts()]})
    return out


def _robustness(t: _Tables) -> list[dict[str, Any]]:
    pairs = t.frame("robustness")
    return [] if pairs is None else pairs.to_dicts()


def _categories(t: _Tables, key: Key, opts: SummaryOptions) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for col in opts.categories:
        rates = t.rows(f"cat_rates:{col}", key)
        values = t.rows(f"cat_n:{col}", key)
        if values:
            out[col] = [{"value": v[col], "n_items": v["n_items"],
                         "rates": _nest((r for r in rates if r[col] == v[col]), "value")} for v in values]
    return out


def _cascade(t: _Tables, key: Key) -> dict[str, Any] | None:
    curve = t.rows("cascade_curve", key)
    if not curve:
        return None
    cols = ("tau", "n_items", "accuracy", "mean_frames", "mean_unique_frames", "mean_stages")
    match = t.one("cascade_match", key)
    crossfit = t.one("cascade_crossfit", key)
    if crossfit is not None:
        crossfit["folds"] = [{c: r[c] for c in ("fold", "n_train", "n_heldout", "tau", "matched", "train_accuracy",
                                                  "train_fixed_accuracy", "heldout_accuracy")}
                             for r in t.rows("cascade_crossfit_folds", key)]
    return {
        "stages": [r["budget_id"] for r in t.rows("cascade_stages", key)],
        "curve": [{c: r[c] for c in cols} for r in curve],
        "pareto_front": [r["tau"] for r in t.rows("cascade_front", key)],
        "pareto_front_unique": [r["tau"] for r in t.rows("cascade_front_unique", key)],
        "match": {**match, "selection": "in_sample"} if match else None,
        "crossfit": {**crossfit, "selection": "out_of_sample"} if crossfit else None,
    }


def _correctness(t: _Tables, key: Key) -> dict[str, Any]:
    orc, vc = t.one("oracle", key), t.one("confusion", key)
    grid = t.one("grid", key)
    frames = {b["budget_id"]: b["frames"] for b in t.rows("budgets", key)}
    has_text = bool(grid and grid["n_items"] and any(frames.get(b) == 0 for b in grid["grid"]))
    return {
        "fixed_accuracy": {r["budget_id"]: r["accuracy"] for r in t.rows("fixed", key)},
        "best_fixed": {"budget_id": orc["best_budget"], "accuracy": orc["best_accuracy"]} if orc else None,
        "oracle_accuracy": orc["oracle_accuracy"] if orc else None,
        "oracle_headroom": orc["oracle_headroom"] if orc else None,
        "transitions": [_flow(r) for r in t.rows("transitions", key)],
        "pair_transitions": [_flow(r) for r in t.rows("pairs", key)],
        "flows": [{k: r[k] for k in ("from", "to", "stay_correct", "rescue", "harm", "stay_wrong")}
                  for r in t.rows("flows", key)],
        "visual_confusion": vc["visual_confusion"] if vc else None,
        "visual_confusion_visual_only": vc["visual_confusion_visual_only"] if vc else None,
        "text_overwrite": _overwrite(t.rows("overwrite", key), has_text),
    }


def _protocol(t: _Tables, key: Key) -> dict[str, Any]:
    """The chain's protocol: what its visual budgets share besides the frame count."""
    visual = [b for b in t.rows("budgets", key) if not b["is_text"]]
    return {k: visual[0][k] for k in _NO_OPTIONS} if visual else dict(_NO_OPTIONS)


def _primary(t: _Tables, keys: list[Key], wanted: str | None) -> dict[Key, str]:
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


def _off_grid(t: _Tables, key: Key) -> list[str]:
    off = t.frame("off_chain")
    if off is None:
        return []
    return off.filter((pl.col("model_id") == key[0]) & (pl.col("dataset") == key[1]))["budget_id"].to_list()


def _group(t: _Tables, key: Key, opts: SummaryOptions, primary: bool) -> dict[str, Any]:
    grid = t.one("grid", key) or {"grid": (t.one("grid_score", key) or {}).get("grid", []),
                                  "n_items": 0, "n_excluded": 0}
    return {
        "model_id": key[0], "dataset": key[1], "protocol_id": key[2], "protocol": _protocol(t, key),
        "primary": primary, "grid": grid["grid"],
        "off_grid": _off_grid(t, key),
        "budget_frames": {b["budget_id"]: b["frames"] for b in t.rows("budgets", key)},
        "n_items": grid["n_items"], "n_excluded": grid["n_excluded"],
        **_correctness(t, key),
        "terminal_regression": _terminal(t, key),
        "generation": _generation(t, key, opts),
        "categories": _categories(t, key, opts),
        "cascade": _cascade(t, key),
        **{m.name: m.document(functools.partial(_own_rows, t, m.name, key), opts) for m in registered_metrics()},
        "confidence_intervals": _nest(t.rows("intervals", key), ("lo", "hi")),
    }


def _own_rows(t: _Tables, metric: str, key: Key, table: str) -> list[dict[str, Any]]:
    return t.rows(registered_table(metric, table), key)


def _cross(t: _Tables) -> list[dict[str, Any]]:
    grids = t.frame("cross_grid")
    if grids is None:
        return []
    out = []
    for g in grids.filter(pl.col("models").list.len() >= 2).to_dicts():
        ds, models = g["dataset"], g["models"]
        proto = g["protocol_id"]
        per = {mid: t.one("cross_oracle", (mid, ds, proto)) for mid in models}
        vc = {mid: t.one("cross_confusion", (mid, ds, proto)) for mid in models}
        out.append({
            "dataset": ds, "protocol_id": proto, "models": models, "grid": g["grid"],
            "n_items": next((p["n_items"] for p in per.values() if p), 0),
            "fixed_accuracy": {mid: {r["budget_id"]: r["accuracy"] for r in t.rows("cross_fixed", (mid, ds, proto))}
                               for mid in models},
            "oracle_accuracy": {mid: p["oracle_accuracy"] if p else None for mid, p in per.items()},
            "oracle_headroom": {mid: p["oracle_headroom"] if p else None for mid, p in per.items()},
            "visual_confusion": {mid: v["visual_confusion"] if v else None for mid, v in vc.items()},
        })
    return out


def summary_document(tables: dict[str, pl.DataFrame], opts: SummaryOptions | None = None,
                     source: str | None = None) -> dict[str, Any]:
    """The metrics document (shape in the module docstring) from `summary_tables` output.

    Args:
        tables: `engine.metrics.summary.summary_tables` output.
        opts: The options the tables were computed with.
        source: The results directory, recorded as is.
    """
    opts = opts or SummaryOptions()
    t = _Tables(tables)
    keys: list[Key] = sorted({tuple(r.values()) for name in ("grid", "grid_score")
                              for r in tables[name].select(GROUP).to_dicts()})
    primary = _primary(t, keys, opts.primary_protocol)
    keys.sort(key=lambda k: (k[0], k[1], primary[k[:2]] != k[2], k[2]))
    flows = tables.get("checkpoint_flows")
    base, other = opts.compare or (None, None)
    return {
        "schema": SCHEMA, "source": source,
        "options": {"n_boot": opts.n_boot, "seed": opts.seed, "level": opts.level, "eps": opts.eps,
                    "taus": list(opts.taus), "pairs": [list(p) for p in opts.pairs] if opts.pairs else None,
                    "cascade_stages": list(opts.cascade_stages) if opts.cascade_stages else None,
                    "cascade_match": opts.cascade_match, "cascade_folds": opts.cascade_folds,
                    "protocols": list(opts.protocols) if opts.protocols else None,
                    "primary_protocol": opts.primary_protocol, "iso_tolerance": opts.iso_tolerance},
        "groups": [_group(t, k, opts, primary[k[:2]] == k[2]) for k in keys],
        "robustness": _robustness(t),
        "iso_compute": _iso(t),
        "cross_model": _cross(t),
        "checkpoint_flows": [{"dataset": r["dataset"], "base": base, "other": other,
                              **{k: v for k, v in r.items() if k not in ("dataset", "frames")}}
                             for r in (flows.to_dicts() if flows is not None else [])],
    }
