"""Robustness across protocols: do the same items get confused under another chain?

For every pair of chains (a, b) of one model and dataset (``protocol_a < protocol_b``),
over the items matched in **both** chains:

- an item is *confused* in a chain when it is right at some budget and wrong at a later
  budget of that chain (the visual-confusion tag of `engine.metrics.confusion`, text-only
  budget included);
- an item is *harmed* in a chain when it is right at the chain's first visual budget and
  wrong at its last (a chain with one visual budget harms nobody);
- ``confused_a``, ``confused_b``, ``confused_both`` count the items confused in a, in b
  and in both; ``jaccard`` = both / (a + b - both), null when a + b = 0; the same
  counts for harmed items;
- ``headroom_a`` / ``headroom_b`` (oracle minus best fixed) and ``confusion_rate_a`` /
  ``confusion_rate_b`` are each chain's values on these common items, so the pair is
  paired item by item.

Registered as the dataset metric ``robustness`` (top-level ``robustness``: one entry per pair of
chains; report ``table-robustness-N`` and ``fig-robustness-N``).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from engine.metrics.confusion import confusion_items
from engine.metrics.grid import BASE_GROUP, GROUP
from engine.metrics.oracle import oracle
from engine.metrics.registry import Metric, register_metric
from engine.metrics.sections import Block, Count, Figure, Heading, Note, Number, Rate, Table, Text, joined, text

__all__ = ["PAIR", "chain_pairs", "common_frames", "pair_rows", "robustness"]

PAIR: list[str] = [*BASE_GROUP, "protocol_a", "protocol_b"]


def chain_pairs(m: pl.LazyFrame) -> pl.LazyFrame:
    """Every pair of chains of one model and dataset (``protocol_a < protocol_b``): the PAIR columns."""
    chains = m.select(GROUP).unique()
    return (
        chains.rename({"protocol_id": "protocol_a"})
        .join(chains.rename({"protocol_id": "protocol_b"}), on=BASE_GROUP)
        .filter(pl.col("protocol_a") < pl.col("protocol_b"))
        .select(PAIR)
    )


def pair_rows(m: pl.LazyFrame) -> pl.LazyFrame:
    """Both chains' matched rows for every pair of chains, restricted to the items matched in both.

    Returns:
        protocol_a, protocol_b, then the columns of `m` (``protocol_id`` names the side).
    """
    pairs = chain_pairs(m)
    items = m.select([*GROUP, "item_id"]).unique()
    common = (
        pairs.join(items.rename({"protocol_id": "protocol_a"}), on=[*BASE_GROUP, "protocol_a"])
        .join(items.rename({"protocol_id": "protocol_b"}), on=[*BASE_GROUP, "protocol_b", "item_id"])
    )
    sides = [common.with_columns(pl.col(side).alias("protocol_id")) for side in ("protocol_a", "protocol_b")]
    return pl.concat(sides).join(m, on=[*GROUP, "item_id"]).select(
        "protocol_a", "protocol_b", *m.collect_schema().names())


def _harmed() -> pl.Expr:
    """Aggregation over an item's rows: right at the first visual budget, wrong at the last."""
    visual = pl.col("c").filter(~pl.col("is_text")).sort_by(pl.col("rank").filter(~pl.col("is_text")))
    return (visual.first() & ~visual.last()).fill_null(False)


def common_frames(m: pl.LazyFrame) -> pl.LazyFrame:
    """The visual frame counts both chains of each pair have: PAIR columns, frames_common (sorted list)."""
    frames = m.filter(~pl.col("is_text")).select([*GROUP, "frames"]).unique()
    return (
        chain_pairs(m)
        .join(frames.rename({"protocol_id": "protocol_a"}), on=[*BASE_GROUP, "protocol_a"])
        .join(frames.rename({"protocol_id": "protocol_b"}), on=[*BASE_GROUP, "protocol_b", "frames"])
        .group_by(PAIR).agg(pl.col("frames").sort().alias("frames_common"))
    )


def _scoped(mp: pl.LazyFrame, common: pl.LazyFrame) -> pl.LazyFrame:
    """`mp` twice, told apart by ``_scope``: "whole" (every budget) and "common" (the text-only budget and
    each pair's common frame counts), so both sets of figures come from one plan."""
    frames = common.explode("frames_common").rename({"frames_common": "frames"})
    on_common = pl.concat([mp.filter(pl.col("is_text")),
                           mp.filter(~pl.col("is_text")).join(frames, on=[*PAIR, "frames"], how="semi")])
    return pl.concat([mp.with_columns(pl.lit("whole").alias(_SCOPE)),
                      on_common.with_columns(pl.lit("common").alias(_SCOPE))])


_SCOPE = "_scope"
_KEYS = [*PAIR, _SCOPE]
_FIGURES = ["confused_a", "confused_b", "confused_both", "jaccard", "harmed_a", "harmed_b", "harmed_both",
            "headroom_a", "headroom_b", "confusion_rate_a", "confusion_rate_b"]


def _figures(mp: pl.LazyFrame) -> pl.LazyFrame:
    """_KEYS, n_items and `_FIGURES` of every pair and scope with an item matched in both chains."""
    by = [*_KEYS, "protocol_id"]
    harmed = mp.group_by([*by, "item_id"]).agg(_harmed().alias("harmed"))
    items = confusion_items(mp, by).join(harmed, on=[*by, "item_id"])
    headroom = oracle(mp, by).select([*by, "oracle_headroom"])

    def side(name: str) -> tuple[pl.LazyFrame, pl.LazyFrame]:
        mine = pl.col("protocol_id") == pl.col(f"protocol_{name}")
        per_item = items.filter(mine).select(
            [*_KEYS, "item_id", pl.col("confused").alias(f"_c{name}"), pl.col("harmed").alias(f"_h{name}")])
        per_chain = headroom.filter(mine).select([*_KEYS, pl.col("oracle_headroom").alias(f"headroom_{name}")])
        return per_item, per_chain

    (ia, ha), (ib, hb) = side("a"), side("b")
    ca, cb, cab = pl.col("confused_a"), pl.col("confused_b"), pl.col("confused_both")
    return (
        ia.join(ib, on=[*_KEYS, "item_id"])
        .group_by(_KEYS).agg(
            pl.len().cast(pl.Int64).alias("n_items"),
            *[pl.col(f"_{k}{s}").sum().cast(pl.Int64).alias(f"{name}_{s}")
              for k, name in (("c", "confused"), ("h", "harmed")) for s in ("a", "b")],
            (pl.col("_ca") & pl.col("_cb")).sum().cast(pl.Int64).alias("confused_both"),
            (pl.col("_ha") & pl.col("_hb")).sum().cast(pl.Int64).alias("harmed_both"))
        .with_columns(pl.when(ca + cb > 0).then(cab / (ca + cb - cab)).alias("jaccard"),
                      (ca / pl.col("n_items")).alias("confusion_rate_a"),
                      (cb / pl.col("n_items")).alias("confusion_rate_b"))
        .join(ha, on=_KEYS).join(hb, on=_KEYS)
        .select([*_KEYS, "n_items", *_FIGURES])
    )


def robustness(m: pl.LazyFrame, *, engine: str | None = None) -> pl.LazyFrame:
    """Overlap of confused and harmed items between every two chains of a model and dataset.

    Args:
        m: Matched long frame, correctness track, every chain (`engine.metrics.grid.matched`).
        engine: Polars engine: when given, both chains' rows of every pair are collected with it here, once
            (the figures read them many times); None keeps the whole plan lazy.

    Returns:
        model_id, dataset, protocol_a, protocol_b, n_items, frames_common, then confused_a, confused_b,
        confused_both, jaccard, harmed_a, harmed_b, harmed_both, headroom_a, headroom_b, confusion_rate_a,
        confusion_rate_b over the text-only budget and the common frame counts (null when there is none),
        then the same eleven over the whole chains, each name ending in ``_whole``; by pair. A pair with no
        item matched in both chains is listed with n_items = 0, zero counts and null jaccard, headrooms and
        rates.
    """
    m = m.cache()  # read many times below: one node for the optimizer, not copies of m's whole plan
    common = common_frames(m)
    scoped = _scoped(pair_rows(m), common)
    # read many times by the figures: materialised once, or one cached node
    scoped = scoped.cache() if engine is None else scoped.collect(engine=engine).lazy()  # type: ignore[call-overload]
    figures = _figures(scoped)
    whole = figures.filter(pl.col(_SCOPE) == "whole").drop(_SCOPE).rename({k: f"{k}_whole" for k in _FIGURES})
    shared = figures.filter(pl.col(_SCOPE) == "common").drop(_SCOPE, "n_items")
    counts = [c for c in _FIGURES if c.startswith(("confused_", "harmed_"))]
    has_common = pl.col("frames_common").list.len() > 0
    return (
        chain_pairs(m).join(whole, on=PAIR, how="left").join(common, on=PAIR, how="left")
        .join(shared, on=PAIR, how="left")
        .with_columns(pl.col("frames_common").fill_null(pl.lit([], dtype=pl.List(pl.Int32()))))
        .with_columns(pl.col("n_items").fill_null(0),
                      *[pl.col(f"{c}_whole").fill_null(0) for c in counts],
                      *[pl.when(has_common).then(pl.col(c).fill_null(0) if c in counts else pl.col(c)).alias(c)
                        for c in _FIGURES])
        .select([*PAIR, "n_items", "frames_common", *_FIGURES, *[f"{k}_whole" for k in _FIGURES]])
        .sort(PAIR)
    )


def _trio(r: dict[str, Any], key: str, end: str = "") -> Count | Text:
    """"a / b / both" of a pair's counts (one missing count when the chains share no frame count)."""
    got = [r.get(f"{key}_{s}{end}") for s in ("a", "b", "both")]
    return Count(None) if None in got else joined(" / ", (Count(v) for v in got))


def _pair(r: dict[str, Any], a: str, b: str) -> Text:
    """"a / b" of two rates."""
    return joined(" / ", (Rate(r.get(a)), Rate(r.get(b))))


def _row(r: dict[str, Any]) -> list[object]:
    return [r["protocol_a"], r["protocol_b"], r["n_items"], ", ".join(str(n) for n in r.get("frames_common") or [])
            or "none", _trio(r, "confused"), Number(r["jaccard"]), _trio(r, "harmed"),
            _pair(r, "headroom_a", "headroom_b"), _pair(r, "confusion_rate_a", "confusion_rate_b"),
            text(_trio(r, "confused", "_whole"), "; ", Number(r.get("jaccard_whole"))),
            _pair(r, "confusion_rate_a_whole", "confusion_rate_b_whole")]


_HEAD = ["chain a", "chain b", "items", "common frames", "confused a / b / both", "jaccard", "harmed a / b / both"]
_NOTE = ("over the items matched in both chains, compared over the text-only budget and the frame counts both "
         "chains have (a longer chain has more budgets to be confused at); the whole chains beside, labelled. "
         "confused: right at a budget and wrong at a later one of the chain; harmed: right at the chain's first "
         "visual budget, wrong at its last")


def _report(pairs: list[dict[str, Any]], idx: int) -> list[Block]:
    head = [*_HEAD, "headroom a / b (pts)", "confusion a / b (pts)", "whole chains: confused a / b / both; jaccard",
            "whole chains: confusion a / b (pts)"]
    return [Heading("Robustness across chains"), Note(_NOTE),
            Table(f"table-robustness-{idx}", head, [_row(r) for r in pairs]), Figure(f"fig-robustness-{idx}")]


def _terminal(pairs: list[dict[str, Any]]) -> list[Block]:
    r0 = pairs[0]
    head = [*_HEAD, "headroom a / b", "confusion a / b", "whole: confused a / b / both; jaccard",
            "whole: confusion a / b"]
    return [Heading(f"{r0['model_id']} on {r0['dataset']}: robustness across chains (items matched in both; over the "
                    "frame counts both chains have, the whole chains beside)"),
            Table("", head, [_row(r) for r in pairs])]


register_metric(Metric(
    name="robustness",
    figures=("robustness",),
    scope="dataset",
    tables=lambda inputs: {"pairs": robustness(inputs.m, engine=inputs.opts.engine)},
    document=lambda t, opts: [] if (pairs := t.frame("pairs")) is None else pairs.to_dicts(),
    report=_report,
    terminal=_terminal,
    description="per pair of chains of a model and dataset, over their common items: the items confused and "
                "harmed in each and in both (Jaccard), and each chain's headroom and confusion",
))
