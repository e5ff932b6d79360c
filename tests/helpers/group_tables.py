"""The group table built from an adapter's items (what `engine.datasets.scoring_rules` takes, `GROUP_TABLE_SCHEMA`):
the oracle beside the one the package reads from result rows (`engine.metrics.benchmark_scores.score_groups`)."""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from engine.datasets.scoring_rules import GROUP_TABLE_SCHEMA
from engine.items import Item


def _int_or_none(x: object) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def group_table(items: Iterable[Item]) -> pl.DataFrame:
    """Items' group membership: dataset, item_id, group_id, position, group_size, group_type, group_structure,
    level."""
    recs = [
        {"dataset": it.dataset, "item_id": it.item_id, "group_id": it.group_id,
         "position": _int_or_none(it.extra.get("position")), "group_size": _int_or_none(it.extra.get("group_size")),
         "group_type": it.extra.get("group_type"),
         "group_structure": it.extra.get("group_structure"), "level": _int_or_none(it.extra.get("level"))}
        for it in items
    ]
    return pl.DataFrame(recs, schema=GROUP_TABLE_SCHEMA)
