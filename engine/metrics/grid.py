"""Protocols, chains and the matched grid: the budgets each metric group runs over, in cost order.

A budget is a frame count plus a **protocol**: everything else that shapes what the model
sees (``max_pixels`` / ``short_side``, sampling ``policy`` and ``seed``, ``pipeline`` raw
or cached). ``protocol_id`` is derived from a row's columns exactly as the budget id is,
without its ``f<N>`` part (``px50176``, ``random-seed1``, ``cached``,
``s292-random-seed1-cached``; ``default`` when nothing remains), so rows committed before
budget ids named their pipeline still group by it.

A metric group is ``GROUP`` = (model_id, dataset, protocol_id); its grid is its *chain*:
the text-only budgets (``frames == 0``, shared by every chain of the model and dataset)
plus the protocol's budgets ordered by frames. A model and dataset with text-only budgets
alone form one ``default`` chain. Rows of adaptive runs (``pred-<predictor>`` budgets,
cascade decisions) are on no chain.

Every paired metric starts from the *matched long frame* built here: one row per
(model, dataset, protocol, item, budget) restricted to the group's chain and to the items
that have a usable result at every budget of it. Items missing any budget are excluded
and counted (`grid_summary`).

Two tracks: ``"correct"`` (MCQ and yes/no items, ``correct`` not null) and
``"score"`` (open and dialog items, graded by ``score`` in [0, 1]).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Literal

import polars as pl

__all__ = [
    "BASE_GROUP",
    "CATEGORY_COLUMNS",
    "GRADED_KINDS",
    "GROUP",
    "MATCHED_COLUMNS",
    "PROTOCOL_COLUMNS",
    "Track",
    "budget_table",
    "chain_rows",
    "grid_budgets",
    "grid_summary",
    "group_chunks",
    "in_groups",
    "matched",
    "off_chain_budgets",
    "protocol_id",
    "restrict_protocols",
    "track_rows",
]

log = logging.getLogger(__name__)

BASE_GROUP: list[str] = ["model_id", "dataset"]
"""A model on a dataset: the unit whose chains are compared (robustness, iso-compute, cross-model)."""
GROUP: list[str] = [*BASE_GROUP, "protocol_id"]
"""A metric group: one chain of a model on a dataset."""
PROTOCOL_COLUMNS: list[str] = ["max_pixels", "short_side", "min_pixels", "exact_pixels", "policy", "seed", "pipeline"]
CATEGORY_COLUMNS: tuple[str, ...] = ("task_type", "category", "duration")
GRADED_KINDS: tuple[str, ...] = ("open", "dialog")
Track = Literal["correct", "score"]

MATCHED_COLUMNS: list[str] = [
    *GROUP, "item_id", "budget_id", "rank", "frames", "n_frames", "is_text", "max_pixels", "short_side",
    "c", "s", "confidence", "frame_indices", *CATEGORY_COLUMNS,
]


def _graded() -> pl.Expr:
    return pl.col("task_kind").is_in(list(GRADED_KINDS)).fill_null(False)


def protocol_id() -> pl.Expr:
    """A row's protocol id from its columns (the budget id's rule without the ``f<N>`` part)."""
    def part(cond: pl.Expr, value: pl.Expr) -> pl.Expr:
        return pl.when(cond).then(value)

    parts = pl.concat_str([
        part(pl.col("max_pixels").is_not_null(), pl.lit("px") + pl.col("max_pixels").cast(pl.String)),
        part(pl.col("short_side").is_not_null(), pl.lit("s") + pl.col("short_side").cast(pl.String)),
        part(pl.col("min_pixels").is_not_null(), pl.lit("min") + pl.col("min_pixels").cast(pl.String)),
        part(pl.col("exact_pixels").is_not_null(), pl.lit("ex") + pl.col("exact_pixels").cast(pl.String)),
        part(pl.col("policy").fill_null("uniform") != "uniform", pl.col("policy")),
        part(pl.col("seed").fill_null(0) != 0, pl.lit("seed") + pl.col("seed").cast(pl.String)),
        part(pl.col("pipeline").eq_missing(pl.lit("cached")), pl.lit("cached")),
    ], separator="-", ignore_nulls=True)
    return pl.when(parts == "").then(pl.lit("default")).otherwise(parts)


def _adaptive() -> pl.Expr:
    """Rows of adaptive runs (a frame count per item: `pred-<predictor>`, cascade decisions) are no grid budget."""
    return pl.col("budget_id").str.starts_with("pred-") | pl.col("policy").eq_missing(pl.lit("cascade"))


def _with_pipeline(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Rows without a ``pipeline`` column (hand-made or older frames) were raw; without ``min_pixels`` or
    ``exact_pixels``, unset."""
    names = rows.collect_schema().names()
    if "pipeline" not in names:
        rows = rows.with_columns(pl.lit("raw").alias("pipeline"))
    for col in ("min_pixels", "exact_pixels"):
        if col not in names:
            rows = rows.with_columns(pl.lit(None, dtype=pl.Int64).alias(col))
    return rows


def chain_rows(rows: pl.LazyFrame) -> pl.LazyFrame:
    """`rows` with their ``protocol_id``: text-only rows once per chain of their model and dataset.

    Rows of adaptive runs are dropped (on no chain); text-only rows of a model and dataset
    without visual budgets get ``default``.
    """
    rows = _with_pipeline(rows).filter(~_adaptive())
    visual = rows.filter(pl.col("frames") > 0).with_columns(protocol_id().alias("protocol_id"))
    chains = visual.select([*GROUP]).unique()
    text = (
        rows.filter(pl.col("frames") == 0)
        .join(chains, on=BASE_GROUP, how="left")
        .with_columns(pl.col("protocol_id").fill_null("default"))
    )
    return pl.concat([text, visual], how="diagonal_relaxed")


def restrict_protocols(rows: pl.LazyFrame, protocols: Sequence[str] | None) -> pl.LazyFrame:
    """Rows of the chains `protocols` only (text-only rows are every chain's); None keeps all."""
    if protocols is None:
        return rows
    rows = _with_pipeline(rows)
    return rows.filter((pl.col("frames") == 0) | protocol_id().is_in(list(protocols)))


def _rank(key: pl.Expr, over: Sequence[str] = GROUP, method: Literal["ordinal", "dense"] = "ordinal") -> pl.Expr:
    """0-based position of `key` within `over` (order-independent, nulls stay null)."""
    return (key.rank(method).over(list(over)) - 1).cast(pl.Int64)


def budget_table(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Every budget of every chain, in cost order.

    Cost order: frames, then the largest pixel total seen, then budget id. The text-only
    budget is listed once per chain.

    Args:
        rows: Result rows (any status).

    Returns:
        model_id, dataset, protocol_id, budget_id, frames, max_pixels, short_side, policy, seed,
        pipeline, pixels, is_text, budget_rank (over every budget of the model and dataset),
        chain_rank (position in the chain).
    """
    budgets = chain_rows(rows).group_by([*GROUP, "budget_id"]).agg(
        *[pl.col(c).first() for c in ("frames", *PROTOCOL_COLUMNS)],
        pl.col("pixels_total").max().fill_null(0).alias("pixels"),
    )
    cost = pl.struct("frames", "pixels", "budget_id")
    return (
        budgets.with_columns((pl.col("frames") == 0).alias("is_text"))
        .with_columns(_rank(cost, BASE_GROUP, "dense").alias("budget_rank"), _rank(cost).alias("chain_rank"))
        .sort([*GROUP, "chain_rank"])
    )


def off_chain_budgets(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Budgets of adaptive runs (on no chain) per model and dataset: model_id, dataset, budget_id."""
    return rows.filter(_adaptive()).select([*BASE_GROUP, "budget_id"]).unique().sort([*BASE_GROUP, "budget_id"])


def grid_budgets(rows: pl.LazyFrame, budgets: Sequence[str] | None = None) -> pl.LazyFrame:
    """The budgets each group's metrics run over.

    Args:
        rows: Result rows.
        budgets: Restrict to these budget ids; default: each group's whole chain. A chain left
            with text-only budgets is dropped unless no chain of its model and dataset keeps a
            visual budget.

    Returns:
        model_id, dataset, protocol_id, budget_id, rank (position in cost order), is_text.
    """
    table = budget_table(rows)
    if budgets is not None:
        n_visual = (~pl.col("is_text")).sum().over(GROUP)
        table = (
            table.filter(pl.col("budget_id").is_in(list(budgets)))
            .filter((n_visual > 0) | (n_visual.max().over(BASE_GROUP) == 0))
        )
    return (
        table.with_columns(_rank(pl.col("chain_rank")).alias("rank"))
        .select([*GROUP, "budget_id", "rank", "is_text"])
    )


def track_rows(rows: pl.LazyFrame, track: Track = "correct") -> pl.LazyFrame:
    """Rows of the items that belong to `track` (any status)."""
    return rows.filter(_graded() if track == "score" else ~_graded())


def _usable(track: Track) -> pl.Expr:
    value = pl.col("score") if track == "score" else pl.col("correct")
    return (pl.col("status") == "ok") & value.is_not_null()


def matched(rows: pl.LazyFrame, *, track: Track = "correct", budgets: Sequence[str] | None = None) -> pl.LazyFrame:
    """The matched long frame: complete items only, one row per (group, item, chain budget).

    Args:
        rows: One row per key (e.g. `engine.results.ResultsDir.rows`).
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
    ok = track_rows(chain_rows(rows), track).filter(_usable(track)).join(grid, on=[*GROUP, "budget_id"], how="inner")
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

    An item of the track counts as excluded from a chain when the model has a row for it on the dataset
    (at any budget of any chain) but it lacks a usable result at some budget of the chain, even at all
    of them: so ``n_items + n_excluded`` is the same for every chain of a model and dataset.

    Returns:
        model_id, dataset, protocol_id, grid (list of budget ids), n_items, n_excluded.
    """
    grid = grid_budgets(rows, budgets).group_by(GROUP).agg(pl.col("budget_id").sort_by("rank").alias("grid"))
    seen = track_rows(chain_rows(rows), track).group_by(BASE_GROUP).agg(pl.col("item_id").n_unique().alias("_seen"))
    done = (
        matched(rows, track=track, budgets=budgets)
        .group_by(GROUP).agg(pl.col("item_id").n_unique().alias("n_items"))
    )
    return (
        grid.join(seen, on=BASE_GROUP, how="inner")
        .join(done, on=GROUP, how="left")
        .with_columns(pl.col("n_items").fill_null(0).cast(pl.Int64))
        .with_columns((pl.col("_seen") - pl.col("n_items")).cast(pl.Int64).alias("n_excluded"))
        .select([*GROUP, "grid", "n_items", "n_excluded"])
        .sort(GROUP)
    )


def group_chunks(frames: Sequence[pl.LazyFrame | pl.DataFrame | None], max_rows: int,
                 by: Sequence[str] = GROUP) -> list[pl.DataFrame]:
    """The groups (keys `by`) of some frames, sorted (nulls last), cut into consecutive chunks of about
    `max_rows` rows of the frames together; a group larger than that is a chunk of its own.

    For computing a group-local metric a chunk at a time (`in_groups`): its memory then follows a chunk,
    not the dataset, and the chunks' results concatenated are the one-pass result in group order.

    Returns:
        One frame of group keys per chunk (one empty frame when the frames have no rows).
    """
    by = list(by)
    counts = [f.lazy().group_by(by).agg(pl.len().cast(pl.Int64).alias("_n")) for f in frames if f is not None]
    if not counts:
        return [pl.DataFrame(schema=dict.fromkeys(by, pl.String))]
    sizes = (pl.concat(counts, how="vertical_relaxed").group_by(by).agg(pl.col("_n").sum())
             .sort(by, nulls_last=True).collect())
    if not sizes.height:
        return [sizes.drop("_n")]
    return (sizes.with_columns(((pl.col("_n").cum_sum() - 1) // max(max_rows, 1)).alias("_chunk")).drop("_n")
            .partition_by("_chunk", include_key=False, maintain_order=True))


def in_groups(frame: pl.LazyFrame, keys: pl.DataFrame, by: Sequence[str] = GROUP) -> pl.LazyFrame:
    """The rows of `frame` in the groups listed in `keys` (a chunk of `group_chunks`)."""
    return frame.join(keys.lazy(), on=list(by), how="semi", nulls_equal=True)
