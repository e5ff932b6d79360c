"""One self-contained HTML report of a results dataset, figures drawn as inline SVG.

Nothing is fetched and nothing runs: no scripts, no external fonts or styles, so the
file reads the same offline. Per (model, dataset) group: the accuracy curve with rescue
and harm bars per transition (``fig-accuracy-N``), the flow of item states across the
grid (``fig-flow-N``), the trajectory-pattern heatmap (``fig-heatmap-N``), per-category
tables (``table-<column>-N``) and the cascade's Pareto front (``fig-cascade-N``).
Built from the metrics document of `engine.metrics.document`. Optional sections, shown
when the document carries them: ``doc["predictor"]`` (groups of
`engine.metrics.predictor.predictor_document`: ``table-predictor-N``,
``fig-predictor-N``, ``table-predictor-confusion-N``) and ``doc["checkpoints"]``
(`engine.metrics.checkpoints.checkpoint_document`: ``table-temporal-trap``,
``fig-trap``, ``table-checkpoints``).
"""

from __future__ import annotations

import html
import logging
from pathlib import Path
from typing import Any

__all__ = ["render_report", "write_report"]

log = logging.getLogger(__name__)

GREEN, RED, GREY, BLUE, ORANGE = "#2e7d32", "#c62828", "#9e9e9e", "#1565c0", "#ef6c00"
PALETTE = (BLUE, ORANGE, GREEN, "#6a1b9a", "#00838f", "#ad1457")
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px}h2{font-size:18px;margin-top:36px;border-bottom:1px solid #ccc}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}svg{display:block;margin:8px 0}
svg text{font-size:11px;fill:#333}.note{color:#666;font-size:12px}
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{100 * value:.{digits}f}"


def _svg(fig_id: str, width: int, height: int, body: list[str], label: str) -> str:
    return (f'<svg id="{_e(fig_id)}" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{_e(label)}">' + "".join(body) + "</svg>")


def _text(x: float, y: float, s: object, anchor: str = "middle", extra: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {extra}>{_e(s)}</text>'


def _rect(x: float, y: float, w: float, h: float, fill: str, tip: str = "", extra: str = "") -> str:
    title = f"<title>{_e(tip)}</title>" if tip else ""
    return (f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{max(h, 0):.1f}" fill="{fill}" '
            f"{extra}>{title}</rect>")


def _line(x1: float, y1: float, x2: float, y2: float, stroke: str, extra: str = "") -> str:
    return f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}" {extra}/>'


class _Scale:
    """Linear map from a data interval onto a pixel interval."""

    def __init__(self, lo: float, hi: float, start: float, end: float) -> None:
        self.lo, self.span, self.start, self.end = lo, max(hi - lo, 1e-9), start, end

    def __call__(self, v: float) -> float:
        return self.start + (self.end - self.start) * (v - self.lo) / self.span


def accuracy_figure(g: dict[str, Any], idx: int) -> str:
    """Accuracy per budget (line) above rescue (up) and harm (down) bars per transition."""
    grid, acc = g["grid"], g["fixed_accuracy"]
    w, left, top, ph, bh = 640, 50, 20, 200, 110
    step = (w - left - 20) / max(len(grid), 1)
    xs = {b: left + (i + 0.5) * step for i, b in enumerate(grid)}
    y = _Scale(0.0, 1.0, top + ph, top)
    body = [_line(left, y(t), w - 20, y(t), "#eee") + _text(left - 6, y(t) + 4, f"{100 * t:.0f}%", "end")
            for t in (0, 0.25, 0.5, 0.75, 1)]
    if g.get("oracle_accuracy") is not None:
        oy = y(g["oracle_accuracy"])
        body.append(_line(left, oy, w - 20, oy, BLUE, 'stroke-dasharray="4 3"')
                    + _text(w - 22, oy - 4, f"oracle {_pct(g['oracle_accuracy'])}%", "end"))
    pts = [(xs[b], y(acc[b])) for b in grid if acc.get(b) is not None]
    if pts:
        body.append('<polyline fill="none" stroke="#333" stroke-width="2" points="'
                    + " ".join(f"{px:.1f},{py:.1f}" for px, py in pts) + '"/>')
    for b in grid:
        if acc.get(b) is not None:
            body.append(f'<circle cx="{xs[b]:.1f}" cy="{y(acc[b]):.1f}" r="4" fill="#333">'
                        f"<title>{_e(b)}: {_pct(acc[b])}%</title></circle>")
        body.append(_text(xs[b], top + ph + 16, b))
    base, flows = top + ph + 30 + bh / 2, g["transitions"]
    scale = (bh / 2 - 12) / max([1] + [max(t["rescue"], t["harm"]) for t in flows])
    body.append(_line(left, base, w - 20, base, "#999")
                + _text(left - 6, base - 6, "rescue", "end") + _text(left - 6, base + 14, "harm", "end"))
    for t in flows:
        mx = (xs[t["from"]] + xs[t["to"]]) / 2
        r, h = t["rescue"] * scale, t["harm"] * scale
        tip = f"{t['from']} -> {t['to']}: rescue {t['rescue']}, harm {t['harm']}, net {_pct(t['net'])} pts"
        body += [_rect(mx - 9, base - r, 18, r, GREEN, tip, 'class="rescue"'), _text(mx, base - r - 3, t["rescue"]),
                 _rect(mx - 9, base, 18, h, RED, tip, 'class="harm"'), _text(mx, base + h + 11, t["harm"])]
    return _svg(f"fig-accuracy-{idx}", w, int(base + bh / 2 + 10), body, "accuracy per budget with rescue and harm")


def _band(x0: float, a0: float, b0: float, x1: float, a1: float, b1: float, fill: str, tip: str) -> str:
    xm = (x0 + x1) / 2
    d = (f"M{x0:.1f},{a0:.1f} C{xm:.1f},{a0:.1f} {xm:.1f},{a1:.1f} {x1:.1f},{a1:.1f} "
         f"L{x1:.1f},{b1:.1f} C{xm:.1f},{b1:.1f} {xm:.1f},{b0:.1f} {x0:.1f},{b0:.1f} Z")
    return f'<path class="flow" d="{d}" fill="{fill}" fill-opacity="0.45"><title>{_e(tip)}</title></path>'


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
        body += [_rect(x[b], top, nw, rh, GREEN, f"{b}: {right[b]} right", 'class="node"'),
                 _rect(x[b], top + rh + gap, nw, wh, RED, f"{b}: {n - right[b]} wrong", 'class="node"'),
                 _text(x[b] + nw / 2, top + ph + 18, b)]
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
    return _svg(f"fig-flow-{idx}", w, top + ph + 28, body, "flow of item states across the grid")


def heatmap_figure(g: dict[str, Any], idx: int, max_rows: int = 40) -> str:
    """Distinct right/wrong trajectories (rows) over the grid (columns), with item counts."""
    grid, pats = g["grid"], g["trajectory_patterns"][:max_rows]
    w, left, top, rh = 640, 10, 34, 14
    cw = (w - left - 150) / max(len(grid), 1)
    total = max([1] + [p["n"] for p in pats])
    body = [_text(left + (i + 0.5) * cw, top - 8, b) for i, b in enumerate(grid)]
    for r, p in enumerate(pats):
        yy = top + r * rh
        for i, bit in enumerate(p["pattern"]):
            color, state = (GREEN, "right") if bit == "1" else (RED, "wrong")
            body.append(_rect(left + i * cw, yy, cw - 1, rh - 1, color, f"{grid[i]}: {state} ({p['n']} items)",
                              'class="cell"'))
        bx = left + len(grid) * cw + 8
        body += [_rect(bx, yy + 2, 100 * p["n"] / total, rh - 4, GREY), _text(bx + 104, yy + rh - 3, p["n"], "start")]
    hidden = len(g["trajectory_patterns"]) - len(pats)
    if hidden > 0:
        body.append(_text(left, top + len(pats) * rh + 12, f"... {hidden} rarer patterns not shown", "start"))
    return _svg(f"fig-heatmap-{idx}", w, top + len(pats) * rh + 20, body, "trajectory heatmap")


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
    sx, sy = _Scale(0.0, xmax, left, left + pw), _Scale(lo, hi, top + ph, top)
    body = [_line(left, top + ph, left + pw, top + ph, "#999"), _line(left, top, left, top + ph, "#999"),
            _text(left + pw / 2, h - 4, "mean frames processed per item"),
            *[_text(left - 6, sy(v) + 4, f"{100 * v:.0f}%", "end") for v in (lo, hi)],
            *[_text(sx(v), top + ph + 14, f"{v:.0f}") for v in (0, xmax / 2, xmax / 1.05)]]
    front = [p for p in c["curve"] if p["tau"] in set(c["pareto_front"]) and p["accuracy"] is not None]
    if front:
        body.append(f'<polyline class="front" fill="none" stroke="{BLUE}" stroke-width="2" points="'
                    + " ".join(f"{sx(p['mean_frames']):.1f},{sy(p['accuracy']):.1f}" for p in front) + '"/>')
    for x, y, tau in pts:
        body.append(f'<circle class="tau" cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{BLUE}">'
                    f"<title>tau {tau}: {_pct(y)}% at {x:.1f} frames</title></circle>")
    for x, y, b in fixed:
        body += [_rect(sx(x) - 4, sy(y) - 4, 8, 8, ORANGE, f"fixed {b}: {_pct(y)}% at {x} frames", 'class="fixed"'),
                 _text(sx(x), sy(y) - 8, b)]
    return _svg(f"fig-cascade-{idx}", w, h, body, "confidence cascade Pareto front")


def _table(table_id: str, head: list[str], rows: list[list[object]]) -> str:
    cells = "".join("<tr>" + "".join(f"<td>{_e(v)}</td>" for v in r) + "</tr>" for r in rows)
    return (f'<table id="{_e(table_id)}"><tr>' + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>"
            + cells + "</table>")


def _category_tables(g: dict[str, Any], idx: int) -> str:
    out = []
    for col, values in g["categories"].items():
        head = [col, "items", *[f"acc {b}" for b in g["grid"]], "oracle", "headroom", "visual confusion"]
        rows = [[v["value"], v["n_items"], *[_pct((v["rates"].get("fixed_accuracy") or {}).get(b)) for b in g["grid"]],
                 _pct(v["rates"].get("oracle_accuracy")), _pct(v["rates"].get("oracle_headroom")),
                 _pct(v["rates"].get("visual_confusion"))] for v in values]
        out.append(f"<h3>By {_e(col)} (points)</h3>" + _table(f"table-{col}-{idx}", head, rows))
    return "".join(out)


def _ci(g: dict[str, Any], metric: str) -> str:
    ci = g["confidence_intervals"].get(metric)
    return f" [{_pct(ci[0])}, {_pct(ci[1])}]" if isinstance(ci, list) and ci[0] is not None else ""


def _headline(g: dict[str, Any]) -> str:
    best = g["best_fixed"] or {}
    ow = (g["text_overwrite"] or {}).get("any") or {}
    term = g["terminal_regression"] or {}
    rows = [["matched items", g["n_items"]], ["excluded (missing a budget)", g["n_excluded"]],
            ["best fixed", f"{best.get('budget_id', 'n/a')}: {_pct(best.get('accuracy'))}{_ci(g, 'best_fixed')}"],
            ["oracle", _pct(g["oracle_accuracy"]) + _ci(g, "oracle_accuracy")],
            ["oracle headroom (pts)", _pct(g["oracle_headroom"]) + _ci(g, "oracle_headroom")],
            ["visual confusion", _pct(g["visual_confusion"]) + _ci(g, "visual_confusion")],
            ["text overwrite (any visual)", _pct(ow.get("share_all"))],
            ["terminal regressions", _pct(term.get("share"))]]
    return _table("", ["metric (points, 95% CI)", "value"], rows)


_FLOW_LEGEND = ('<p class="note">bands: green stays right, blue rescued, orange harmed, red stays wrong; '
                "nodes: items right (top) and wrong (bottom) at each budget</p>")


def _group_section(g: dict[str, Any], idx: int) -> str:
    parts = [f"<h2>{_e(g['model_id'])} on {_e(g['dataset'])}</h2>", _headline(g)]
    if g["n_items"]:
        parts += ["<h3>Accuracy and flips per transition</h3>", accuracy_figure(g, idx),
                  "<h3>Item flows across the grid</h3>", flow_figure(g, idx),
                  _FLOW_LEGEND,
                  "<h3>Trajectories</h3>", heatmap_figure(g, idx)]
    else:
        parts.append('<p class="note">No item has a result at every budget of the grid yet.</p>')
    parts.append(_category_tables(g, idx))
    if g.get("cascade"):
        m = g["cascade"].get("match")
        note = (f"cheapest tau matching {m['fixed_budget']}: tau {m['tau']}, {_pct(m['accuracy'])}% with "
                f"{_pct(m['frames_saved'])}% fewer frames" if m else "no tau matches the fixed budget")
        parts += ["<h3>Confidence cascade</h3>", cascade_figure(g, idx), f'<p class="note">{_e(note)}</p>']
    return "".join(parts)


def predictor_figure(g: dict[str, Any], idx: int) -> str:
    """Accuracy vs mean frames: each fixed budget, the predictor and the cheapest-sufficient oracle."""
    pts = [(f["mean_frames"], f["accuracy"], f"fixed {f['budget_id']}", "fixed", ORANGE) for f in g["fixed"]]
    pts += [(g["mean_frames"], g["accuracy"], "predictor", "predictor", BLUE),
            (g["oracle_mean_frames"], g["oracle_accuracy"], "oracle", "oracle", GREEN)]
    w, h, left, top, pw, ph = 640, 260, 50, 20, 560, 200
    xmax = max([1.0] + [p[0] for p in pts]) * 1.1
    sx, sy = _Scale(0.0, xmax, left, left + pw), _Scale(0.0, 1.0, top + ph, top)
    body = [_line(left, top + ph, left + pw, top + ph, "#999"), _line(left, top, left, top + ph, "#999"),
            _text(left + pw / 2, h - 4, "mean frames per item"),
            *[_text(left - 6, sy(v) + 4, f"{100 * v:.0f}%", "end") for v in (0, 0.5, 1)]]
    for x, y, label, cls, color in pts:
        tip = f"{label}: {_pct(y)}% at {x:.1f} frames"
        shape = (_rect(sx(x) - 4, sy(y) - 4, 8, 8, color, tip, f'class="{cls}"') if cls == "fixed" else
                 f'<circle class="{cls}" cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="5" fill="{color}">'
                 f"<title>{_e(tip)}</title></circle>")
        body += [shape, _text(sx(x), sy(y) - 8, label.removeprefix("fixed "))]
    return _svg(f"fig-predictor-{idx}", w, h, body, "predictor accuracy and frames against fixed budgets")


def _predictor_section(g: dict[str, Any], idx: int) -> str:
    rows: list[list[object]] = [["predictor", _pct(g["accuracy"]), f"{g['mean_frames']:.1f}", "", ""]]
    rows += [[f"fixed {f['budget_id']}", _pct(f["accuracy"]), f"{f['mean_frames']:.1f}", _pct(f["accuracy_delta"]),
              _pct(f["frames_saved"])] for f in g["fixed"]]
    rows.append(["oracle (cheapest right budget)", _pct(g["oracle_accuracy"]), f"{g['oracle_mean_frames']:.1f}",
                 _pct(g["accuracy"] - g["oracle_accuracy"]), ""])
    cols = [*g["grid"], None]
    cells = {(c["predicted"], c["sufficient"]): c["n"] for c in g["confusion"]}
    matrix = [[p, *[cells.get((p, c), 0) for c in cols]] for p in g["grid"]]
    note = (f"{g['n_items']} items; agreement with the cheapest sufficient budget {_pct(g['agreement'])}% of "
            f"{g['n_solvable']} solvable items ({g['n_under']} under, {g['n_over']} over); {g['n_unsolvable']} right "
            f"at no budget; {g['n_unparsed']} unparsed and {g['n_off_grid']} off-grid answers used "
            f"{g['fallback_budget']}")
    return "".join([
        f"<h2>Hybrid-frame predictor {_e(g['predictor_id'])}: {_e(g['model_id'])} on {_e(g['dataset'])}</h2>",
        f'<p class="note">{_e(note)}</p>',
        _table(f"table-predictor-{idx}", ["strategy", "accuracy", "mean frames", "predictor minus it (pts)",
                                          "frames saved (%)"], rows),
        predictor_figure(g, idx),
        "<h3>Predicted budget (rows) x cheapest sufficient budget (columns)</h3>",
        '<p class="note">chosen budget after the fallback; "none": items right at no budget</p>',
        _table(f"table-predictor-confusion-{idx}", ["predicted", *[c or "none" for c in cols]], matrix),
    ])


def trap_figure(c: dict[str, Any]) -> str:
    """Video gain per frame count (solid) and image gain (dashed, below zero = loss) per checkpoint."""
    rows = [r for r in c["temporal_trap"] if r["order"] > 0]
    frames = sorted({r["frames"] for r in rows})
    vals = [v for r in rows for v in (r["video_gain"], r["image_gain"]) if v is not None]
    w, h, left, top, pw, ph = 640, 260, 60, 20, 440, 200
    lim = max([0.05] + [abs(v) for v in vals]) * 1.1
    step = pw / max(len(frames), 1)
    xs = {f: left + (i + 0.5) * step for i, f in enumerate(frames)}
    sy = _Scale(-lim, lim, top + ph, top)
    body = [_line(left, sy(0), left + pw, sy(0), "#999"), _text(left - 6, sy(0) + 4, "0", "end"),
            *[_text(left - 6, sy(v) + 4, f"{100 * v:+.0f}", "end") for v in (-lim / 1.1, lim / 1.1)],
            *[_text(xs[f], top + ph + 14, f"{f} frames") for f in frames]]
    for k, model in enumerate(dict.fromkeys(r["model_id"] for r in rows)):
        color, mine = PALETTE[k % len(PALETTE)], [r for r in rows if r["model_id"] == model]
        pts = [(xs[r["frames"]], sy(r["video_gain"]), r) for r in mine if r["video_gain"] is not None]
        body.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="'
                    + " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in pts) + '"/>')
        body += [f'<circle class="video-gain" cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{color}"><title>'
                 f"{_e(model)} at {r['frames']} frames: video gain {_pct(r['video_gain'])} pts</title></circle>"
                 for x, y, r in pts]
        if mine and mine[0]["image_gain"] is not None:
            iy = sy(mine[0]["image_gain"])
            body.append(f'<line class="image-gain" x1="{left:.1f}" y1="{iy:.1f}" x2="{left + pw:.1f}" y2="{iy:.1f}" '
                        f'stroke="{color}" stroke-dasharray="5 3"><title>{_e(model)}: image gain '
                        f"{_pct(mine[0]['image_gain'])} pts</title></line>")
        ly = top + 10 + 16 * k
        body += [_line(left + pw + 10, ly, left + pw + 30, ly, color, 'stroke-width="2"'),
                 _text(left + pw + 36, ly + 4, model, "start", f'style="fill:{color}"')]
    return _svg("fig-trap", w, h, body, "video gain vs image loss per frame budget")


def _checkpoint_section(c: dict[str, Any]) -> str:
    trap = [[r["model_id"], r["frames"], r["n_video_datasets"], _pct(r["video_accuracy"]), _pct(r["video_gain"]),
             r["n_image_datasets"], _pct(r["image_accuracy"]), _pct(r["image_loss"]), "yes" if r["trapped"] else ""]
            for r in c["temporal_trap"]]
    table = [[r["model_id"], r["dataset"], r["kind"], r["budget_id"], r["n_items"], _pct(r["accuracy"]),
              _pct(r["gain"]), r["rescue"], r["harm"], _pct(r["net"]), _pct(r["churn"])]
             for r in c["table"] if r["order"] > 0]
    note = (f"base: {c['base']}; video benchmarks: {', '.join(c['video_datasets']) or 'none'}; image benchmarks: "
            f"{', '.join(c['image_datasets']) or 'none'}; gains are macro means over datasets on paired items")
    return "".join([
        f"<h2>Checkpoints: temporal trap ({_e(' -> '.join(c['models']))})</h2>", f'<p class="note">{_e(note)}</p>',
        _table("table-temporal-trap", ["checkpoint", "frames", "video datasets", "video acc", "video gain",
                                       "image datasets", "image acc", "image loss", "trapped"], trap),
        trap_figure(c),
        '<p class="note">solid: video gain per frame budget; dashed: image gain (below zero: image loss)</p>',
        "<h3>Per dataset and budget against the base (points)</h3>",
        _table("table-checkpoints", ["checkpoint", "dataset", "kind", "budget", "items", "acc", "gain", "rescue",
                                     "harm", "net", "churn"], table),
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
        rows.append([f"cascade {stages} @ {r['tau']:g}", _pct(r.get("accuracy")), num(r.get("mean_frames_processed")),
                     num(r.get("mean_frames_decoded")), num(r.get("wall_s"))])
        rows.append([f"fixed {r['fixed_budget']}", _pct(r.get("fixed_accuracy")), num(r.get("fixed_mean_frames")),
                     num(r.get("fixed_mean_frames")), num(r.get("fixed_wall_s"))])
        rows.append([f"offline simulation ({_pct(r.get('decision_agreement'))} same stops)", _pct(off.get("accuracy")),
                     num(off.get("mean_frames")), num(off.get("mean_unique_frames")), ""])
    return "<section><h2>Confidence cascade, run online</h2>" + _table(
        "cascade-online", ["policy", "accuracy", "mean frames", "unique frames decoded", "wall s"], rows) + "</section>"


def render_report(doc: dict[str, Any], title: str = "framesweep report") -> str:
    """The HTML page for a metrics document (see `engine.metrics.document`), with its optional sections."""
    body = "".join(_group_section(g, i) for i, g in enumerate(doc["groups"]))
    if not doc["groups"]:
        body = '<p class="note">No results yet.</p>'
    body += "".join(_predictor_section(g, i) for i, g in enumerate(doc.get("predictor") or []))
    if doc.get("checkpoints"):
        body += _checkpoint_section(doc["checkpoints"])
    if doc.get("cascade_online"):
        body += _cascade_online_section(doc["cascade_online"])
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
            f"<style>{_CSS}</style></head><body><h1>{_e(title)}</h1>"
            f'<p class="note">source: {_e(doc.get("source"))}; rates in points.</p>{body}</body></html>')


def write_report(doc: dict[str, Any], path: str | Path, title: str = "framesweep report") -> Path:
    """Write `render_report` to `path` (UTF-8) and return it."""
    out = Path(path)
    out.write_text(render_report(doc, title), encoding="utf-8")
    log.info("wrote %s", out)
    return out
