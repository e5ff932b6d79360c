"""The confidence cascade as a metric of the audit: simulated per group, a chunk of groups at a time.

The computation is `engine.metrics.cascade`; this module runs it over a sweep's groups and shapes
its document entry and sections. Registered as the metric ``cascade`` (``groups[].cascade``:
{stages, curve, pareto_front, pareto_front_unique, match (in sample), crossfit (out of sample)},
null without a visual stage; report ``fig-cascade-N`` and ``table-cascade-match-N``).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from engine.metrics.cascade import cascade_curve, cascade_items, crossfit_match, fixed_cost, match_fixed, pareto_front
from engine.metrics.grid import GROUP, group_chunks, in_groups, matched
from engine.metrics.registry import GroupRows, Inputs, Metric, register_metric
from engine.metrics.sections import Block, Delta, Figure, Note, Rate, Table, text

__all__ = ["CASCADE_CHUNK_ROWS"]

CASCADE_CHUNK_ROWS = 250_000
"""The cascade is simulated for groups of (model, dataset, protocol) holding about this many stage rows at
a time: its item-by-tau tables are the largest of the audit, so their memory follows a chunk, not the
dataset. Every cascade table is group-local, so the chunks give exactly the tables of one pass."""

_FOLD_FIELDS = ("fold", "n_train", "n_heldout", "tau", "matched", "train_accuracy", "train_fixed_accuracy",
                "heldout_accuracy")
_CURVE_FIELDS = ("tau", "n_items", "accuracy", "mean_frames", "mean_unique_frames", "mean_stages")


def _stage_frames(inputs: Inputs) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the stages' matched rows, those plus the fixed budget's), collected."""
    opts, engine = inputs.opts, inputs.opts.engine
    if opts.cascade_stages is None:
        stages_df = inputs.m.filter(~pl.col("is_text")).collect(engine=engine)  # type: ignore[call-overload]
        return stages_df, stages_df
    budgets = [*opts.cascade_stages, *([opts.cascade_match] if opts.cascade_match else [])]
    all_df = matched(inputs.snapshot, budgets=budgets).collect(engine=engine)  # type: ignore[call-overload]
    return all_df.filter(pl.col("budget_id").is_in(list(opts.cascade_stages))), all_df


def _chunk(stages_m: pl.LazyFrame, all_m: pl.LazyFrame, opts: Any) -> list[pl.DataFrame]:
    """[curve, crossfit, folds, fixed] of one chunk of groups."""
    # each item's outcome per tau, computed once: the curve and cross-fitting read it
    outcomes = cascade_items(stages_m, opts.taus).collect(engine=opts.engine).lazy()
    crossfit, folds = crossfit_match(stages_m, all_m, opts.cascade_match, opts.taus, k=opts.cascade_folds,
                                     seed=opts.seed, outcomes=outcomes)
    return pl.collect_all([cascade_curve(stages_m, opts.taus, outcomes=outcomes), crossfit, folds,
                           fixed_cost(all_m, opts.cascade_match)], engine=opts.engine)


def _rows_in(df: pl.DataFrame, keys: pl.DataFrame, engine: Any, whole: bool) -> pl.LazyFrame:
    """The rows of `df` in the groups `keys` (all of them when `whole`), collected."""
    return df.lazy() if whole else in_groups(df.lazy(), keys).collect(engine=engine).lazy()


def _tables(inputs: Inputs) -> dict[str, pl.LazyFrame]:
    stages_df, all_df = _stage_frames(inputs)
    parts: dict[str, list[pl.DataFrame]] = {"curve": [], "crossfit": [], "folds": [], "fixed": []}
    chunks = group_chunks([stages_df], CASCADE_CHUNK_ROWS)
    for keys in chunks:
        # each chunk's rows taken once (the plans below read them several times); one chunk is every row
        stages_m = _rows_in(stages_df, keys, inputs.opts.engine, whole=len(chunks) == 1)
        all_m = stages_m if all_df is stages_df else _rows_in(all_df, keys, inputs.opts.engine, whole=len(chunks) == 1)
        for name, frame in zip(parts, _chunk(stages_m, all_m, inputs.opts), strict=True):
            parts[name].append(frame)
    curve = pl.concat(parts["curve"]).sort([*GROUP, "tau"]).lazy()
    return {
        "stages": stages_df.lazy().group_by([*GROUP, "budget_id"]).agg(pl.col("rank").first()).sort([*GROUP, "rank"]),
        "curve": curve,
        "front": pareto_front(curve),
        "front_unique": pareto_front(curve, cost="mean_unique_frames"),
        "match": match_fixed(curve, pl.concat(parts["fixed"]).sort(GROUP).lazy()),
        "crossfit": pl.concat(parts["crossfit"]).sort(GROUP).lazy(),
        "crossfit_folds": pl.concat(parts["folds"]).sort([*GROUP, "fold"]).lazy(),
    }


def _document(rows: GroupRows, opts: Any) -> dict[str, Any] | None:
    curve = rows("curve")
    if not curve:
        return None
    match, crossfit = rows.one("match"), rows.one("crossfit")
    if crossfit is not None:
        crossfit["folds"] = [{c: r[c] for c in _FOLD_FIELDS} for r in rows("crossfit_folds")]
    return {
        "stages": [r["budget_id"] for r in rows("stages")],
        "curve": [{c: r[c] for c in _CURVE_FIELDS} for r in curve],
        "pareto_front": [r["tau"] for r in rows("front")],
        "pareto_front_unique": [r["tau"] for r in rows("front_unique")],
        "match": {**match, "selection": "in_sample"} if match else None,
        "crossfit": {**crossfit, "selection": "out_of_sample"} if crossfit else None,
    }


def _match_rows(c: dict[str, Any]) -> list[list[object]]:
    fit, ins = c.get("crossfit"), c.get("match")
    rows: list[list[object]] = []
    if fit:
        taus = ", ".join(f"{f['tau']:g}" for f in fit.get("folds", []) if f["tau"] is not None)
        rows.append([f"cascade, tau out of sample ({fit['k']}-fold cross-fitted: {taus})", Rate(fit["accuracy"]),
                     Rate(fit["accuracy_delta"]), Rate(fit["frames_saved"]), Rate(fit["unique_frames_saved"])])
        rows.append([f"fixed {fit['fixed_budget']}", Rate(fit["fixed_accuracy"]), "", "", ""])
    if ins:
        rows.append([f"cascade, tau in sample ({ins['tau']:g}; tuned on the items it is scored on)",
                     Rate(ins["accuracy"]), Rate(ins["accuracy"] - ins["fixed_accuracy"]), Rate(ins["frames_saved"]),
                     Rate(ins["unique_frames_saved"])])
    return rows


def _match_table(c: dict[str, Any], idx: int) -> list[Table | Note]:
    """The cascade matched to its fixed budget: tau chosen out of sample (cross-fitted) and in sample."""
    rows = _match_rows(c)
    if not rows:
        return [Note("no tau matches the fixed budget")]
    table = Table(f"table-cascade-match-{idx}", ["policy", "accuracy", "minus fixed (pts)", "frames processed saved",
                                                 "unique frames saved"], rows)
    return [table] if c.get("match") else [table, Note("in sample, no tau reaches the fixed budget")]


def _report(g: dict[str, Any], idx: int) -> list[Block]:
    c = g.get("cascade")
    return [Figure(f"fig-cascade-{idx}", "Confidence cascade", then=tuple(_match_table(c, idx)))] if c else []


def _terminal(g: dict[str, Any]) -> list[Block]:
    fit, casc = (g["cascade"] or {}).get("crossfit") or {}, (g["cascade"] or {}).get("match") or {}
    out: list[Block] = []
    if fit:
        out.append(Note(text(f"cascade vs {fit['fixed_budget']}, tau out of sample ({fit['k']}-fold): accuracy ",
                             Rate(fit["accuracy"]), " (", Delta(fit["accuracy_delta"]), " pts) with ",
                             Rate(fit["frames_saved"]), "% fewer frames processed, ", Rate(fit["unique_frames_saved"]),
                             "% fewer unique frames")))
    if casc:
        out.append(Note(text(f"  in sample (tau tuned on the same items): tau {casc['tau']}, accuracy ",
                             Rate(casc["accuracy"]), ", ", Rate(casc["frames_saved"]), "% fewer frames processed, ",
                             Rate(casc["unique_frames_saved"]), "% fewer unique frames")))
    return out


register_metric(Metric(
    name="cascade",
    figures=("cascade",),
    tables=_tables,
    document=_document,
    report=_report,
    terminal=_terminal,
    description="the confidence cascade simulated over the chain's visual stages: accuracy and frames per "
                "threshold, its Pareto fronts, and the threshold matching the dearest budget in and out of sample",
))
