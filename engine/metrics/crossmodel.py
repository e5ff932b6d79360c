"""Comparisons across models: matched grids and flows between two checkpoints.

The matched grid of a dataset and protocol is the set of chain budgets every compared model has
results for (a model whose context cannot hold 256 frames has no such budget, so the
comparison stops below it). `cross_model_matched` restricts every model to that grid
and to the items complete for all of them, so each model's metrics are paired.

Registered as the dataset metrics ``cross_model`` (per dataset and protocol with two models or
more: each model's fixed accuracy, oracle, headroom and visual confusion on the matched grid)
and ``checkpoint_flows`` (rescue and harm from a base model to another at each shared budget,
when the options name the two: ``compare``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from engine.metrics.confusion import visual_confusion
from engine.metrics.grid import GROUP, budget_table, grid_budgets, matched
from engine.metrics.oracle import fixed_accuracy, oracle
from engine.metrics.registry import DatasetTables, Inputs, Metric, register_metric
from engine.metrics.sections import Block, Count, Heading, Note, Rate, Table

__all__ = ["checkpoint_flows", "cross_model_matched", "matched_grid"]

_CHAIN = ["dataset", "protocol_id"]


def matched_grid(rows: pl.LazyFrame, models: Sequence[str] | None = None) -> pl.LazyFrame:
    """Per dataset and protocol: the compared models and the chain budgets (cost order) all of them support.

    Args:
        rows: One row per key.
        models: Models to compare (default: every model with rows for the dataset).

    Returns:
        dataset, protocol_id, models (sorted list), grid (budget ids in cost order; may be empty).
    """
    table = budget_table(rows)
    if models is not None:
        table = table.filter(pl.col("model_id").is_in(list(models)))
    present = table.group_by(_CHAIN).agg(pl.col("model_id").unique().sort().alias("models"))
    common = (
        table.group_by([*_CHAIN, "budget_id"])
        .agg(pl.col("model_id").n_unique().alias("_nm"), pl.col("frames").first(), pl.col("pixels").max())
        .join(present.with_columns(pl.col("models").list.len().alias("_n")), on=_CHAIN)
        .filter(pl.col("_nm") == pl.col("_n"))
        .group_by(_CHAIN)
        .agg(pl.col("budget_id").sort_by(pl.struct("frames", "pixels", "budget_id")).alias("grid"))
    )
    return (
        present.join(common, on=_CHAIN, how="left")
        .with_columns(pl.col("grid").fill_null(pl.lit([], dtype=pl.List(pl.String))))
        .sort(_CHAIN)
    )


def _whole_chains(rows: pl.LazyFrame, pairs: pl.LazyFrame) -> bool:
    """Whether every compared chain's budgets are exactly its matched grid's (`pairs`: GROUP, budget_id)."""
    chain = grid_budgets(rows).select(*GROUP, "budget_id").join(pairs.select(GROUP).unique(), on=GROUP, how="semi")
    on = [*GROUP, "budget_id"]
    return pl.concat([chain.join(pairs.select(on), on=on, how="anti"),
                      pairs.select(on).join(chain, on=on, how="anti")]).collect().is_empty()


def cross_model_matched(rows: pl.LazyFrame, models: Sequence[str] | None = None, *,
                        m: pl.LazyFrame | None = None) -> pl.LazyFrame:
    """The matched long frame of every compared model on its dataset's matched grid and common items.

    Args:
        rows: One row per key.
        models: Models to compare (default: all).
        m: ``matched(rows)`` when already computed: when every compared chain lies whole on its matched grid
            (each model ran every budget of the chain), its rows are the chains' rows of `m`, so they are taken
            from it instead of being matched again.

    Returns:
        The columns of `engine.metrics.grid.matched` (correctness track).
    """
    grids = matched_grid(rows, models).select(*_CHAIN, "models", pl.col("grid").alias("budget_id")).explode(
        "budget_id").drop_nulls("budget_id").collect().lazy()  # small, and read three times below
    pairs = grids.explode("models").rename({"models": "model_id"})
    if m is None or not _whole_chains(rows, pairs):
        # a chain cut by the matched grid: its items are matched over the grid's budgets only
        cells = pairs.select("model_id", "dataset", "budget_id").unique()
        m = matched(rows.join(cells, on=["model_id", "dataset", "budget_id"], how="semi"))
    m = m.join(pairs, on=[*GROUP, "budget_id"], how="semi").cache()  # read twice below
    n_models = grids.select(*_CHAIN, pl.col("models").list.len().alias("_n")).unique()
    common = (
        m.group_by([*_CHAIN, "item_id"]).agg(pl.col("model_id").n_unique().alias("_nm"))
        .join(n_models, on=_CHAIN).filter(pl.col("_nm") == pl.col("_n")).select(*_CHAIN, "item_id")
    )
    return m.join(common, on=[*_CHAIN, "item_id"], how="semi").sort([*GROUP, "item_id", "rank"])


def checkpoint_flows(rows: pl.LazyFrame, base: str, other: str, by: Sequence[str] = ()) -> pl.LazyFrame:
    """Rescue and harm going from model `base` to model `other` at each budget both ran.

    Rescue: base wrong, other right; harm: base right, other wrong; over the items both
    answered at that budget.

    Args:
        rows: One row per key.
        base: The reference model.
        other: The compared model.
        by: Extra split columns (categories such as ``task_type``); taken from the base's rows.

    Returns:
        dataset, *by, budget_id, frames, rescue, harm, n, net, churn; in cost order.
    """
    by = list(by)
    ok = rows.filter((pl.col("status") == "ok") & pl.col("correct").is_not_null())

    def side(model: str, name: str) -> pl.LazyFrame:
        return ok.filter(pl.col("model_id") == model).select(
            "dataset", "item_id", "budget_id", "frames", pl.col("pixels_total").fill_null(0), *by,
            pl.col("correct").alias(name))

    g, h = pl.col("c_base"), pl.col("c_other")
    return (
        side(base, "c_base").join(side(other, "c_other").drop("frames", "pixels_total", *by),
                                  on=["dataset", "item_id", "budget_id"])
        .group_by(["dataset", *by, "budget_id"])
        .agg(pl.col("frames").first(), pl.col("pixels_total").max().alias("_px"),
             (~g & h).sum().cast(pl.Int64).alias("rescue"), (g & ~h).sum().cast(pl.Int64).alias("harm"),
             pl.len().cast(pl.Int64).alias("n"))
        .with_columns(((pl.col("rescue") - pl.col("harm")) / pl.col("n")).alias("net"),
                      ((pl.col("rescue") + pl.col("harm")) / pl.col("n")).alias("churn"))
        .sort(["dataset", *by, "frames", "_px", "budget_id"], nulls_last=True)
        .select(["dataset", *by, "budget_id", "frames", "rescue", "harm", "n", "net", "churn"])
    )


def _cross_tables(inputs: Inputs) -> dict[str, pl.LazyFrame]:
    cm = cross_model_matched(inputs.snapshot, m=inputs.m).collect(engine=inputs.opts.engine).lazy()  # type: ignore[call-overload]
    return {"grid": matched_grid(inputs.snapshot), "fixed": fixed_accuracy(cm), "oracle": oracle(cm),
            "confusion": visual_confusion(cm)}


def _cross_entry(t: DatasetTables, g: dict[str, Any]) -> dict[str, Any]:
    ds, models, proto = g["dataset"], g["models"], g["protocol_id"]
    per = {mid: t.one("oracle", (mid, ds, proto)) for mid in models}
    vc = {mid: t.one("confusion", (mid, ds, proto)) for mid in models}
    return {
        "dataset": ds, "protocol_id": proto, "models": models, "grid": g["grid"],
        "n_items": next((p["n_items"] for p in per.values() if p), 0),
        "fixed_accuracy": {mid: {r["budget_id"]: r["accuracy"] for r in t.rows("fixed", (mid, ds, proto))}
                           for mid in models},
        "oracle_accuracy": {mid: p["oracle_accuracy"] if p else None for mid, p in per.items()},
        "oracle_headroom": {mid: p["oracle_headroom"] if p else None for mid, p in per.items()},
        "visual_confusion": {mid: v["visual_confusion"] if v else None for mid, v in vc.items()},
    }


def _cross_document(t: DatasetTables, opts: Any) -> list[dict[str, Any]]:
    grids = t.frame("grid")
    if grids is None:
        return []
    return [_cross_entry(t, g) for g in grids.filter(pl.col("models").list.len() >= 2).to_dicts()]


def _flows_tables(inputs: Inputs) -> dict[str, pl.LazyFrame]:
    compare = inputs.opts.compare
    return {} if compare is None else {"flows": checkpoint_flows(inputs.snapshot, *compare)}


def _flows_document(t: DatasetTables, opts: Any) -> list[dict[str, Any]]:
    flows = t.frame("flows")
    base, other = opts.compare or (None, None)
    return [{"dataset": r["dataset"], "base": base, "other": other,
             **{k: v for k, v in r.items() if k not in ("dataset", "frames")}}
            for r in (flows.to_dicts() if flows is not None else [])]


_CROSS_NOTE = ("each model on the budgets every compared model has (the matched grid) and the items all of them "
               "answered there, so the models are paired item by item; oracle: right at some budget of the grid")


def _cross_blocks(entries: list[dict[str, Any]], idx: int | None) -> list[Block]:
    """Per chain of a dataset: each compared model's accuracy per matched budget, oracle, headroom, confusion."""
    out: list[Block] = []
    for k, r in enumerate(entries):
        if not r["grid"]:
            continue
        rows = [[mid, Count(r["n_items"]), *(Rate(r["fixed_accuracy"][mid].get(b)) for b in r["grid"]),
                 Rate(r["oracle_accuracy"][mid]), Rate(r["oracle_headroom"][mid]), Rate(r["visual_confusion"][mid])]
                for mid in r["models"]]
        title = f"{r['dataset']}, chain {r['protocol_id']}: models on their matched grid"
        out.append(Table("" if idx is None else f"table-cross-model-{idx}-{k}",
                         ["model", "items", *r["grid"], "oracle", "headroom", "visual confusion"], rows, title=title))
    if not out:
        return []
    head = f"Across models on {entries[0]['dataset']}"
    return [Heading(head), Note(_CROSS_NOTE), *out] if idx is not None else [Heading(head), *out]


def _flows_blocks(entries: list[dict[str, Any]], idx: int | None) -> list[Block]:
    """Rescue and harm from the base model to the other, per budget both ran, on one dataset."""
    r0 = entries[0]
    rows = [[r["budget_id"], Count(r["n"]), Count(r["rescue"]), Count(r["harm"]), Rate(r["net"]), Rate(r["churn"])]
            for r in entries]
    head = f"From {r0['base']} to {r0['other']} on {r0['dataset']}: items rescued and harmed per budget"
    return [Heading(head), Table("" if idx is None else f"table-checkpoint-flows-{idx}",
                                 ["budget", "items", "rescue", "harm", "net", "churn"], rows)]


register_metric(Metric(
    name="cross_model",
    scope="dataset",
    tables=_cross_tables,
    document=_cross_document,
    report=_cross_blocks,
    terminal=lambda entries: _cross_blocks(entries, None),
    description="per dataset and protocol, each model's fixed accuracy, oracle, headroom and visual confusion on "
                "the budgets and items every model has",
))
register_metric(Metric(
    name="checkpoint_flows",
    scope="dataset",
    tables=_flows_tables,
    document=_flows_document,
    report=_flows_blocks,
    terminal=lambda entries: _flows_blocks(entries, None),
    description="rescue and harm from the base model to the other of the options' compare pair, at each shared "
                "budget",
))
