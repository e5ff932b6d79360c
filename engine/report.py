"""One self-contained HTML report of a results dataset, figures drawn as inline SVG.

Nothing is fetched and nothing runs: no scripts, no external fonts or styles, so the
file reads the same offline. Per (model, dataset, protocol) chain, the primary chain of each
model and dataset first: the accuracy curve with rescue
and harm bars per transition (``fig-accuracy-N``), the flow of item states across the
grid (``fig-flow-N``), the trajectory-pattern heatmap (``fig-heatmap-N``), per-category
tables (``table-<column>-N``), the cascade's Pareto front (``fig-cascade-N``) and, from the
registered metrics, each benchmark's official scores (``table-official-N``). After the chains of a model and dataset: robustness across its chains
(``table-robustness-N``) and its iso-compute sets (``table-iso-N-K``: accuracy per
allocation, items best only at each, oracle over the set).
Built from the metrics document of `engine.metrics.document` (schema
``framesweep.metrics/2``; a document of another schema is refused). Optional sections, shown
when the document carries them: ``doc["predictor"]`` (groups of
`engine.metrics.predictor.predictor_document`: ``table-predictor-N``,
``fig-predictor-N``, ``table-predictor-confusion-N``) and ``doc["checkpoints"]``
(`engine.metrics.checkpoints.checkpoint_document`, drawn by `engine.metrics.checkpoint_report`:
on official scores ``table-temporal-trap``, ``fig-trap``, ``table-train-frames``,
``fig-train-frames``, ``table-headlines``, ``table-benchmark-scores``, ``table-category-deltas``;
per question ``table-temporal-trap-per-question``, ``table-train-frames-per-question``,
``table-checkpoint-datasets``, ``table-checkpoints``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from engine.metrics.checkpoint_report import checkpoint_section
from engine.metrics.document import SCHEMA
from engine.metrics.html import (
    BLUE,
    CSS,
    GREEN,
    ORANGE,
    RED,
    Scale,
    e,
    line,
    pct,
    rect,
    svg,
    table,
    text,
)
from engine.metrics.registry import registered_metrics
from engine.runtime.atomic import atomic_write

__all__ = ["render_report", "write_report"]

log = logging.getLogger(__name__)

def accuracy_figure(g: dict[str, Any], idx: int) -> str:
    """Accuracy per budget (line) above rescue (up) and harm (down) bars per transition."""
    grid, acc = g["grid"], g["fixed_accuracy"]
    w, left, top, ph, bh = 640, 50, 20, 200, 110
    step = (w - left - 20) / max(len(grid), 1)
    xs = {b: left + (i + 0.5) * step for i, b in enumerate(grid)}
    y = Scale(0.0, 1.0, top + ph, top)
    body = [line(left, y(t), w - 20, y(t), "#eee") + text(left - 6, y(t) + 4, f"{100 * t:.0f}%", "end")
            for t in (0, 0.25, 0.5, 0.75, 1)]
    if g.get("oracle_accuracy") is not None:
        oy = y(g["oracle_accuracy"])
        body.append(line(left, oy, w - 20, oy, BLUE, 'stroke-dasharray="4 3"')
                    + text(w - 22, oy - 4, f"oracle {pct(g['oracle_accuracy'])}%", "end"))
    pts = [(xs[b], y(acc[b])) for b in grid if acc.get(b) is not None]
    if pts:
        body.append('<polyline fill="none" stroke="#333" stroke-width="2" points="'
                    + " ".join(f"{px:.1f},{py:.1f}" for px, py in pts) + '"/>')
    for b in grid:
        if acc.get(b) is not None:
            body.append(f'<circle cx="{xs[b]:.1f}" cy="{y(acc[b]):.1f}" r="4" fill="#333">'
                        f"<title>{e(b)}: {pct(acc[b])}%</title></circle>")
        body.append(text(xs[b], top + ph + 16, b))
    base, flows = top + ph + 30 + bh / 2, g["transitions"]
    scale = (bh / 2 - 12) / max([1] + [max(t["rescue"], t["harm"]) for t in flows])
    body.append(line(left, base, w - 20, base, "#999")
                + text(left - 6, base - 6, "rescue", "end") + text(left - 6, base + 14, "harm", "end"))
    for t in flows:
        mx = (xs[t["from"]] + xs[t["to"]]) / 2
        r, h = t["rescue"] * scale, t["harm"] * scale
        tip = f"{t['from']} -> {t['to']}: rescue {t['rescue']}, harm {t['harm']}, net {pct(t['net'])} pts"
        body += [rect(mx - 9, base - r, 18, r, GREEN, tip, 'class="rescue"'), text(mx, base - r - 3, t["rescue"]),
                 rect(mx - 9, base, 18, h, RED, tip, 'class="harm"'), text(mx, base + h + 11, t["harm"])]
    return svg(f"fig-accuracy-{idx}", w, int(base + bh / 2 + 10), body, "accuracy per budget with rescue and harm")


def _band(x0: float, a0: float, b0: float, x1: float, a1: float, b1: float, fill: str, tip: str) -> str:
    xm = (x0 + x1) / 2
    d = (f"M{x0:.1f},{a0:.1f} C{xm:.1f},{a0:.1f} {xm:.1f},{a1:.1f} {x1:.1f},{a1:.1f} "
         f"L{x1:.1f},{b1:.1f} C{xm:.1f},{b1:.1f} {xm:.1f},{b0:.1f} {x0:.1f},{b0:.1f} Z")
    return f'<path class="flow" d="{d}" fill="{fill}" fill-opacity="0.45"><title>{e(tip)}</title></path>'


def flow_figure(g: dict[str, Any], idx: int) -> str:
    """Sankey-style flow of items between right and wrong along the grid."""
    grid, flows, n = g["grid"], g["flows"], g["n_items"] or 0
    w, left, top, ph, gap, nw = 640, 30, 24, 220, 10, 14
    step = (w - 2 * left - nw) / max(len(grid) - 1, 1)
    unit = (ph - gap) / max(n, 1)
    right = {b: round((g["fixed_accuracy"].get(b) or 0) * n) for b in grid}
    x = {b: left + i * step for i, b in enumerate(grid)}
    body = []
    for b in grid:
        rh, wh = right[b] * unit, (n - right[b]) * unit
        body += [rect(x[b], top, nw, rh, GREEN, f"{b}: {right[b]} right", 'class="node"'),
                 rect(x[b], top + rh + gap, nw, wh, RED, f"{b}: {n - right[b]} wrong", 'class="node"'),
                 text(x[b] + nw / 2, top + ph + 18, b)]
    for f in flows:
        x0, x1, s, t = x[f["from"]] + nw, x[f["to"]], f["from"], f["to"]
        src_r, src_w = top, top + right[s] * unit + gap
        dst_r, dst_w = top, top + right[t] * unit + gap
        parts = [("stay_correct", "r", "r", GREEN), ("harm", "r", "w", ORANGE),
                 ("rescue", "w", "r", BLUE), ("stay_wrong", "w", "w", RED)]
        cursor = {"src_r": src_r, "src_w": src_w, "dst_r": dst_r, "dst_w": dst_w}
        for name, a, b_, color in [parts[0], parts[2], parts[1], parts[3]]:
            h = f[name] * unit
            if h <= 0:
                continue
            y0, y1 = cursor[f"src_{a}"], cursor[f"dst_{b_}"]
            body.append(_band(x0, y0, y0 + h, x1, y1, y1 + h, color, f"{s} -> {t}: {name.replace('_', ' ')} {f[name]}"))
            cursor[f"src_{a}"] += h
            cursor[f"dst_{b_}"] += h
    return svg(f"fig-flow-{idx}", w, top + ph + 28, body, "flow of item states across the grid")


def cascade_figure(g: dict[str, Any], idx: int) -> str:
    """Cascade accuracy vs mean frames per tau, its Pareto front, and the fixed budgets."""
    c = g["cascade"]
    fixed = [(g["budget_frames"].get(b, 0), a, b) for b, a in g["fixed_accuracy"].items()
             if a is not None and g["budget_frames"].get(b)]
    pts = [(p["mean_frames"], p["accuracy"], p["tau"]) for p in c["curve"] if p["accuracy"] is not None]
    w, h, left, top, pw, ph = 640, 320, 50, 20, 560, 260
    xmax = max([1.0] + [p[0] for p in pts] + [f[0] for f in fixed]) * 1.05
    ys = [p[1] for p in pts] + [f[1] for f in fixed]
    lo, hi = max(min(ys, default=0) - 0.05, 0), min(max(ys, default=1) + 0.05, 1)
    sx, sy = Scale(0.0, xmax, left, left + pw), Scale(lo, hi, top + ph, top)
    body = [line(left, top + ph, left + pw, top + ph, "#999"), line(left, top, left, top + ph, "#999"),
            text(left + pw / 2, h - 4, "mean frames processed per item"),
            *[text(left - 6, sy(v) + 4, f"{100 * v:.0f}%", "end") for v in (lo, hi)],
            *[text(sx(v), top + ph + 14, f"{v:.0f}") for v in (0, xmax / 2, xmax / 1.05)]]
    front = [p for p in c["curve"] if p["tau"] in set(c["pareto_front"]) and p["accuracy"] is not None]
    if front:
        body.append(f'<polyline class="front" fill="none" stroke="{BLUE}" stroke-width="2" points="'
                    + " ".join(f"{sx(p['mean_frames']):.1f},{sy(p['accuracy']):.1f}" for p in front) + '"/>')
    for x, y, tau in pts:
        body.append(f'<circle class="tau" cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{BLUE}">'
                    f"<title>tau {tau}: {pct(y)}% at {x:.1f} frames</title></circle>")
    for x, y, b in fixed:
        body += [rect(sx(x) - 4, sy(y) - 4, 8, 8, ORANGE, f"fixed {b}: {pct(y)}% at {x} frames", 'class="fixed"'),
                 text(sx(x), sy(y) - 8, b)]
    return svg(f"fig-cascade-{idx}", w, h, body, "confidence cascade Pareto front")


def _cascade_match_table(c: dict[str, Any], idx: int) -> str:
    """The cascade matched to its fixed budget: tau chosen out of sample (cross-fitted) and in sample."""
    fit, ins = c.get("crossfit"), c.get("match")
    rows: list[list[object]] = []
    if fit:
        taus = ", ".join(f"{f['tau']:g}" for f in fit.get("folds", []) if f["tau"] is not None)
        rows.append([f"cascade, tau out of sample ({fit['k']}-fold cross-fitted: {taus})", pct(fit["accuracy"]),
                     pct(fit["accuracy_delta"]), pct(fit["frames_saved"]), pct(fit["unique_frames_saved"])])
        rows.append([f"fixed {fit['fixed_budget']}", pct(fit["fixed_accuracy"]), "", "", ""])
    if ins:
        rows.append([f"cascade, tau in sample ({ins['tau']:g}; tuned on the items it is scored on)",
                     pct(ins["accuracy"]), pct(ins["accuracy"] - ins["fixed_accuracy"]), pct(ins["frames_saved"]),
                     pct(ins["unique_frames_saved"])])
    if not rows:
        return '<p class="note">no tau matches the fixed budget</p>'
    note = ("" if ins else '<p class="note">in sample, no tau reaches the fixed budget</p>')
    return table(f"table-cascade-match-{idx}", ["policy", "accuracy", "minus fixed (pts)", "frames processed saved",
                                                 "unique frames saved"], rows) + note


def _category_tables(g: dict[str, Any], idx: int) -> str:
    out = []
    for col, values in g["categories"].items():
        head = [col, "items", *[f"acc {b}" for b in g["grid"]], "oracle", "headroom", "visual confusion"]
        rows = [[v["value"], v["n_items"], *[pct((v["rates"].get("fixed_accuracy") or {}).get(b)) for b in g["grid"]],
                 pct(v["rates"].get("oracle_accuracy")), pct(v["rates"].get("oracle_headroom")),
                 pct(v["rates"].get("visual_confusion"))] for v in values]
        out.append(f"<h3>By {e(col)} (points)</h3>" + table(f"table-{col}-{idx}", head, rows))
    return "".join(out)


def _ci(g: dict[str, Any], metric: str) -> str:
    ci = g["confidence_intervals"].get(metric)
    return f" [{pct(ci[0])}, {pct(ci[1])}]" if isinstance(ci, list) and ci[0] is not None else ""


def _headline(g: dict[str, Any]) -> str:
    best = g["best_fixed"] or {}
    ow = (g["text_overwrite"] or {}).get("any") or {}
    term = g["terminal_regression"] or {}
    rows = [["matched items", g["n_items"]], ["excluded (missing a budget)", g["n_excluded"]],
            ["best fixed", f"{best.get('budget_id', 'n/a')}: {pct(best.get('accuracy'))}{_ci(g, 'best_fixed')}"],
            ["oracle", pct(g["oracle_accuracy"]) + _ci(g, "oracle_accuracy")],
            ["oracle headroom (pts)", pct(g["oracle_headroom"]) + _ci(g, "oracle_headroom")],
            ["visual confusion", pct(g["visual_confusion"]) + _ci(g, "visual_confusion")],
            ["text overwrite (any visual)", pct(ow.get("share_all"))],
            ["terminal regressions (wrong at the top, right at a cheaper visual budget)", pct(term.get("share"))]]
    for r in term.get("sampling_recovery") or []:
        who = "any alternate policy" if r["alt_budget_id"] == "any" else r["alt_budget_id"]
        counts = f"{r['n_recovered']} of {term.get('n_terminal')}; {r['n_missing_alt']} without a result"
        rows.append([f"recovered by {who} (of all terminal; of those with a result)",
                     f"{pct(r['share'])}; {pct(r.get('share_with_alt'))} ({counts})"])
    return table("", ["metric (points, 95% CI)", "value"], rows)


_FLOW_LEGEND = ('<p class="note">bands: green stays right, blue rescued, orange harmed, red stays wrong; '
                "nodes: items right (top) and wrong (bottom) at each budget</p>")


def _protocol_note(g: dict[str, Any]) -> str:
    p = g.get("protocol") or {}
    size = (f"max_pixels {p['max_pixels']}" if p.get("max_pixels") else
            f"short side {p['short_side']}" if p.get("short_side") else "decoded size")
    what = (f"{size}, {p.get('policy', 'uniform')} sampling (seed {p.get('seed', 0)}), "
            f"{p.get('pipeline', 'raw')} pipeline")
    return f'<p class="note">chain: {e(" < ".join(g["grid"]))}; protocol: {e(what)}</p>'


def _group_section(g: dict[str, Any], idx: int) -> str:
    primary = " (primary)" if g.get("primary") else ""
    parts = [f"<h2>{e(g['model_id'])} on {e(g['dataset'])}, chain {e(g.get('protocol_id', 'default'))}{primary}</h2>",
             _protocol_note(g), _headline(g)]
    if g["n_items"]:
        parts += ["<h3>Accuracy and flips per transition</h3>", accuracy_figure(g, idx),
                  "<h3>Item flows across the grid</h3>", flow_figure(g, idx),
                  _FLOW_LEGEND]
    else:
        parts.append('<p class="note">No item has a result at every budget of the grid yet.</p>')
    parts += [metric.report(g, idx) for metric in registered_metrics() if metric.report is not None]
    parts.append(_category_tables(g, idx))
    if g.get("cascade"):
        parts += ["<h3>Confidence cascade</h3>", cascade_figure(g, idx), _cascade_match_table(g["cascade"], idx)]
    return "".join(parts)


def predictor_figure(g: dict[str, Any], idx: int) -> str:
    """Accuracy vs mean frames: each fixed budget, the predictor and the cheapest-sufficient oracle."""
    pts = [(f["mean_frames"], f["accuracy"], f"fixed {f['budget_id']}", "fixed", ORANGE) for f in g["fixed"]]
    pts += [(g["mean_frames"], g["accuracy"], "predictor", "predictor", BLUE),
            (g["oracle_mean_frames"], g["oracle_accuracy"], "oracle", "oracle", GREEN)]
    w, h, left, top, pw, ph = 640, 260, 50, 20, 560, 200
    xmax = max([1.0] + [p[0] for p in pts]) * 1.1
    sx, sy = Scale(0.0, xmax, left, left + pw), Scale(0.0, 1.0, top + ph, top)
    body = [line(left, top + ph, left + pw, top + ph, "#999"), line(left, top, left, top + ph, "#999"),
            text(left + pw / 2, h - 4, "mean frames per item"),
            *[text(left - 6, sy(v) + 4, f"{100 * v:.0f}%", "end") for v in (0, 0.5, 1)]]
    for x, y, label, cls, color in pts:
        tip = f"{label}: {pct(y)}% at {x:.1f} frames"
        shape = (rect(sx(x) - 4, sy(y) - 4, 8, 8, color, tip, f'class="{cls}"') if cls == "fixed" else
                 f'<circle class="{cls}" cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="5" fill="{color}">'
                 f"<title>{e(tip)}</title></circle>")
        body += [shape, text(sx(x), sy(y) - 8, label.removeprefix("fixed "))]
    return svg(f"fig-predictor-{idx}", w, h, body, "predictor accuracy and frames against fixed budgets")


def _predictor_section(g: dict[str, Any], idx: int) -> str:
    rows: list[list[object]] = [["predictor", pct(g["accuracy"]), f"{g['mean_frames']:.1f}", "", ""]]
    rows += [[f"fixed {f['budget_id']}", pct(f["accuracy"]), f"{f['mean_frames']:.1f}", pct(f["accuracy_delta"]),
              pct(f["frames_saved"])] for f in g["fixed"]]
    rows.append(["oracle (cheapest right budget)", pct(g["oracle_accuracy"]), f"{g['oracle_mean_frames']:.1f}",
                 pct(g["accuracy"] - g["oracle_accuracy"]), ""])
    cols = [*g["grid"], None]
    cells = {(c["predicted"], c["sufficient"]): c["n"] for c in g["confusion"]}
    matrix = [[p, *[cells.get((p, c), 0) for c in cols]] for p in g["grid"]]
    note = (f"{g['n_items']} items; agreement with the cheapest sufficient budget {pct(g['agreement'])}% of "
            f"{g['n_solvable']} solvable items ({g['n_under']} under, {g['n_over']} over); {g['n_unsolvable']} right "
            f"at no budget; {g['n_unparsed']} unparsed and {g['n_off_grid']} off-grid answers used "
            f"{g['fallback_budget']}")
    return "".join([
        f"<h2>Hybrid-frame predictor {e(g['predictor_id'])}: {e(g['model_id'])} on {e(g['dataset'])}</h2>",
        f'<p class="note">{e(note)}</p>',
        table(f"table-predictor-{idx}", ["strategy", "accuracy", "mean frames", "predictor minus it (pts)",
                                          "frames saved (%)"], rows),
        predictor_figure(g, idx),
        "<h3>Predicted budget (rows) x cheapest sufficient budget (columns)</h3>",
        '<p class="note">chosen budget after the fallback; "none": items right at no budget</p>',
        table(f"table-predictor-confusion-{idx}", ["predicted", *[c or "none" for c in cols]], matrix),
    ])


def _cascade_online_section(sessions: list[dict[str, Any]]) -> str:
    """The online cascade runs (`framesweep cascade`): cost and accuracy beside the fixed budget and
    the offline simulation of the same threshold."""
    def num(v: object) -> str:
        return "" if v is None else f"{v:.1f}"  # type: ignore[str-format]

    rows = []
    for r in sessions:
        off = r.get("offline") or {}
        stages = " → ".join(r["stages"])
        rows.append([f"cascade {stages} @ {r['tau']:g}", pct(r.get("accuracy")), num(r.get("mean_frames_processed")),
                     num(r.get("mean_frames_decoded")), num(r.get("wall_s"))])
        rows.append([f"fixed {r['fixed_budget']}", pct(r.get("fixed_accuracy")), num(r.get("fixed_mean_frames")),
                     num(r.get("fixed_mean_frames")), num(r.get("fixed_wall_s"))])
        rows.append([f"offline simulation ({pct(r.get('decision_agreement'))} same stops)", pct(off.get("accuracy")),
                     num(off.get("mean_frames")), num(off.get("mean_unique_frames")), ""])
    timing = []
    for k, r in enumerate(sessions):
        left = r.get("skipped_models") or {}
        if left:
            timing.append('<p class="note">' + e("left out (stages above the model's max_frames): " + "; ".join(
                f"{m}: {', '.join(ids)}" for m, ids in left.items())) + "</p>")
        per = [[x["round"], x["order"][0], num(x["fixed_wall_s"]), num(x["cascade_wall_s"]), f"{x['ratio']:.3f}"]
               for x in r.get("rounds") or []]
        if per:
            note = (f"cascade / fixed wall time: median {r['ratio_median']:.3f}, range {r['ratio_min']:.3f}-"
                    f"{r['ratio_max']:.3f} over {len(per)} rounds; each policy started from cold engine caches "
                    "(prefix and multimodal caches reset) and the policies alternated which ran first")
            timing.append(f'<p class="note">{e(note)}</p>' + table(
                f"cascade-rounds-{k}", ["round", "first", "fixed wall s", "cascade wall s", "cascade / fixed"], per))
    return "<section><h2>Confidence cascade, run online</h2>" + table(
        "cascade-online", ["policy", "accuracy", "mean frames", "unique frames decoded", "wall s (median)"], rows) \
        + "".join(timing) + "</section>"


def _robustness_table(pairs: list[dict[str, Any]], idx: int) -> str:
    rows = [[r["protocol_a"], r["protocol_b"], r["n_items"],
             f"{r['confused_a']} / {r['confused_b']} / {r['confused_both']}",
             "n/a" if r["jaccard"] is None else f"{r['jaccard']:.2f}",
             f"{r['harmed_a']} / {r['harmed_b']} / {r['harmed_both']}",
             f"{pct(r['headroom_a'])} / {pct(r['headroom_b'])}",
             f"{pct(r['confusion_rate_a'])} / {pct(r['confusion_rate_b'])}"] for r in pairs]
    note = ('<p class="note">over the items matched in both chains; confused: right at a budget and wrong at a '
            "later one of the chain; harmed: right at the chain's first visual budget, wrong at its last</p>")
    return "<h3>Robustness across chains</h3>" + note + table(
        f"table-robustness-{idx}", ["chain a", "chain b", "items", "confused a / b / both", "jaccard",
                                    "harmed a / b / both", "headroom a / b (pts)", "confusion a / b (pts)"], rows)


def _iso_tables(sets: list[dict[str, Any]], idx: int) -> str:
    out = []
    for k, s in enumerate(sets):
        rows = [[a["budget_id"], a["protocol_id"], a["frames"], f"{a['budget_cost']:,.0f}", pct(a["accuracy"]),
                 a["n_best"], a["n_sole_best"]] for a in s["allocations"]]
        note = (f"~{s['cost']:,.0f} pixels sent per item, {s['n_items']} items answered at every allocation; best "
                f"single {s['best_allocation']} {pct(s['best_accuracy'])}, oracle over the set "
                f"{pct(s['oracle_accuracy'])} (headroom {pct(s['oracle_headroom'])} pts); right at all "
                f"{s['n_all_right']}, at none {s['n_none_right']}")
        out.append(f'<p class="note">{e(note)}</p>' + table(
            f"table-iso-{idx}-{k}", ["allocation", "protocol", "frames", "pixels sent per item", "accuracy",
                                     "items right", "items best only here"], rows))
    return "<h3>Iso-compute allocations (pixels actually sent)</h3>" + "".join(out) if out else ""


def _across_chains(doc: dict[str, Any], key: tuple[str, str], idx: int) -> str:
    def mine(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [r for r in rows if (r["model_id"], r["dataset"]) == key]

    pairs, sets = mine(doc.get("robustness") or []), mine(doc.get("iso_compute") or [])
    body = (_robustness_table(pairs, idx) if pairs else "") + _iso_tables(sets, idx)
    return f"<section><h2>{e(key[0])} on {e(key[1])}: across chains</h2>{body}</section>" if body else ""


def _groups(doc: dict[str, Any]) -> str:
    """Every chain, and after the chains of each model and dataset what compares them."""
    out, keys = [], list(dict.fromkeys((g["model_id"], g["dataset"]) for g in doc["groups"]))
    for k, key in enumerate(keys):
        out += [_group_section(g, i) for i, g in enumerate(doc["groups"]) if (g["model_id"], g["dataset"]) == key]
        out.append(_across_chains(doc, key, k))
    return "".join(out)


def render_report(doc: dict[str, Any], title: str = "framesweep report") -> str:
    """The HTML page for a metrics document (see `engine.metrics.document`), with its optional sections.

    Raises:
        ValueError: `doc` declares another schema than ``framesweep.metrics/2`` (a metrics/1 document has
            one chain per model and dataset and would be misread).
    """
    schema = doc.get("schema", SCHEMA)
    if schema != SCHEMA:
        raise ValueError(f"metrics document schema {schema!r}: this report reads {SCHEMA!r} (one group per "
                         "protocol chain); compute it again with `framesweep metrics DIR --json`")
    body = _groups(doc)
    if not doc["groups"]:
        body = '<p class="note">No results yet.</p>'
    body += "".join(_predictor_section(g, i) for i, g in enumerate(doc.get("predictor") or []))
    if doc.get("checkpoints"):
        body += checkpoint_section(doc["checkpoints"])
    if doc.get("cascade_online"):
        body += _cascade_online_section(doc["cascade_online"])
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>'
            f"<style>{CSS}</style></head><body><h1>{e(title)}</h1>"
            f'<p class="note">source: {e(doc.get("source"))}; rates in points.</p>{body}</body></html>')


def write_report(doc: dict[str, Any], path: str | Path, title: str = "framesweep report") -> Path:
    """Write `render_report` to `path` (UTF-8) and return it."""
    out = Path(path)
    atomic_write(out, render_report(doc, title).encode("utf-8"))
    log.info("wrote %s", out)
    return out
