"""Every rate split by a category column (task type, category, duration).

Per group and value of each column of ``opts.categories``: the matched items of that value
(both tracks) and every rate of `engine.metrics.rates` over them, with the very definitions
of the whole group's rates (every registered metric's features).

Registered as the metric ``categories`` (``groups[].categories``: {column: [{value, n_items,
rates: {metric: value | {key: value}}}]}; report ``table-<column>-N``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import polars as pl

from engine.metrics.grid import GROUP
from engine.metrics.rates import rate_table
from engine.metrics.registry import GroupRows, Inputs, Metric, register_metric
from engine.metrics.sections import Block, Heading, Rate, Table, joined

__all__ = ["nest"]


def _tables(inputs: Inputs) -> dict[str, pl.LazyFrame]:
    m, ms, opts = inputs.m, inputs.m_score, inputs.opts
    out = {}
    for col in opts.categories:
        by = [*GROUP, col]
        counts = pl.concat([m.select([*by, "item_id"]), ms.select([*by, "item_id"])]).group_by(by).agg(
            pl.col("item_id").n_unique().cast(pl.Int64).alias("n_items"))
        out[f"n:{col}"] = counts.filter(pl.col(col).is_not_null()).sort(by)
        out[f"rates:{col}"] = rate_table(m, alt=inputs.alt, m_score=ms, by=by, eps=opts.eps).filter(
            pl.col(col).is_not_null())
    return out


def nest(rows: Iterable[dict[str, Any]], value: str | tuple[str, str]) -> dict[str, Any]:
    """metric -> value (single) or {key: value}, from tidy (metric, key, ...) rows."""
    out: dict[str, Any] = {}
    for r in rows:
        v = [r[value[0]], r[value[1]]] if isinstance(value, tuple) else r[value]
        if r["key"] == "":
            out[r["metric"]] = v
        else:
            out.setdefault(r["metric"], {})[r["key"]] = v
    return out


def _document(rows: GroupRows, opts: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for col in opts.categories:
        rates, values = rows(f"rates:{col}"), rows(f"n:{col}")
        if values:
            out[col] = [{"value": v[col], "n_items": v["n_items"],
                         "rates": nest((r for r in rates if r[col] == v[col]), "value")} for v in values]
    return out


def _report(g: dict[str, Any], idx: int) -> list[Block]:
    out: list[Block] = []
    for col, values in g["categories"].items():
        head = [col, "items", *[f"acc {b}" for b in g["grid"]], "oracle", "headroom", "visual confusion"]
        rows = [[v["value"], v["n_items"], *[Rate((v["rates"].get("fixed_accuracy") or {}).get(b)) for b in g["grid"]],
                 Rate(v["rates"].get("oracle_accuracy")), Rate(v["rates"].get("oracle_headroom")),
                 Rate(v["rates"].get("visual_confusion"))] for v in values]
        out += [Heading(f"By {col} (points)"), Table(f"table-{col}-{idx}", head, rows)]
    return out


def _terminal(g: dict[str, Any]) -> list[Block]:
    """Per value of each column that splits the items (two values or more, and another split than a column before
    it): accuracy per budget with the oracle's headroom, and rescue / harm at each step of the chain."""
    out: list[Block] = []
    steps = [f"{a}->{b}" for a, b in zip(g["grid"], g["grid"][1:])]
    splits: list[list[tuple[Any, int]]] = []
    for col, values in (g.get("categories") or {}).items():
        split = sorted((v["n_items"], i) for i, v in enumerate(values))
        if len(values) < 2 or split in splits:
            continue
        splits.append(split)
        acc_rows, flow_rows = [], []
        for v in values:
            r = v["rates"]
            acc = r.get("fixed_accuracy") or {}
            acc_rows.append([v["value"], v["n_items"], *[Rate(acc.get(b)) for b in g["grid"]],
                             Rate(r.get("oracle_headroom"))])
            flow_rows.append([v["value"], *[joined(" / ", (Rate((r.get("rescue_rate") or {}).get(s)),
                                                           Rate((r.get("harm_rate") or {}).get(s)))) for s in steps]])
        out += [Table("", [col, "items", *g["grid"], "headroom"], acc_rows,
                      title=f"by {col}: accuracy per budget and the oracle's headroom (points)"),
                Table("", [col, *steps], flow_rows, title=f"by {col}: rescue / harm per step (points of its items)")]
    return out


register_metric(Metric(
    name="categories",
    tables=_tables,
    document=_document,
    report=_report,
    terminal=_terminal,
    description="every rate per value of each category column (task type, category, duration)",
))
