"""One self-contained HTML report of a results dataset, its figures inline SVG.

Nothing is fetched and nothing runs: no scripts, no external fonts or styles, so the file reads
the same offline. The figures are those `framesweep figures` writes as files
(`engine.report.figures`, drawn with matplotlib), each captioned with its file name. First the run
(``doc["run"]``, `engine.report.run_info`: spec, models and their hashes, versions, dates). Then per
(model, dataset, protocol) chain, the primary chain of each model and dataset first: the headline
table, the accuracy curve with its confidence band and the oracle (``fig-accuracy-N``), rescue
and harm per transition (``fig-transitions-N``), the flow of item states across the grid
(``fig-flow-N``), the registered metrics' sections (the trajectories ``fig-trajectories-N``, drawn here
as the file is; the letter prior, each benchmark's official scores ``table-official-N``), per-category tables
(``table-<column>-N``) and the cascade's accuracy-cost front (``fig-cascade-N``, only where the
rows carry confidences and the chain has two visual stages). After the chains of a model and
dataset: robustness across its chains (``table-robustness-N``, ``fig-robustness-N``) and its
iso-compute sets (``table-iso-N-K``, ``fig-iso-N-K``). A section without data is left out.
Built from the metrics document of `engine.metrics.document` (schema
``framesweep.metrics/2``; a document of another schema is refused). Optional sections, shown
when the document carries them: ``doc["predictor"]`` (groups of
`engine.metrics.predictor.predictor_document`: ``table-predictor-N``,
``fig-predictor-N``, ``table-predictor-confusion-N``) and ``doc["checkpoints"]``
(`engine.metrics.checkpoints.checkpoint_document`, laid out by `engine.metrics.checkpoint_report` with
the figures of `engine.report.figures`: on official scores ``table-temporal-trap``, ``fig-trap``, ``table-train-frames``,
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
from engine.metrics.html import CSS, e, pct, table
from engine.metrics.registry import registered_metrics
from engine.report.figures import (
    PaperFigure,
    across_figures,
    chain_figures,
    checkpoint_figures,
    inline_svg,
    predictor_figures,
)
from engine.report.run_info import run_section
from engine.runtime.atomic import atomic_write

__all__ = ["render_report", "write_report"]

log = logging.getLogger(__name__)

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


def _protocol_note(g: dict[str, Any]) -> str:
    p = g.get("protocol") or {}
    size = (f"max_pixels {p['max_pixels']}" if p.get("max_pixels") else
            f"exact pixels {p['exact_pixels']}" if p.get("exact_pixels") else
            f"short side {p['short_side']}" if p.get("short_side") else "decoded size")
    what = (f"{size}, {p.get('policy', 'uniform')} sampling (seed {p.get('seed', 0)}), "
            f"{p.get('pipeline', 'raw')} pipeline")
    return f'<p class="note">chain: {e(" < ".join(g["grid"]))}; protocol: {e(what)}</p>'


def _figure(pf: PaperFigure) -> str:
    return f'<figure>{inline_svg(pf)}<figcaption class="note">{e(pf.caption)}; file {e(pf.name)}</figcaption></figure>'


def _group_section(g: dict[str, Any], idx: int, level: float) -> str:
    primary = " (primary)" if g.get("primary") else ""
    figs = {pf.html_id.rsplit("-", 1)[0]: pf for pf in chain_figures(g, idx, level)}
    parts = [f"<h2>{e(g['model_id'])} on {e(g['dataset'])}, chain {e(g.get('protocol_id', 'default'))}{primary}</h2>",
             _protocol_note(g), _headline(g)]
    if g["n_items"]:
        parts += [f"<h3>{title}</h3>{_figure(figs[kind])}" for kind, title in _CHAIN_FIGURES if kind in figs]
    else:
        parts.append('<p class="note">No item has a result at every budget of the grid yet.</p>')
    for metric in registered_metrics():
        if metric.name in _DRAWN_HERE:
            kind, title = _DRAWN_HERE[metric.name]
            parts.append(f"<h3>{title}</h3>{_figure(figs[kind])}" if kind in figs else "")
        elif metric.report is not None:
            parts.append(metric.report(g, idx))
    parts.append(_category_tables(g, idx))
    if "fig-cascade" in figs and g.get("cascade"):
        parts += ["<h3>Confidence cascade</h3>", _figure(figs["fig-cascade"]), _cascade_match_table(g["cascade"], idx)]
    return "".join(parts)


_DRAWN_HERE = {"trajectory_patterns": ("fig-trajectories", "Trajectories")}
"""Registered metrics whose report section is one of the paper figures: drawn here, as the file is, in their place."""
_CHAIN_FIGURES = (("fig-accuracy", "Accuracy per budget"), ("fig-transitions", "Rescue and harm per transition"),
                  ("fig-flow", "Item flows across the grid"))
"""The chain figures drawn after the headline table (the trajectories are the registered metric's own section)."""


def _predictor_section(g: dict[str, Any], idx: int, figures: list[PaperFigure]) -> str:
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
        *(_figure(pf) for pf in figures),
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
    def counts(r: dict[str, Any], k: str, end: str = "") -> str:
        got = [r.get(f"{k}_{s}{end}") for s in ("a", "b", "both")]
        return "n/a" if None in got else " / ".join(str(v) for v in got)

    def jac(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.2f}"

    rows = [[r["protocol_a"], r["protocol_b"], r["n_items"],
             ", ".join(str(n) for n in r.get("frames_common") or []) or "none",
             counts(r, "confused"), jac(r["jaccard"]), counts(r, "harmed"),
             f"{pct(r['headroom_a'])} / {pct(r['headroom_b'])}",
             f"{pct(r['confusion_rate_a'])} / {pct(r['confusion_rate_b'])}",
             f"{counts(r, 'confused', '_whole')}; {jac(r.get('jaccard_whole'))}",
             f"{pct(r.get('confusion_rate_a_whole'))} / {pct(r.get('confusion_rate_b_whole'))}"] for r in pairs]
    note = ('<p class="note">over the items matched in both chains, compared over the text-only budget and the '
            "frame counts both chains have (a longer chain has more budgets to be confused at); the whole chains "
            "beside, labelled. confused: right at a budget and wrong at a later one of the chain; harmed: right at "
            "the chain's first visual budget, wrong at its last</p>")
    return "<h3>Robustness across chains</h3>" + note + table(
        f"table-robustness-{idx}", ["chain a", "chain b", "items", "common frames", "confused a / b / both",
                                    "jaccard", "harmed a / b / both", "headroom a / b (pts)",
                                    "confusion a / b (pts)", "whole chains: confused a / b / both; jaccard",
                                    "whole chains: confusion a / b (pts)"], rows)


def _iso_tables(sets: list[dict[str, Any]], idx: int, figures: list[PaperFigure | None]) -> str:
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
        if figures[k] is not None:
            out.append(_figure(figures[k]))  # type: ignore[arg-type]
    return "<h3>Iso-compute allocations (pixels actually sent)</h3>" + "".join(out) if out else ""


def _across_chains(doc: dict[str, Any], key: tuple[str, str], idx: int) -> str:
    def mine(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [r for r in rows if (r["model_id"], r["dataset"]) == key]

    pairs, sets = mine(doc.get("robustness") or []), mine(doc.get("iso_compute") or [])
    figs = {pf.html_id: pf for pf in across_figures(doc, key, idx)}
    robust = _robustness_table(pairs, idx) if pairs else ""
    if f"fig-robustness-{idx}" in figs:
        robust += _figure(figs[f"fig-robustness-{idx}"])
    iso = _iso_tables(sets, idx, [figs.get(f"fig-iso-{idx}-{k}") for k in range(len(sets))])
    body = robust + iso
    return f"<section><h2>{e(key[0])} on {e(key[1])}: across chains</h2>{body}</section>" if body else ""


def _groups(doc: dict[str, Any]) -> str:
    """Every chain, and after the chains of each model and dataset what compares them."""
    level = float((doc.get("options") or {}).get("level") or 0.95)
    out, keys = [], list(dict.fromkeys((g["model_id"], g["dataset"]) for g in doc["groups"]))
    for k, key in enumerate(keys):
        out += [_group_section(g, i, level) for i, g in enumerate(doc["groups"])
                if (g["model_id"], g["dataset"]) == key]
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
    predictor = {pf.html_id: pf for pf in predictor_figures(doc)}
    body += "".join(_predictor_section(g, i, [predictor[f"fig-predictor-{i}"]] if f"fig-predictor-{i}" in predictor
                                       else []) for i, g in enumerate(doc.get("predictor") or []))
    if doc.get("checkpoints"):
        c = doc["checkpoints"]
        body += checkpoint_section(c, {pf.html_id: _figure(pf) for pf in checkpoint_figures(c)})
    if doc.get("cascade_online"):
        body += _cascade_online_section(doc["cascade_online"])
    run = run_section(doc["run"]) if doc.get("run") else ""
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>'
            f"<style>{CSS}{_FIGURE_CSS}</style></head><body><h1>{e(title)}</h1>"
            f'<p class="note">source: {e(doc.get("source"))}; rates in points.</p>{run}{body}</body></html>')


_FIGURE_CSS = "figure{margin:8px 0}figcaption{margin-top:2px}pre{font-size:12px;background:#f8f8f8;padding:8px}"


def write_report(doc: dict[str, Any], path: str | Path, title: str = "framesweep report") -> Path:
    """Write `render_report` to `path` (UTF-8) and return it."""
    out = Path(path)
    atomic_write(out, render_report(doc, title).encode("utf-8"))
    log.info("wrote %s", out)
    return out
