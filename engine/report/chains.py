"""The figures of one protocol chain, from a group of the metrics document (`engine.metrics.document`).

Each function takes the group (and the document's options where it needs them) and returns a figure,
or None when the group carries nothing to draw (no matched item, no cascade, no transition).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from engine.metrics.cascade import pareto_front
from engine.report.labels import protocol_label
from engine.report.style import (
    BLUE,
    COLUMN,
    GREEN,
    GREY,
    ORANGE,
    RED,
    budget_labels,
    declutter,
    new_figure,
    points,
)

__all__ = ["accuracy_figure", "cascade_figure", "chain_title", "flow_figure", "trajectories_figure",
           "transitions_figure"]

DARK = "#333333"


def chain_title(g: dict[str, Any]) -> str:
    """``MODEL on DATASET, PROTOCOL`` with the protocol in words (`protocol_label`: ``max 448x448 px``)."""
    return f"{g['model_id']} on {g['dataset']}, {protocol_label(g.get('protocol_id', 'default'))}"


def _interval(g: dict[str, Any], metric: str, key: str | None = None) -> tuple[float, float] | None:
    ci = (g.get("confidence_intervals") or {}).get(metric)
    if key is not None:
        ci = ci.get(key) if isinstance(ci, dict) else None
    if isinstance(ci, list) and len(ci) == 2 and None not in ci:
        return points(ci[0]), points(ci[1])
    return None


def accuracy_figure(g: dict[str, Any], level: float = 0.95) -> Figure | None:
    """Accuracy per budget of the chain with its bootstrap band, and the per-item oracle (dashed, with its band)."""
    grid, acc = g["grid"], g["fixed_accuracy"]
    if not g["n_items"] or not grid:
        return None
    fig, ax = new_figure()
    xs = np.arange(len(grid))
    ax.plot(xs, [points(acc.get(b)) for b in grid], marker="o", color=DARK, label="fixed budget", zorder=3)
    bands = [_interval(g, "fixed_accuracy", b) for b in grid]
    ci = f"{100 * level:.0f}% CI"
    if all(bands):
        ax.fill_between(xs, [b[0] for b in bands], [b[1] for b in bands],  # type: ignore[index]
                        color=DARK, alpha=0.15, linewidth=0, label=f"{ci} (paired bootstrap)")
    if g.get("oracle_accuracy") is not None:
        ax.axhline(points(g["oracle_accuracy"]), color=BLUE, linestyle="--", label="oracle (best budget per item)")
        band = _interval(g, "oracle_accuracy")
        if band:
            ax.axhspan(*band, color=BLUE, alpha=0.08, linewidth=0)
    ax.set_xticks(xs, budget_labels(grid, g["budget_frames"]))
    ax.set_xlabel("frames")
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"{chain_title(g)}: {g['n_items']} items", loc="left")
    fig.legend(loc="outside lower center", ncols=2)
    declutter(fig)
    return fig


def _step_label(t: dict[str, Any], labels: dict[str, str]) -> str:
    return f"{labels[t['from']]}\u2192{labels[t['to']]}"


def transitions_figure(g: dict[str, Any]) -> Figure | None:
    """Items rescued (up) and harmed (down) at each step of the chain, with the net change."""
    steps = g["transitions"]
    if not g["n_items"] or not steps:
        return None
    labels = dict(zip(g["grid"], budget_labels(g["grid"], g["budget_frames"]), strict=True))
    fig, ax = new_figure()
    xs = np.arange(len(steps))
    rescue = [t["rescue"] for t in steps]
    harm = [-t["harm"] for t in steps]
    handles = [ax.bar(xs, rescue, width=0.6, color=GREEN, label="rescued (wrong \u2192 right)"),
               ax.bar(xs, harm, width=0.6, color=RED, label="harmed (right \u2192 wrong)"),
               *ax.plot(xs, [r + h for r, h in zip(rescue, harm, strict=True)], "D", color=DARK, markersize=3.5,
                        label="net (rescued \u2212 harmed)")]
    ax.axhline(0, color=GREY, linewidth=0.6)
    ax.set_xticks(xs, [_step_label(t, labels) for t in steps])
    ax.set_xlabel("step along the chain (frames)")
    ax.set_ylabel("items")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    top = max([1, *rescue, *(-h for h in harm)])
    ax.set_ylim(-top * 1.15, top * 1.15)
    ax.yaxis.set_major_formatter(lambda v, _: f"{abs(v):g}")
    ax.set_title(f"{chain_title(g)}: {g['n_items']} items", loc="left")
    fig.legend(handles=handles, loc="outside lower center", ncols=2)
    declutter(fig)
    return fig


def _band(ax: Any, x0: float, x1: float, lo0: float, lo1: float, h: float, color: str) -> None:
    """A smooth band of height h from (x0, lo0) to (x1, lo1)."""
    xs = np.linspace(x0, x1, 40)
    t = (xs - x0) / (x1 - x0)
    lo = lo0 + (lo1 - lo0) * (3 * t**2 - 2 * t**3)
    ax.fill_between(xs, lo, lo + h, color=color, alpha=0.45, linewidth=0)


_FLOWS = (("stay_correct", "r", "r", GREEN, "stays right"), ("rescue", "w", "r", BLUE, "rescued"),
          ("harm", "r", "w", ORANGE, "harmed"), ("stay_wrong", "w", "w", RED, "stays wrong"))


def flow_figure(g: dict[str, Any]) -> Figure | None:
    """Items right (top) and wrong (bottom) at each budget, and the bands of items between budgets."""
    grid, n = g["grid"], g["n_items"] or 0
    if not n or len(grid) < 2:
        return None
    right = {b: round((g["fixed_accuracy"].get(b) or 0) * n) for b in grid}
    gap, w = n * 0.04, 0.12
    fig, ax = new_figure()
    xs = {b: float(i) for i, b in enumerate(grid)}
    for b in grid:  # wrong at the bottom, right above the gap
        ax.bar(xs[b], n - right[b], width=w, bottom=0, color=RED)
        ax.bar(xs[b], right[b], width=w, bottom=n - right[b] + gap, color=GREEN)
    for f in g["flows"]:
        s, t = f["from"], f["to"]
        cursor = {("src", "w"): 0.0, ("src", "r"): n - right[s] + gap,
                  ("dst", "w"): 0.0, ("dst", "r"): n - right[t] + gap}
        for key, a, b, color, _ in _FLOWS:
            h = float(f[key])
            if h > 0:
                _band(ax, xs[s] + w / 2, xs[t] - w / 2, cursor[("src", a)], cursor[("dst", b)], h, color)
                cursor[("src", a)] += h
                cursor[("dst", b)] += h
    ax.set_xticks(list(xs.values()), budget_labels(grid, g["budget_frames"]))
    ax.set_xlabel("frames")
    ax.set_ylabel("items (wrong below, right above)")
    ax.set_ylim(0, n + gap)
    ax.set_title(f"{chain_title(g)}: {n} items", loc="left")
    fig.legend(handles=[Patch(color=c, alpha=0.6, label=lab) for *_, c, lab in _FLOWS],
               loc="outside lower center", ncols=4)
    declutter(fig)
    return fig


def trajectories_figure(g: dict[str, Any], max_rows: int = 20) -> Figure | None:
    """The most frequent right/wrong patterns along the chain (rows) and how many items follow each."""
    pats = (g.get("trajectory_patterns") or [])[:max_rows]
    grid = g["grid"]
    if not g["n_items"] or not pats:
        return None
    fig, (ax, bars) = new_figure(COLUMN, 1.5 + 0.13 * len(pats), cols=2, width_ratios=[3, 1.4], sharey=True)
    cells = np.array([[int(c) for c in p["pattern"]] for p in pats])
    ax.pcolormesh(cells, cmap=_two_colours(), vmin=0, vmax=1, edgecolors="white", linewidth=0.5)
    ax.set_xticks(np.arange(len(grid)) + 0.5, budget_labels(grid, g["budget_frames"]))
    ax.set_xlabel("frames")
    ax.set_yticks(np.arange(len(pats)) + 0.5, [str(k + 1) for k in range(len(pats))])
    ax.set_ylabel("pattern, by frequency")
    ax.invert_yaxis()
    bars.barh(np.arange(len(pats)) + 0.5, [p["n"] for p in pats], height=0.7, color=GREY)
    bars.set_xlabel("items")
    bars.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=3))
    bars.tick_params(axis="y", left=False)
    hidden = len(g.get("trajectory_patterns") or []) - len(pats)
    more = f"; {hidden} rarer patterns not shown" if hidden > 0 else ""
    ax.set_title(f"{chain_title(g)}{more}", loc="left")
    fig.legend(handles=[Patch(color=GREEN, label="right"), Patch(color=RED, label="wrong")],
               loc="outside lower center", ncols=2)
    declutter(fig)
    return fig


def _two_colours() -> Any:
    from matplotlib.colors import ListedColormap

    return ListedColormap([RED, GREEN])


def _front(points: list[tuple[float, float, float]]) -> list[tuple[float, float]]:
    """(cost, accuracy) of the points (cost, accuracy, tie-break) that no other dominates, by cost: the rule of
    `engine.metrics.cascade.pareto_front` (kept when every point of lower or equal cost has a lower accuracy)."""
    if not points:
        return []
    cols = list(zip(*points, strict=True))
    frame = pl.LazyFrame({"chain": [0] * len(points), "mean_frames": cols[0], "accuracy": cols[1], "tau": cols[2]},
                         schema={"chain": pl.Int64, "mean_frames": pl.Float64, "accuracy": pl.Float64,
                                 "tau": pl.Float64})
    return list(pareto_front(frame, ["chain"]).select("mean_frames", "accuracy").collect().iter_rows())


def cascade_figure(g: dict[str, Any]) -> Figure | None:
    """The cascade's accuracy against mean frames per threshold, the fixed budgets, and the Pareto front over both
    (every point drawn: a fixed budget above the cascade's own front is on it; a front of one point is a ring)."""
    c = g.get("cascade")
    curve = [p for p in (c or {}).get("curve") or [] if p["accuracy"] is not None]
    stages = len((c or {}).get("stages") or [])
    if stages < 2 or all(p["mean_stages"] >= stages for p in curve):
        return None  # one stage, or no threshold ever stopped early: no confidences (e.g. imported logs)
    fig, ax = new_figure()
    ax.plot([p["mean_frames"] for p in curve], [points(p["accuracy"]) for p in curve], "o", color=BLUE,
            markersize=3, alpha=0.6, label="cascade, per threshold")
    fixed = [(float(g["budget_frames"][b]), points(a)) for b, a in g["fixed_accuracy"].items()
             if a is not None and g["budget_frames"].get(b)]
    ax.plot([f[0] for f in fixed], [f[1] for f in fixed], "s", color=ORANGE, label="fixed budget")
    front = _front([(p["mean_frames"], points(p["accuracy"]), p["tau"]) for p in curve if p["mean_frames"] is not None]
                   + [(x, y, math.inf) for x, y in fixed])
    if front:
        ax.plot([x for x, _ in front], [y for _, y in front], "-", color=DARK, linewidth=0.8, marker="o",
                markersize=6, mfc="none", label="Pareto front of all points", zorder=1)
    ax.set_xlabel("mean frames processed per item")
    ax.set_ylabel("accuracy (%)")
    ax.set_xlim(left=0)
    ax.set_title(chain_title(g), loc="left")
    fig.legend(loc="outside lower center", ncols=2)
    declutter(fig)
    return fig
