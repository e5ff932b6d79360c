"""Rescue, harm, net and churn between two budgets of the matched grid.

For a transition g -> h over n matched items: rescue R = #{c(g)=0, c(h)=1},
harm H = #{c(g)=1, c(h)=0}, net = (R - H)/n, churn = (R + H)/n. `state_flows` adds the
two stay counts, which the report's flow (Sankey) figure draws.

Registered as the metric ``transitions`` (group keys ``transitions``, ``pair_transitions``,
``flows``; rates ``rescue_rate``, ``harm_rate`` and their ``net``, ``churn``; report
``fig-transitions-N`` and ``fig-flow-N``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from engine.metrics.grid import BASE_GROUP, GROUP, matched
from engine.metrics.per_item import arrow, feature, pair_order, rate_of
from engine.metrics.registry import GroupRows, Inputs, Live, Metric, register_metric
from engine.metrics.sections import Block, Count, Delta, Figure, Rate, Table

__all__ = ["all_pair_flows", "pair_flows", "paired", "state_flows", "transitions"]

_SIDE = ["budget_id", "rank", "c", "s", "confidence"]


def paired(m: pl.LazyFrame, by: Sequence[str] = GROUP, *, consecutive: bool = False) -> pl.LazyFrame:
    """Each item's outcomes at g and h side by side, for every pair g < h (or consecutive ones).

    Returns:
        *by, item_id, from, to, rank_from, rank_to, c_from, c_to, s_from, s_to,
        confidence_from, confidence_to.
    """
    by = list(by)
    keys = [*by, "item_id"]

    def side(suffix: str) -> pl.LazyFrame:
        names = {"budget_id": suffix, **{c: f"{c}_{suffix}" for c in _SIDE[1:]}}
        return m.select([*keys, *[pl.col(c).alias(names[c]) for c in _SIDE]])

    if consecutive:
        nxt = side("to").with_columns((pl.col("rank_to") - 1).alias("rank_from"))
        return side("from").join(nxt, on=[*keys, "rank_from"], how="inner", nulls_equal=True)
    joined = side("from").join(side("to"), on=keys, how="inner", nulls_equal=True)
    return joined.filter(pl.col("rank_to") > pl.col("rank_from"))


def _flow_counts(pairs: pl.LazyFrame, by: Sequence[str]) -> pl.LazyFrame:
    g, h = pl.col("c_from"), pl.col("c_to")
    return (
        pairs.group_by([*by, "from", "to"])
        .agg(
            pl.col("rank_from").first(), pl.col("rank_to").first(),
            (~g & h).sum().cast(pl.Int64).alias("rescue"),
            (g & ~h).sum().cast(pl.Int64).alias("harm"),
            (g & h).sum().cast(pl.Int64).alias("stay_correct"),
            (~g & ~h).sum().cast(pl.Int64).alias("stay_wrong"),
            pl.len().cast(pl.Int64).alias("n"),
        )
        .with_columns(
            ((pl.col("rescue") - pl.col("harm")) / pl.col("n")).alias("net"),
            ((pl.col("rescue") + pl.col("harm")) / pl.col("n")).alias("churn"),
        )
        .sort([*by, "rank_from", "rank_to"])
    )


_OUT = ["from", "to", "rescue", "harm", "n", "net", "churn"]


def transitions(m: pl.LazyFrame, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Rescue, harm, net and churn for each consecutive pair of the grid.

    Returns:
        *by, from, to, rescue, harm, n, net, churn; in grid order.
    """
    by = list(by)
    return _flow_counts(paired(m, by, consecutive=True), by).select([*by, *_OUT])


def all_pair_flows(m: pl.LazyFrame, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Rescue, harm, net and churn for every pair g < h of the grid (same columns as `transitions`)."""
    by = list(by)
    return _flow_counts(paired(m, by), by).select([*by, *_OUT])


def pair_flows(m: pl.LazyFrame, pairs: Sequence[tuple[str, str]], by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Rescue, harm, net and churn for chosen (g, h) pairs, in either cost direction.

    Args:
        m: Matched long frame.
        pairs: (from budget id, to budget id) pairs; a pair not in a group's grid yields no row.
        by: Group keys.
    """
    by = list(by)
    wanted = pl.LazyFrame({"from": [p[0] for p in pairs], "to": [p[1] for p in pairs]},
                          schema={"from": pl.String, "to": pl.String})
    both = paired(m, by).join(wanted, on=["from", "to"], how="semi")
    swapped = (
        paired(m, by)
        .rename({"from": "to", "to": "from", "rank_from": "rank_to", "rank_to": "rank_from",
                 "c_from": "c_to", "c_to": "c_from", "s_from": "s_to", "s_to": "s_from",
                 "confidence_from": "confidence_to", "confidence_to": "confidence_from"})
        .join(wanted, on=["from", "to"], how="semi")
    )
    return _flow_counts(pl.concat([both, swapped], how="diagonal"), by).select([*by, *_OUT])


def state_flows(m: pl.LazyFrame, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """Item-state flows between consecutive budgets (for the flow figure).

    Returns:
        *by, from, to, stay_correct, rescue, harm, stay_wrong, n.
    """
    by = list(by)
    return _flow_counts(paired(m, by, consecutive=True), by).select(
        [*by, "from", "to", "stay_correct", "rescue", "harm", "stay_wrong", "n"]
    )


def _tables(inputs: Inputs) -> dict[str, pl.LazyFrame]:
    m, pairs = inputs.m, inputs.opts.pairs
    return {"transitions": transitions(m), "pairs": all_pair_flows(m) if pairs is None else pair_flows(m, pairs),
            "flows": state_flows(m)}


def _flow(r: dict[str, Any]) -> dict[str, Any]:
    return {k: r[k] for k in ("from", "to", "rescue", "harm", "net", "churn")}


def _document(rows: GroupRows, opts: Any) -> dict[str, Any]:
    return {
        "transitions": [_flow(r) for r in rows("transitions")],
        "pair_transitions": [_flow(r) for r in rows("pairs")],
        "flows": [{k: r[k] for k in ("from", "to", "stay_correct", "rescue", "harm", "stay_wrong")}
                  for r in rows("flows")],
    }


def _features(m: pl.LazyFrame, alt: pl.LazyFrame | None, by: list[str]) -> pl.LazyFrame:
    steps = paired(m, by, consecutive=True)
    g, h = pl.col("c_from"), pl.col("c_to")
    return pl.concat([feature(steps, by, "rescue_rate", ~g & h, key=arrow(), korder=pair_order()),
                      feature(steps, by, "harm_rate", g & ~h, key=arrow(), korder=pair_order())],
                     how="vertical_relaxed")


def _derived(rates: pl.LazyFrame, by: list[str]) -> list[pl.LazyFrame]:
    steps = rates.group_by([*by, "key", "korder"]).agg(
        rate_of("rescue_rate").first().alias("_r"), rate_of("harm_rate").first().alias("_h"),
        (pl.col("metric") == "rescue_rate").any().alias("_step"),
    ).filter(pl.col("_step"))
    net_churn = steps.with_columns((pl.col("_r") - pl.col("_h")).alias("net"),
                                   (pl.col("_r") + pl.col("_h")).alias("churn"))
    return [net_churn.unpivot(index=[*by, "key", "korder"], on=["net", "churn"], variable_name="metric",
                              value_name="value")]


def _report(g: dict[str, Any], idx: int) -> list[Block]:
    if not g["n_items"]:
        return []
    return [Figure(f"fig-transitions-{idx}", "Rescue and harm per transition"),
            Figure(f"fig-flow-{idx}", "Item flows across the grid")]


def live_transitions(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Churn between consecutive budgets over the items answered at every budget so far (`transitions` of the
    matched rows), with ``accuracy_to`` at the later budget; chains with ``default`` first, each in its order."""
    m = matched(rows)
    acc = m.group_by([*GROUP, "budget_id"]).agg(pl.col("c").mean().alias("accuracy_to"))
    return (
        transitions(m)  # in chain order; the join keeps it
        .join(acc.rename({"budget_id": "to"}), on=[*GROUP, "to"], how="left", maintain_order="left")
        .with_row_index("_order")
        .sort([*BASE_GROUP, pl.col("protocol_id") != "default", "protocol_id", "_order"])
        .drop("_order")
    )


def _live_blocks(rows: list[dict[str, Any]]) -> list[Block]:
    return [Table("", ["from", "to", "n", "rescue", "harm", "net", "churn", "acc(to)"],
                  [[r["from"], r["to"], Count(r["n"]), Count(r["rescue"]), Count(r["harm"]), Delta(r["net"]),
                    Rate(r["churn"]), Rate(r["accuracy_to"])] for r in rows],
                  title="rescue / harm per transition (rates in points)")]


def _terminal(g: dict[str, Any]) -> list[Block]:
    rows: list[list[object]] = [[r["from"], r["to"], Count(r["rescue"]), Count(r["harm"]), Delta(r["net"]),
                                 Rate(r["churn"])] for r in g["transitions"]]
    return [Table("", ["from", "to", "rescue", "harm", "net", "churn"], rows,
                  title="rescue / harm per transition (net and churn in points)")]


register_metric(Metric(
    name="transitions",
    figures=("transitions", "flows"),
    keys=("transitions", "pair_transitions", "flows"),
    tables=_tables,
    document=_document,
    features=_features,
    derived=_derived,
    rates=("rescue_rate", "harm_rate", "net", "churn"),
    report=_report,
    terminal=_terminal,
    live=Live(live_transitions, _live_blocks),
    description="rescue, harm, net and churn between consecutive budgets and chosen pairs; item state flows",
))
