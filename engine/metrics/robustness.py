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
"""

from __future__ import annotations

import polars as pl

from engine.metrics.confusion import confusion_items
from engine.metrics.grid import BASE_GROUP, GROUP
from engine.metrics.oracle import oracle

__all__ = ["PAIR", "chain_pairs", "pair_rows", "robustness"]

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


def robustness(m: pl.LazyFrame) -> pl.LazyFrame:
    """Overlap of confused and harmed items between every two chains of a model and dataset.

    Args:
        m: Matched long frame, correctness track, every chain (`engine.metrics.grid.matched`).

    Returns:
        model_id, dataset, protocol_a, protocol_b, n_items, confused_a, confused_b, confused_both,
        jaccard, harmed_a, harmed_b, harmed_both, headroom_a, headroom_b, confusion_rate_a,
        confusion_rate_b; by pair. A pair with no item matched in both chains is listed with
        n_items = 0, zero counts and null jaccard, headrooms and rates.
    """
    mp = pair_rows(m)
    by = [*PAIR, "protocol_id"]
    harmed = mp.group_by([*by, "item_id"]).agg(_harmed().alias("harmed"))
    items = confusion_items(mp, by).join(harmed, on=[*by, "item_id"])
    headroom = oracle(mp, by).select([*by, "oracle_headroom"])

    def side(name: str) -> tuple[pl.LazyFrame, pl.LazyFrame]:
        mine = pl.col("protocol_id") == pl.col(f"protocol_{name}")
        per_item = items.filter(mine).select(
            [*PAIR, "item_id", pl.col("confused").alias(f"_c{name}"), pl.col("harmed").alias(f"_h{name}")])
        per_chain = headroom.filter(mine).select([*PAIR, pl.col("oracle_headroom").alias(f"headroom_{name}")])
        return per_item, per_chain

    (ia, ha), (ib, hb) = side("a"), side("b")
    ca, cb, cab = pl.col("confused_a"), pl.col("confused_b"), pl.col("confused_both")
    counts = ["n_items", "confused_a", "confused_b", "confused_both", "harmed_a", "harmed_b", "harmed_both"]
    found = (
        ia.join(ib, on=[*PAIR, "item_id"])
        .group_by(PAIR).agg(
            pl.len().cast(pl.Int64).alias("n_items"),
            *[pl.col(f"_{k}{s}").sum().cast(pl.Int64).alias(f"{name}_{s}")
              for k, name in (("c", "confused"), ("h", "harmed")) for s in ("a", "b")],
            (pl.col("_ca") & pl.col("_cb")).sum().cast(pl.Int64).alias("confused_both"),
            (pl.col("_ha") & pl.col("_hb")).sum().cast(pl.Int64).alias("harmed_both"))
        .with_columns(pl.when(ca + cb > 0).then(cab / (ca + cb - cab)).alias("jaccard"),
                      (ca / pl.col("n_items")).alias("confusion_rate_a"),
                      (cb / pl.col("n_items")).alias("confusion_rate_b"))
        .join(ha, on=PAIR).join(hb, on=PAIR)
    )
    return (
        chain_pairs(m).join(found, on=PAIR, how="left")
        .with_columns(pl.col(c).fill_null(0) for c in counts)
        .select([*PAIR, "n_items", "confused_a", "confused_b", "confused_both", "jaccard", "harmed_a", "harmed_b",
                 "harmed_both", "headroom_a", "headroom_b", "confusion_rate_a", "confusion_rate_b"])
        .sort(PAIR)
    )
