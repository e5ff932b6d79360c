"""Iso-compute allocations: budgets that spend about the same pixels in different ways.

A budget's cost is the pixels it actually sent per item: the mean over its ok rows of
``frames_sent x width x height`` (``pixels_total``), not its nominal setting, so
``short_side`` and ``max_pixels`` budgets compare on what the model saw. Budgets are
compared across protocols (chains) of one model and dataset; text-only budgets and
adaptive runs take no part.

Sets: the visual budgets of a model and dataset, sorted by cost, split wherever a cost
exceeds the one before it by more than the tolerance (relative); within each run, the
budgets whose cost lies within the tolerance of the run's median form the set, which is
kept when it spans at least two frame counts (an *allocation* is a way of spending the
pixels; two budgets with the frames and pixels of one allocation, e.g. raw and cached, are
both listed). ``cost`` names the set: the run's median.

Per set, over the items with a usable result at every budget of it: each allocation's
accuracy, per item which allocations are best (right; when none is right all tie) and
the only best, the best single allocation (ties: fewer frames, then budget id) and the
oracle over the set's allocations.

Registered as the dataset metric ``iso_compute`` (top-level ``iso_compute``: one entry per set;
report ``table-iso-N-K`` and ``fig-iso-N-K``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from engine.metrics.grid import BASE_GROUP, budget_table, chain_rows, track_rows
from engine.metrics.registry import DatasetTables, Inputs, Metric, register_metric
from engine.metrics.sections import Block, Count, Figure, Heading, Note, Rate, Table, joined, text

__all__ = ["DEFAULT_TOLERANCE", "ISO_GROUP", "budget_costs", "iso_compute_allocations", "iso_compute_sets",
           "iso_matched", "iso_sets"]

DEFAULT_TOLERANCE = 0.03
ISO_GROUP: list[str] = [*BASE_GROUP, "cost"]
"""An iso-compute set: a model and dataset, and the set's median cost."""


def budget_costs(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Pixels actually sent per item at each visual chain budget.

    Returns:
        model_id, dataset, protocol_id, budget_id, frames, budget_cost (mean ``pixels_total`` of
        the ok rows; budgets without one are left out).
    """
    sent = (
        chain_rows(rows).filter((pl.col("frames") > 0) & (pl.col("status") == "ok"))
        .group_by([*BASE_GROUP, "budget_id"])
        .agg(pl.col("pixels_total").cast(pl.Float64).mean().alias("budget_cost"))
        .filter(pl.col("budget_cost") > 0)
    )
    return (
        budget_table(rows).filter(~pl.col("is_text"))
        .join(sent, on=[*BASE_GROUP, "budget_id"], how="inner")
        .select([*BASE_GROUP, "protocol_id", "budget_id", "frames", "budget_cost"])
        .sort([*BASE_GROUP, "budget_cost", "budget_id"])
    )


_ULP_SLACK = 1e-12
"""Added to the tolerance, so that a ratio at the tolerance, decimal-exactly, is within it."""


def iso_sets(costs: pl.LazyFrame, tolerance: float = DEFAULT_TOLERANCE) -> pl.LazyFrame:
    """The iso-compute sets of `budget_costs` (rule in the module docstring).

    Returns:
        model_id, dataset, cost (the median of the run the set was cut from, which names it),
        protocol_id, budget_id, frames, budget_cost.
    """
    if tolerance < 0:
        raise ValueError(f"iso-compute tolerance must be >= 0, got {tolerance}")
    # "within 3%" includes 3% exactly: 1030 / 1000 - 1 is 0.030000000000000027 in floating point
    tolerance += _ULP_SLACK
    ordered = costs.sort([*BASE_GROUP, "budget_cost", "budget_id"])
    jump = (pl.col("budget_cost") / pl.col("budget_cost").shift(1).over(BASE_GROUP) - 1 > tolerance).fill_null(True)
    runs = ordered.with_columns(jump.cast(pl.Int64).cum_sum().over(BASE_GROUP).alias("_run"))
    runs = runs.with_columns(pl.col("budget_cost").median().over([*BASE_GROUP, "_run"]).alias("cost"))
    members = runs.filter((pl.col("budget_cost") / pl.col("cost") - 1).abs() <= tolerance)
    return (
        members.filter(pl.col("frames").n_unique().over([*BASE_GROUP, "_run"]) >= 2)
        .select([*ISO_GROUP, "protocol_id", "budget_id", "frames", "budget_cost"])
        .sort([*ISO_GROUP, "frames", "budget_id"])
    )


def iso_matched(rows: pl.LazyFrame, tolerance: float = DEFAULT_TOLERANCE) -> pl.LazyFrame:
    """Correctness of the items complete at every budget of their iso-compute set.

    Returns:
        model_id, dataset, cost, item_id, protocol_id, budget_id, frames, budget_cost, c.
    """
    sets = iso_sets(budget_costs(rows), tolerance)
    n_set = sets.group_by(ISO_GROUP).agg(pl.len().alias("_nb"))
    usable = (pl.col("status") == "ok") & pl.col("correct").is_not_null() & (pl.col("frames") > 0)
    ok = (
        track_rows(rows, "correct").filter(usable)
        .select([*BASE_GROUP, "item_id", "budget_id", pl.col("correct").alias("c")])
        .join(sets, on=[*BASE_GROUP, "budget_id"], how="inner")
    )
    complete = (
        ok.group_by([*ISO_GROUP, "item_id"]).agg(pl.col("budget_id").n_unique().alias("_ni"))
        .join(n_set, on=ISO_GROUP).filter(pl.col("_ni") == pl.col("_nb")).select([*ISO_GROUP, "item_id"])
    )
    return (
        ok.join(complete, on=[*ISO_GROUP, "item_id"], how="semi")
        .select([*ISO_GROUP, "item_id", "protocol_id", "budget_id", "frames", "budget_cost", "c"])
        .sort([*ISO_GROUP, "item_id", "frames", "budget_id"])
    )


def iso_compute_allocations(mi: pl.LazyFrame, by: Sequence[str] = ISO_GROUP) -> pl.LazyFrame:
    """Per allocation of each iso-compute set: accuracy and how often it is (the only) best.

    Args:
        mi: `iso_matched` output.
        by: Set keys.

    Returns:
        *by, budget_id, protocol_id, frames, budget_cost, n_items, accuracy, n_best (items it answers
        right), n_sole_best (items only it answers right); ordered by frames, then budget id.
    """
    by = list(by)
    rows = mi.with_columns(pl.col("c").cast(pl.Int64).sum().over([*by, "item_id"]).alias("_right"))
    return (
        rows.group_by([*by, "budget_id"])
        .agg(pl.col("protocol_id").first(), pl.col("frames").first(), pl.col("budget_cost").first(),
             pl.len().cast(pl.Int64).alias("n_items"),
             pl.col("c").cast(pl.Float64).mean().alias("accuracy"),
             pl.col("c").sum().cast(pl.Int64).alias("n_best"),
             (pl.col("c") & (pl.col("_right") == 1)).sum().cast(pl.Int64).alias("n_sole_best"))
        .sort([*by, "frames", "budget_id"])
        .select([*by, "budget_id", "protocol_id", "frames", "budget_cost", "n_items", "accuracy", "n_best",
                 "n_sole_best"])
    )


def iso_compute_sets(mi: pl.LazyFrame, by: Sequence[str] = ISO_GROUP) -> pl.LazyFrame:
    """Per iso-compute set: best single allocation against the oracle over its allocations.

    Args:
        mi: `iso_matched` output.
        by: Set keys.

    Returns:
        *by, allocations (budget ids by frames), n_items, best_allocation, best_accuracy,
        oracle_accuracy, oracle_headroom, n_all_right, n_none_right.
    """
    by = list(by)
    per_item = mi.group_by([*by, "item_id"]).agg(pl.col("c").any().alias("_any"), pl.col("c").all().alias("_all"))
    items = per_item.group_by(by).agg(
        pl.len().cast(pl.Int64).alias("n_items"), pl.col("_any").cast(pl.Float64).mean().alias("oracle_accuracy"),
        pl.col("_all").sum().cast(pl.Int64).alias("n_all_right"),
        (~pl.col("_any")).sum().cast(pl.Int64).alias("n_none_right"))
    allocs = iso_compute_allocations(mi, by)
    best = (
        allocs.sort([*by, "accuracy", "frames", "budget_id"], descending=[*([False] * len(by)), True, False, False])
        .unique(subset=by, keep="first", maintain_order=True)
        .select([*by, pl.col("budget_id").alias("best_allocation"), pl.col("accuracy").alias("best_accuracy")])
    )
    names = allocs.group_by(by).agg(pl.col("budget_id").sort_by("frames", "budget_id").alias("allocations"))
    return (
        names.join(items, on=by, nulls_equal=True).join(best, on=by, nulls_equal=True)
        .with_columns((pl.col("oracle_accuracy") - pl.col("best_accuracy")).alias("oracle_headroom"))
        .select([*by, "allocations", "n_items", "best_allocation", "best_accuracy", "oracle_accuracy",
                 "oracle_headroom", "n_all_right", "n_none_right"])
        .sort(by)
    )


def _tables(inputs: Inputs) -> dict[str, pl.LazyFrame]:
    mi = iso_matched(inputs.snapshot, inputs.opts.iso_tolerance).collect(engine=inputs.opts.engine).lazy()
    return {"sets": iso_compute_sets(mi), "allocations": iso_compute_allocations(mi)}


_ALLOCATION = ("budget_id", "protocol_id", "frames", "budget_cost", "accuracy", "n_best", "n_sole_best")


def _document(t: DatasetTables, opts: Any) -> list[dict[str, Any]]:
    sets, allocs = t.frame("sets"), t.frame("allocations")
    if sets is None or allocs is None:
        return []
    out = []
    for s in sets.to_dicts():
        mine = allocs.filter((pl.col("model_id") == s["model_id"]) & (pl.col("dataset") == s["dataset"])
                             & (pl.col("cost") == s["cost"]))
        out.append({**{k: v for k, v in s.items() if k != "allocations"},
                    "allocations": [{k: a[k] for k in _ALLOCATION} for a in mine.to_dicts()]})
    return out


def _set_blocks(s: dict[str, Any], idx: int, k: int) -> list[Block]:
    rows = [[a["budget_id"], a["protocol_id"], a["frames"], Count(a["budget_cost"], thousands=True),
             Rate(a["accuracy"]), a["n_best"], a["n_sole_best"]] for a in s["allocations"]]
    note = text("~", Count(s["cost"], thousands=True), f" pixels sent per item, {s['n_items']} items answered at "
                f"every allocation; best single {s['best_allocation']} ", Rate(s["best_accuracy"]),
                ", oracle over the set ", Rate(s["oracle_accuracy"]), " (headroom ", Rate(s["oracle_headroom"]),
                f" pts); right at all {s['n_all_right']}, at none {s['n_none_right']}")
    return [Note(note), Table(f"table-iso-{idx}-{k}", ["allocation", "protocol", "frames", "pixels sent per item",
                                                       "accuracy", "items right", "items best only here"], rows),
            Figure(f"fig-iso-{idx}-{k}")]


def _report(sets: list[dict[str, Any]], idx: int) -> list[Block]:
    blocks = [b for k, s in enumerate(sets) for b in _set_blocks(s, idx, k)]
    return [Heading("Iso-compute allocations (pixels actually sent)"), *blocks] if blocks else []


def _terminal(sets: list[dict[str, Any]]) -> list[Block]:
    out: list[Block] = []
    for s in sets:
        allocs = joined(", ", (text(f"{a['budget_id']} ", Rate(a["accuracy"])) for a in s["allocations"]))
        out.append(Note(text(f"{s['model_id']} on {s['dataset']}: iso-compute at ~", Count(s["cost"], thousands=True),
                             f" pixels per item ({s['n_items']} items): ", allocs, "; oracle ",
                             Rate(s["oracle_accuracy"]), ", headroom ", Rate(s["oracle_headroom"]), " pts")))
    return out


register_metric(Metric(
    name="iso_compute",
    figures=("iso-compute",),
    scope="dataset",
    tables=_tables,
    document=_document,
    report=_report,
    terminal=_terminal,
    description="sets of budgets across chains that send about the same pixels per item: each allocation's "
                "accuracy, the items best only there, and the oracle over the set",
))
