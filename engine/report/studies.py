"""Figures across chains and checkpoints: robustness overlaps, iso-compute allocations, the temporal trap,
gain and loss against train frames, and the hybrid-frame predictor.

Each function reads one part of the metrics document (`engine.metrics.document`) or of the checkpoint
document (`engine.metrics.checkpoints`) and returns a figure, or None when that part holds nothing to draw.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from engine.metrics.checkpoint_study import frame_ceilings, frames_label
from engine.report.labels import protocol_label
from engine.report.style import BLUE, COLUMN, GREEN, GREY, ORANGE, PALETTE, declutter, new_figure, points

__all__ = ["iso_figure", "predictor_figure", "robustness_figure", "train_frames_figure", "trap_figure"]


def robustness_figure(pairs: list[dict[str, Any]], model_id: str, dataset: str) -> Figure | None:
    """For each two chains: items confused (and harmed) in one chain only, in both, in the other only."""
    counts = [f"{w}_{s}" for w in ("confused", "harmed") for s in ("a", "b", "both")]
    pairs = [p for p in pairs if p.get("n_items") and all(p.get(c) is not None for c in counts)]
    if not pairs:
        return None
    rows = []
    for p in pairs:
        j = "n/a" if p.get("jaccard") is None else f"{p['jaccard']:.2f}"
        for what in ("confused", "harmed"):
            a, b, both = p[f"{what}_a"], p[f"{what}_b"], p[f"{what}_both"]
            pair = f"{protocol_label(p['protocol_a'])}\nvs {protocol_label(p['protocol_b'])}"
            label = f"{pair}\n{what}" + (f", J = {j}" if what == "confused" else "")
            rows.append((label, a - both, both, b - both))
    fig, ax = new_figure(COLUMN, 1.2 + 0.4 * len(rows))
    ys = np.arange(len(rows))
    left = np.zeros(len(rows))
    for k, (name, color) in enumerate((("first chain only", BLUE), ("both chains", GREY),
                                       ("second chain only", ORANGE))):
        widths = np.array([r[k + 1] for r in rows], dtype=float)
        ax.barh(ys, widths, left=left, height=0.6, color=color, label=name)
        left += widths
    ax.set_yticks(ys, [r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("items (matched in both chains)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(f"{model_id} on {dataset}", loc="left")
    fig.legend(loc="outside lower center", ncols=3)
    declutter(fig)
    return fig


def iso_figure(s: dict[str, Any]) -> Figure | None:
    """One iso-compute set: accuracy of each allocation at about the same pixels sent, and the oracle over them."""
    allocs = s.get("allocations") or []
    if not allocs:
        return None
    fig, ax = new_figure()
    xs = np.arange(len(allocs))
    bars = ax.bar(xs, [points(a["accuracy"]) for a in allocs], width=0.6, color=ORANGE, label="allocation")
    ax.bar_label(bars, labels=[f"{a['n_sole_best']} best\nonly here" if a["accuracy"] and a["accuracy"] > 0.15
                               else "" for a in allocs], label_type="center", fontsize=6, color="white")
    if s.get("oracle_accuracy") is not None:
        ax.axhline(points(s["oracle_accuracy"]), color=GREEN, linestyle="--", label="oracle over the set")
    ax.set_xticks(xs, [f"{a['frames']} fr\n{protocol_label(a['protocol_id'])}" for a in allocs])
    ax.set_xlabel("allocation (frames, protocol)")
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"{s['model_id']} on {s['dataset']}: ~{s['cost']:,.0f} px sent per item, {s['n_items']} items",
                 loc="left")
    fig.legend(loc="outside lower center", ncols=2)
    declutter(fig)
    return fig


def trap_figure(c: dict[str, Any]) -> Figure | None:
    """Per checkpoint: video gain over its base at each evaluated frame count (solid) and image gain (dashed;
    below zero is image loss), each benchmark's official score, macro mean over datasets."""
    rows = [r for r in c.get("temporal_trap") or [] if r["model_id"] != r["base_id"]]
    if not rows:
        return None
    frames = sorted({r["frames"] for r in rows})
    xs = {f: k for k, f in enumerate(frames)}
    capped = {m: max(r["frames"] for r in rows if r["model_id"] == m) for m in frame_ceilings(rows)}
    fig, ax = new_figure()
    for k, model in enumerate(dict.fromkeys(r["model_id"] for r in rows)):
        color, mine = PALETTE[k % len(PALETTE)], [r for r in rows if r["model_id"] == model]
        ax.plot([xs[r["frames"]] for r in mine], [points(r["video_gain"]) for r in mine], "-o", color=color,
                label=model if model not in capped else f"{model} (video at {capped[model]} frames at most)")
        if mine[0]["image_gain"] is not None:
            ax.axhline(points(mine[0]["image_gain"]), color=color, linestyle="--", linewidth=1)
    ax.axhline(0, color=GREY, linewidth=0.6)
    ax.set_xticks(list(xs.values()), [frames_label(f) for f in frames])
    ax.set_xlabel("frames at evaluation (text only: no video, no verdict)" if 0 in xs else "frames at evaluation")
    ax.set_ylabel("gain over the base (points)")
    ax.set_title("video gain (solid), image gain (dashed)", loc="left")
    fig.legend(loc="outside lower center", ncols=min(4, len(ax.get_lines())))
    declutter(fig)
    return fig


def _slot(r: dict[str, Any]) -> str:
    return str(r["train_frames_n"]) if r["train_frames_n"] is not None else (r["train_frames"] or "?")


def train_frames_figure(c: dict[str, Any]) -> Figure | None:
    """Video gain (circles, solid) and image loss (squares, dashed) against the frames each checkpoint was
    trained on, per architecture and size; hybrid and unlabelled checkpoints stand apart on the right."""
    rows = c.get("train_frames") or []
    if not any(r["train_frames"] for r in rows):
        return None  # no checkpoint says what it was trained on
    fixed = sorted({r["train_frames_n"] for r in rows if r["train_frames_n"] is not None})
    slots = [str(f) for f in fixed] + list(dict.fromkeys(_slot(r) for r in rows if r["train_frames_n"] is None))
    xs = {s: k for k, s in enumerate(slots)}
    capped = frame_ceilings(rows, "video_frames")
    fig, ax = new_figure()
    for k, key in enumerate(dict.fromkeys((r["architecture"] or "", r["size"] or "") for r in rows)):
        color = PALETTE[k % len(PALETTE)]
        mine = [r for r in rows if (r["architecture"] or "", r["size"] or "") == key]
        name = " ".join(x for x in key if x) or "checkpoints"
        if capped and all(r.get("model_id") in capped for r in mine):
            name += f" (video at {max((r['video_frames'] or 0) for r in mine)} frames at most)"
        for col, marker, style in (("video_gain", "o", "-"), ("image_loss", "s", "--")):
            joined = [r for r in mine if r["train_frames_n"] is not None and r[col] is not None]
            ax.plot([xs[_slot(r)] for r in joined], [points(r[col]) for r in joined], style, color=color)
            ax.plot([xs[_slot(r)] for r in mine if r[col] is not None],
                    [points(r[col]) for r in mine if r[col] is not None], marker, color=color,
                    mfc=color if marker == "o" else "white", label=name if marker == "o" else None)
    ax.axhline(0, color=GREY, linewidth=0.6)
    ax.set_xticks(list(xs.values()), slots)
    ax.set_xlabel("frames in fine-tuning")
    ax.set_ylabel("points against the base")
    ax.set_title("video gain (circles) and image loss (squares)", loc="left")
    fig.legend(loc="outside lower center", ncols=3)
    declutter(fig)
    return fig


def predictor_figure(g: dict[str, Any]) -> Figure | None:
    """Accuracy against mean frames: each fixed budget, the predictor and the cheapest-sufficient oracle."""
    if not g.get("n_items"):
        return None
    fig, ax = new_figure()
    fixed = g.get("fixed") or []
    ax.plot([f["mean_frames"] for f in fixed], [points(f["accuracy"]) for f in fixed], "s-", color=ORANGE,
            label="fixed budget")
    ax.plot([g["mean_frames"]], [points(g["accuracy"])], "o", color=BLUE, markersize=6, label="predictor")
    ax.plot([g["oracle_mean_frames"]], [points(g["oracle_accuracy"])], "D", color=GREEN, markersize=5,
            label="oracle (cheapest right budget)")
    ax.set_xlabel("mean frames per item")
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 100)
    ax.set_xlim(left=0)
    ax.set_title(f"predictor {g['predictor_id']}: {g['model_id']} on {g['dataset']}", loc="left")
    fig.legend(loc="outside lower center", ncols=3)
    declutter(fig)
    return fig
