"""Do low-level video statistics explain visual confusion?

Each item carries its video's statistics (`engine.results.video_stats`, joined to the rows as
``video_<name>`` columns: duration, frame rate, resolution in pixels, motion energy, scene cuts,
brightness, contrast, static share). Per group (model, dataset, chain), over the matched items
whose video has the statistic (correctness track):

- per item: *confused* (right at some budget of the chain, wrong at a later one: the visual
  confusion of `engine.metrics.confusion`), *harmed* (right at the chain's first visual budget,
  wrong at its last) and *overwritten* (right text-only, wrong at some visual budget; groups
  with a text-only budget only, else null);
- quantile bins: the items are cut into `N_BINS` bins by the rank of the statistic (ties share
  the lower bin: bin = floor((rank_min - 1) x N_BINS / n)), each with its value range, item count
  and the share of confused, harmed and overwritten items, each with a percentile interval of a
  paired bootstrap over items (`engine.metrics.bootstrap.count_matrices`: the same draws for every
  statistic and rate of a group, `n_boot`, `seed` and `level` of the options);
- the statistic's power to predict confusion: the rank AUC, P(value of a confused item > value
  of an unconfused one) + 1/2 P(equal) (Mann-Whitney; 0.5: no power, below 0.5: lower values go
  with confusion), null when no item or every item is confused, with the same bootstrap interval.

Registered as the metric ``low_level`` (JSON key ``groups[].low_level``, report section
``table-low-level-N``); null for a group whose items have no statistics.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import polars as pl

from engine.metrics.bootstrap import count_matrices
from engine.metrics.confusion import confusion_items
from engine.metrics.grid import GROUP
from engine.metrics.overwrite import text_items
from engine.metrics.registry import GroupRows, Inputs, Metric, register_metric
from engine.metrics.sections import Block, Heading, Note, Number, Rate, Table, joined, text
from engine.results.video_stats import STAT_COLUMNS

__all__ = ["N_BINS", "item_flags", "quantile_bins", "stat_tables"]

N_BINS = 4
_KEYS = ["model_id", "dataset", "item_id"]
_RATES = (("confused", "confusion"), ("harmed", "harm"), ("overwritten", "overwrite"))


def _harmed() -> pl.Expr:
    visual = pl.col("c").filter(~pl.col("is_text")).sort_by(pl.col("rank").filter(~pl.col("is_text")))
    return (visual.first() & ~visual.last()).fill_null(False)


def item_flags(m: pl.LazyFrame, snapshot: pl.LazyFrame) -> pl.LazyFrame:
    """Per matched item: GROUP, item_id, confused, harmed, overwritten (null without a text-only budget) and
    its video's statistics (`STAT_COLUMNS`, null where unknown); by group and item id."""
    names = snapshot.collect_schema().names()
    stats = [pl.col(f"video_{c}").cast(pl.Float64).alias(c) if f"video_{c}" in names
             else pl.lit(None, dtype=pl.Float64).alias(c) for c in STAT_COLUMNS]
    per_item = snapshot.select(*_KEYS, *stats).unique(subset=_KEYS, keep="first")
    text = text_items(m).select(*GROUP, "item_id", (pl.col("text_correct") & pl.col("any_wrong").fill_null(False))
                                .alias("overwritten"))
    return (
        confusion_items(m).select(*GROUP, "item_id", "confused")
        .join(m.group_by([*GROUP, "item_id"]).agg(_harmed().alias("harmed")), on=[*GROUP, "item_id"])
        .join(text, on=[*GROUP, "item_id"], how="left")
        .join(per_item, on=_KEYS, how="left")
        .sort([*GROUP, "item_id"])
    )


def quantile_bins(values: np.ndarray, n_bins: int = N_BINS) -> np.ndarray:
    """Bin 0..n_bins-1 of each value by its rank (ties share the lower bin): floor((rank_min - 1) x n_bins / n)."""
    n = values.size
    if n == 0:
        return np.empty(0, np.int64)
    order = np.sort(values)
    below = np.searchsorted(order, values, side="left")  # rank_min - 1
    return np.minimum(n_bins - 1, (below * n_bins) // n).astype(np.int64)


def _by_type(weights: np.ndarray, types: np.ndarray, n_types: int) -> np.ndarray:
    """(reps, n_types): per row of `weights` (reps, n), the weight of the items of each type (one bincount)."""
    reps = weights.shape[0]
    cells = (np.arange(reps, dtype=np.int64)[:, None] * n_types + types[None, :]).ravel()
    return np.bincount(cells, weights=weights.ravel(), minlength=reps * n_types).reshape(reps, n_types)


def _auc_from(split: np.ndarray) -> np.ndarray:
    """AUCs from (reps, distinct values ascending, 2): the weight of negatives ([..., 0]) and positives ([..., 1])."""
    neg, pos = split[..., 0], split[..., 1]
    below = np.cumsum(neg, axis=1) - neg
    den = pos.sum(axis=1) * neg.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (pos * (below + 0.5 * neg)).sum(axis=1) / den, np.nan)


def _bin_rates(types: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(reps, 3 x N_BINS): confusion, harm and overwrite per bin (nan: an empty bin, or no known flag in it).

    `types` (`_item_types`) code each item's bin and flags; items of no bin have type -1."""
    known = types >= 0
    cube = _by_type(weights[:, known], types[known], _N_TYPES).reshape(-1, N_BINS, 2, 2, 3)
    n = cube.sum(axis=(2, 3, 4))
    parts = [(cube[:, :, 1].sum(axis=(2, 3)), n), (cube[:, :, :, 1].sum(axis=(2, 3)), n),
             (cube[..., 1].sum(axis=(2, 3)), cube[..., :2].sum(axis=(2, 3, 4)))]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.concatenate([np.where(den > 0, num / den, np.nan) for num, den in parts], axis=1)


_N_TYPES = N_BINS * 12


def _item_types(bins: np.ndarray, flags: dict[str, np.ndarray]) -> np.ndarray:
    """Each item's type for `_bin_rates`: bin x confused x harmed x overwritten (no, yes, unknown); -1 without a bin."""
    over = np.where(np.isnan(flags["overwritten"]), 2, np.nan_to_num(flags["overwritten"])).astype(np.int64)
    t = ((bins * 2 + flags["confused"].astype(np.int64)) * 2 + flags["harmed"].astype(np.int64)) * 3 + over
    return np.where(bins >= 0, t, -1)


def _interval(reps: list[np.ndarray], level: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval per column of the replicates (nan ignored; an all-nan column has none)."""
    stacked = np.concatenate(reps)
    tail = (1.0 - level) / 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "All-NaN slice": that column's interval is nan
        return np.nanquantile(stacked, tail, axis=0), np.nanquantile(stacked, 1.0 - tail, axis=0)


def _one_stat(name: str, g: pl.DataFrame, chunks: list[np.ndarray], level: float) -> Iterator[dict[str, Any]]:
    """The bins (kind "bin") and the AUC (kind "auc") of one statistic in one group's items (item-id order), with
    intervals over the bootstrap replicates `chunks` (count matrices of the group's items, shared by every
    statistic)."""
    values = g[name].to_numpy().astype(np.float64)
    keep = ~np.isnan(values)
    flags = {f: g[f].cast(pl.Float64).fill_null(np.nan).to_numpy().astype(np.float64) for f, _ in _RATES}
    bins = np.full(values.size, -1, np.int64)
    bins[keep] = quantile_bins(values[keep])
    confused = np.nan_to_num(flags["confused"]).astype(bool)
    types = _item_types(bins, flags)
    distinct, group = np.unique(values[keep], return_inverse=True)
    auc_types = group * 2 + confused[keep].astype(np.int64)

    def measure(w: np.ndarray) -> np.ndarray:
        split = _by_type(w[:, keep], auc_types, 2 * distinct.size).reshape(w.shape[0], -1, 2)
        return np.concatenate([_bin_rates(types, w), _auc_from(split)[:, None]], axis=1)

    point = measure(np.ones((1, values.size)))[0]
    lo, hi = (_interval([measure(c) for c in chunks], level) if chunks
              else (np.full(point.size, np.nan), np.full(point.size, np.nan)))
    for b in range(N_BINS):
        mine = keep & (bins == b)
        if not mine.any():
            continue
        row: dict[str, Any] = {"statistic": name, "bin": b + 1, "lo": float(values[mine].min()),
                               "hi": float(values[mine].max()), "n_items": int(mine.sum())}
        for k, (flag, rate) in enumerate(_RATES):
            j = k * N_BINS + b
            row |= {f"n_{flag}": int(np.nansum(flags[flag][mine])), rate: _num(point[j]),
                    f"{rate}_lo": _num(lo[j]), f"{rate}_hi": _num(hi[j])}
        yield {"kind": "bin", **row}
    yield {"kind": "auc", "statistic": name, "n_items": int(keep.sum()), "n_confused": int(confused[keep].sum()),
           "auc": _num(point[-1]), "auc_lo": _num(lo[-1]), "auc_hi": _num(hi[-1])}


def _num(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


_BIN_SCHEMA = {**{k: pl.String() for k in GROUP}, "statistic": pl.String(), "bin": pl.Int64(), "lo": pl.Float64(),
               "hi": pl.Float64(), "n_items": pl.Int64(),
               **{k: t for flag, rate in _RATES for k, t in ((f"n_{flag}", pl.Int64()), (rate, pl.Float64()),
                                                             (f"{rate}_lo", pl.Float64()),
                                                             (f"{rate}_hi", pl.Float64()))}}
_AUC_SCHEMA = {**{k: pl.String() for k in GROUP}, "statistic": pl.String(), "n_items": pl.Int64(),
               "n_confused": pl.Int64(), "auc": pl.Float64(), "auc_lo": pl.Float64(), "auc_hi": pl.Float64()}


def stat_tables(flags: pl.DataFrame, n_boot: int = 1000, seed: int = 0,
                level: float = 0.95) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(bins, auc) of every group and statistic of `item_flags` (collected): see the module docstring.

    Returns:
        bins: GROUP, statistic, bin (1..N_BINS), lo, hi, n_items, then per rate (confusion, harm, overwrite)
        n_<flag>, the rate and its interval (<rate>_lo, <rate>_hi); auc: GROUP, statistic, n_items, n_confused,
        auc, auc_lo, auc_hi. Statistics no item of a group has are left out.
    """
    bins: list[dict[str, Any]] = []
    aucs: list[dict[str, Any]] = []
    for key, g in flags.sort([*GROUP, "item_id"]).group_by(GROUP, maintain_order=True):
        names = [c for c in STAT_COLUMNS if not g[c].is_null().all()]
        # the group's replicates, drawn once (item-id order, as every rate's): the same for every statistic
        chunks = [c for _, c in count_matrices(np.arange(g.height), g.height, n_boot, seed)] if names else []
        for name in names:
            for row in _one_stat(name, g, chunks, level):
                kind = row.pop("kind")
                (bins if kind == "bin" else aucs).append({**dict(zip(GROUP, key, strict=True)), **row})
    return pl.DataFrame(bins, schema=_BIN_SCHEMA), pl.DataFrame(aucs, schema=_AUC_SCHEMA)


def _tables(inputs: Inputs) -> dict[str, pl.LazyFrame]:
    opts = inputs.opts
    flags = item_flags(inputs.m, inputs.snapshot).collect(engine=opts.engine)
    bins, auc = stat_tables(flags, opts.n_boot, opts.seed, opts.level)
    coverage = flags.group_by(GROUP).agg(
        pl.len().cast(pl.Int64).alias("n_items"),
        pl.any_horizontal(pl.col(list(STAT_COLUMNS)).is_not_null()).sum().cast(pl.Int64).alias("n_with_stats")
    ).sort(GROUP)
    return {"bins": bins.lazy(), "auc": auc.lazy(), "coverage": coverage.lazy()}


def _document(rows: GroupRows, opts: Any) -> dict[str, Any] | None:
    cover = rows("coverage")
    if not cover or not cover[0]["n_with_stats"]:
        return None
    bins = rows("bins")

    def ci(r: dict[str, Any], k: str) -> list[float | None]:
        return [r[f"{k}_lo"], r[f"{k}_hi"]]

    stats = []
    for a in rows("auc"):
        mine = [b for b in bins if b["statistic"] == a["statistic"]]
        stats.append({
            "statistic": a["statistic"], "n_items": a["n_items"], "n_confused": a["n_confused"], "auc": a["auc"],
            "auc_ci": ci(a, "auc"),
            "bins": [{"bin": b["bin"], "lo": b["lo"], "hi": b["hi"], "n_items": b["n_items"],
                      **{k: v for flag, rate in _RATES
                         for k, v in ((f"n_{flag}", b[f"n_{flag}"]), (rate, b[rate]), (f"{rate}_ci", ci(b, rate)))}}
                     for b in mine],
        })
    return {"n_items": cover[0]["n_items"], "n_with_stats": cover[0]["n_with_stats"], "n_bins": N_BINS,
            "statistics": stats}


def _cell(v: float | None, c: list[float | None]) -> Rate:
    return Rate(v, (c[0], c[1]))


def _report(g: dict[str, Any], idx: int) -> list[Block]:
    low = g.get("low_level")
    if not low:
        return []
    rows: list[list[object]] = []
    for s in low["statistics"]:
        auc = Number(None) if s["auc"] is None else text(Number(s["auc"]), " [", Number(s["auc_ci"][0]), ", ",
                                                  Number(s["auc_ci"][1]), "]")
        rows.append([s["statistic"], s["n_items"], auc,
                     joined(" / ", (text(Number(b["lo"], significant=3), "-", Number(b["hi"], significant=3))
                                    for b in s["bins"])),
                     *[joined(" / ", (_cell(b[rate], b[f"{rate}_ci"]) for b in s["bins"])) for _, rate in _RATES]])
    note = (f"{low['n_with_stats']} of {low['n_items']} matched items have their video's statistics (from the frames "
            f"the sweep decoded); items cut into {low['n_bins']} quantile bins per statistic, low to high; rates in "
            "points with paired-bootstrap intervals; AUC: how well the statistic ranks confused items above the "
            "others (0.5: not at all)")
    return [Heading("Low-level video statistics and confusion"), Note(note),
            Table(f"table-low-level-{idx}", ["statistic", "items", "AUC for confusion (95% CI)", "bin ranges",
                                             "visual confusion by bin", "harm by bin", "text overwrite by bin"], rows)]


register_metric(Metric(
    name="low_level",
    optional_inputs=tuple(f"video_{c}" for c in STAT_COLUMNS),
    tables=_tables,
    document=_document,
    report=_report,
    description="visual confusion, harm and text overwrite by quantile bins of each video's low-level statistics "
                "(duration, fps, resolution, motion, scene cuts, brightness, contrast, static share), with "
                "bootstrap intervals, and each statistic's rank AUC for confusion",
))
