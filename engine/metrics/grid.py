"""The matched grid: budgets in cost order and the items that have a result at every one of them.

Every paired metric starts from the *matched long frame* built here: one row per
(model, dataset, item, budget) restricted to the group's grid and to the items that
have a usable result at every budget of it. Items missing any budget are excluded
and counted (`grid_summary`).

The grid of a (model, dataset) group is its *chain*: the text-only budgets
(``frames == 0``) plus the budgets of the group's primary sampling policy (the
(policy, seed) used by most visual budgets; ``uniform`` wins ties). Budgets of other
policies stay off the chain: they would break the cost order (same frames, different
sampling) and are used by `engine.metrics.regression.sampling_recovery` instead.

Two tracks: ``"correct"`` (MCQ and yes/no items, ``correct`` not null) and
``"score"`` (open and dialog items, graded by ``score`` in [0, 1]).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Literal

import polars as pl

__all__ = [
    "CATEGORY_COLUMNS",
    "GRADED_KINDS",
    "GROUP",
    "MATCHED_COLUMNS",
    "Track",
    "budget_table",
    "grid_budgets",
    "grid_summary",
    "matched",
    "track_rows",
]

log = logging.getLogger(__name__)

GROUP: list[str] = ["model_id", "dataset"]
CATEGORY_COLUMNS: tuple[str, ...] = ("task_type", "category", "duration")
GRADED_KINDS: tuple[str, ...] = ("open", "dialog")
Track = Literal["correct", "score"]

MATCHED_COLUMNS: list[str] = [
    *GROUP, "item_id", "budget_id", "rank", "frames", "n_frames", "is_text", "max_pixels", "short_side",
    "c", "s", "confidence", "frame_indices", *CATEGORY_COLUMNS,
]


def _graded() -> pl.Expr:
    return pl.col("task_kind").is_in(list(GRADED_KINDS)).fill_null(False)


def _rank(key: pl.Expr) -> pl.Expr:
    """0-based position of `key` within its group (order-independent, nulls stay null)."""
    return (key.rank("ordinal").over(GROUP) - 1).cast(pl.Int64)


def _primary_policy(budgets: pl.LazyFrame) -> pl.LazyFrame:
    """The (policy, seed) used by most visual budgets of each group; ``uniform`` wins ties."""
    return (
        budgets.filter(pl.col("frames") > 0)
        .group_by([*GROUP, "policy", "seed"])
        .agg(pl.len().alias("_n"))
        .sort([*GROUP, "_n", (pl.col("policy") != "uniform"), "policy", "seed"],
              descending=[False, False, True, False, False, False], nulls_last=True)
        .unique(subset=GROUP, keep="first", maintain_order=True)
        .select([*GROUP, pl.col("policy").alias("_pp"), pl.col("seed").alias("_ps")])
    )


def _adaptive() -> pl.Expr:
    """Rows of adaptive runs (a frame count per item: `pred-<predictor>`, cascade decisions) are no grid budget."""
    return pl.col("budget_id").str.starts_with("pred-") | pl.col("policy").eq_missing(pl.lit("cascade"))


def budget_table(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Every budget of every (model, dataset) group, in cost order, with its place on the chain.

    Cost order: frames, then the largest pixel total seen, then budget id.

    Args:
        rows: Result rows (any status).

    Returns:
        model_id, dataset, budget_id, frames, max_pixels, short_side, policy, seed, pixels,
        budget_rank (over all budgets), is_text, on_chain, chain_rank (null off the chain).
    """
    budgets = rows.group_by([*GROUP, "budget_id"]).agg(
        pl.col("frames").first(), pl.col("max_pixels").first(), pl.col("short_side").first(),
        pl.col("policy").first(), pl.col("seed").first(),
        pl.col("pixels_total").max().fill_null(0).alias("pixels"),
    )
    on_chain = ((pl.col("frames") == 0) | (
        pl.col("policy").eq_missing(pl.col("_pp")) & pl.col("seed").eq_missing(pl.col("_ps"))
    )) & ~_adaptive()
    return (
        budgets.join(_primary_policy(budgets), on=GROUP, how="left")
        .with_columns((pl.col("frames") == 0).alias("is_text"), on_chain.fill_null(False).alias("on_chain"))
        .with_columns(_rank(pl.struct("frames", "pixels", "budget_id")).alias("budget_rank"))
        .with_columns(_rank(pl.when(pl.col("on_chain")).then(pl.col("budget_rank"))).alias("chain_rank"))
        .drop("_pp", "_ps")
        .sort([*GROUP, "budget_rank"])
    )


def grid_budgets(rows: pl.LazyFrame, budgets: Sequence[str] | None = None) -> pl.LazyFrame:
    """The budgets each group's metrics run over.

    Args:
        rows: Result rows.
        budgets: Restrict to these budget ids; default: each group's chain.

    Returns:
        model_id, dataset, budget_id, rank (position in cost order), is_text.
    """
    table = budget_table(rows)
    keep = pl.col("on_chain") if budgets is None else pl.col("budget_id").is_in(list(budgets))
    return (
        table.filter(keep)
        .with_columns(_rank(pl.col("budget_rank")).alias("rank"))
        .select([*GROUP, "budget_id", "rank", "is_text"])
    )


def track_rows(rows: pl.LazyFrame, track: Track = "correct") -> pl.LazyFrame:
    """Rows of the items that belong to `track` (any status)."""
    return rows.filter(_graded() if track == "score" else ~_graded())


def _usable(track: Track) -> pl.Expr:
    value = pl.col("score") if track == "score" else pl.col("correct")
    return (pl.col("status") == "ok") & value.is_not_null()


def matched(rows: pl.LazyFrame, *, track: Track = "correct", budgets: Sequence[str] | None = None) -> pl.LazyFrame:
    """The matched long frame: complete items only, one row per (group, item, grid budget).

    Args:
        rows: One row per key (e.g. `engine.results.store.latest_rows` of a scan).
        track: ``"correct"`` for MCQ/yes-no items, ``"score"`` for open/dialog items.
        budgets: Restrict the grid to these budget ids (kept in cost order); default: each
            group's chain.

    Returns:
        The columns of `MATCHED_COLUMNS`: ``rank`` is the budget's position in the grid
        (0 = cheapest), ``c`` the correctness (null on the score track), ``s`` the score,
        ``n_frames`` the frames actually sent (``frames_sent``, else ``frames``).
    """
    grid = grid_budgets(rows, budgets)
    n_grid = grid.group_by(GROUP).agg(pl.len().alias("_ng"))
    ok = track_rows(rows, track).filter(_usable(track)).join(grid, on=[*GROUP, "budget_id"], how="inner")
    complete = (
        ok.group_by([*GROUP, "item_id"]).agg(pl.col("budget_id").n_unique().alias("_ni"))
        .join(n_grid, on=GROUP).filter(pl.col("_ni") == pl.col("_ng")).select([*GROUP, "item_id"])
    )
    c = pl.lit(None, dtype=pl.Boolean) if track == "score" else pl.col("correct")
    return ok.join(complete, on=[*GROUP, "item_id"], how="semi").select(
        *GROUP, "item_id", "budget_id", "rank", pl.col("frames").cast(pl.Int64),
        pl.coalesce("frames_sent", "frames").cast(pl.Int64).alias("n_frames"), "is_text",
        "max_pixels", "short_side", c.alias("c"), pl.col("score").alias("s"), "confidence", "frame_indices",
        *CATEGORY_COLUMNS,
    ).sort([*GROUP, "item_id", "rank"])


def grid_summary(rows: pl.LazyFrame, *, track: Track = "correct",
                 budgets: Sequence[str] | None = None) -> pl.LazyFrame:
    """Per group: the grid (budget ids in cost order), matched items and excluded items.

    An item of the track counts as excluded when the group has at least one row for it
    but it lacks a usable result at some budget of the grid.

    Returns:
        model_id, dataset, grid (list of budget ids), n_items, n_excluded.
    """
    grid = grid_budgets(rows, budgets).group_by(GROUP).agg(pl.col("budget_id").sort_by("rank").alias("grid"))
    seen = track_rows(rows, track).group_by(GROUP).agg(pl.col("item_id").n_unique().alias("_seen"))
    done = (
        matched(rows, track=track, budgets=budgets)
        .group_by(GROUP).agg(pl.col("item_id").n_unique().alias("n_items"))
    )
    return (
        grid.join(seen, on=GROUP, how="inner")
        .join(done, on=GROUP, how="left")
        .with_columns(pl.col("n_items").fill_null(0).cast(pl.Int64))
        .with_columns((pl.col("_seen") - pl.col("n_items")).cast(pl.Int64).alias("n_excluded"))
        .select([*GROUP, "grid", "n_items", "n_excluded"])
        .sort(GROUP)
    )
