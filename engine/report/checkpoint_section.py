"""The report's checkpoint section, from `engine.metrics.checkpoints.checkpoint_document`.

On official scores (the study's numbers): ``table-temporal-trap`` and ``fig-trap`` (video gain
per evaluated frame count vs image loss, per checkpoint), ``table-train-frames`` and
``fig-train-frames`` (video gain and image loss against the frames each checkpoint was trained
on, per architecture and size; hybrid beside the fixed counts: the study's frame-budget figure),
``table-headlines`` (each benchmark's headline score against the base at the budget the
dataset's score is read from, its dearest or an image benchmark's image budget, in its own unit), ``table-benchmark-scores`` (every official score beside the base's)
and ``table-category-deltas`` (MME subtasks, POPE splits, MMBench l2-categories, MVBench tasks,
... and, labelled per question, category accuracies against the base). Per question (every
MMBench rotation and MME question an item): ``table-temporal-trap-per-question``,
``table-train-frames-per-question``, ``table-checkpoint-datasets`` (per checkpoint and dataset at
its score budget: accuracy, delta, rescue and harm) and ``table-checkpoints`` (every dataset
and budget).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.metrics.checkpoint_study import NO_VIDEO, frame_ceilings, frames_label, trap_verdict
from engine.report.cells import metric_score, points
from engine.report.html import e, table

__all__ = ["checkpoint_section"]


def _category_rows(c: dict[str, Any]) -> list[list[object]]:
    """Official subset deltas (MME subtasks, POPE splits, MMBench l2-categories, ...), then per-question
    category accuracies at the budget each dataset's score is read from (``score_budget``: a video dataset's
    dearest, an image dataset's image budget)."""
    out: list[list[object]] = [[r["model_id"], r["dataset"], r["budget_id"], r["metric"], r["subset"],
                                metric_score(r["metric"], r["value"]), metric_score(r["metric"], r["base_value"]),
                                metric_score(r["metric"], r["delta"], True), "", ""]
                               for r in c["score_deltas"] if r["subset"] is not None and not r["headline"]]
    for column, rows in c["per_question"].get("categories", {}).items():
        budget = {(r["base_id"], r["model_id"], r["dataset"]): r["budget_id"] for r in rows if r["score_budget"]}
        out += [[r["model_id"], r["dataset"], r["budget_id"], f"accuracy by {column} (per question)", r[column],
                 points(r["accuracy"]), points(r["base_accuracy"]), points(r["gain"], True), r["rescue"], r["harm"]]
                for r in rows if r["model_id"] != r["base_id"]
                and r["budget_id"] == budget.get((r["base_id"], r["model_id"], r["dataset"]))]
    return out


_TRAP_NOTE = (f"text only: the video benchmarks asked without their video, so no trap verdict ({NO_VIDEO}): its "
              "video gain is what the fine-tune changed in answers without frames. A checkpoint is read on its base's "
              "chains: a note says where they end below the study's most frames (LLaVA-1.5-7B's 4,096-token "
              "context holds 4 frames), so its video gain is not at the others' frame counts.")


def _trap_rows(rows: list[dict[str, Any]], per_question: bool = False) -> list[list[object]]:
    """The trap table's rows: frames 0 labelled text only with no verdict, a note on checkpoints read at fewer
    frames than the study's most (`engine.metrics.checkpoint_study`)."""
    notes, signed = frame_ceilings(rows), not per_question  # (the per-question view's gains print unsigned)
    acc = (lambda r, k: [points(r[f"{k}_accuracy"])]) if per_question else (lambda r, k: [])
    return [[r["model_id"], r["base_id"], frames_label(r["frames"]), r["n_video_datasets"], *acc(r, "video"),
             points(r["video_gain"], signed), r["n_image_datasets"], *acc(r, "image"),
             points(r["image_loss"], signed), trap_verdict(r), notes.get(r["model_id"], "")] for r in rows]


def _train_rows(rows: list[dict[str, Any]], per_question: bool = False) -> list[list[object]]:
    """The train-frames table's rows, with the frames each checkpoint's video gain was read at and its note."""
    notes = frame_ceilings(rows, "video_frames")
    flows = ((lambda r: [f"{r['video_rescue']}/{r['video_harm']}", f"{r['image_rescue']}/{r['image_harm']}"])
             if per_question else (lambda r: []))
    return [[r["architecture"] or "", r["size"] or "", r["train_frames"] or "?", r["label"], r["base_id"],
             "" if r.get("video_frames") is None else r["video_frames"],
             points(r["video_gain"], not per_question), points(r["image_loss"], not per_question), *flows(r),
             "yes" if r["trapped"] else "", notes.get(r["model_id"], "")]
            for r in rows]


def _official(c: dict[str, Any], figures: Mapping[str, str]) -> str:
    trap = _trap_rows(c["temporal_trap"])
    tf = _train_rows(c["train_frames"])
    top = {(r["model_id"], r["dataset"], r["budget_id"]) for r in c["datasets"]}
    heads = [[r["model_id"], r["base_id"], r["dataset"], r["kind"], r["budget_id"], r["metric"], r["subset"] or "",
              metric_score(r["metric"], r["value"]), metric_score(r["metric"], r["base_value"]),
              metric_score(r["metric"], r["delta"], True), ", ".join(r["missing"] or r["base_missing"] or [])]
             for r in c["headlines"] if (r["model_id"], r["dataset"], r["budget_id"]) in top]
    scores = [[r["model_id"], r["dataset"], r["budget_id"], r["metric"], "yes" if r["headline"] else "",
               metric_score(r["metric"], r["value"]), metric_score(r["metric"], r["base_value"]),
               metric_score(r["metric"], r["delta"], True)]
              for r in c["score_deltas"] if r["subset"] is None or r["headline"]]
    return "".join([
        table("table-temporal-trap", ["checkpoint", "base", "frames", "video datasets", "video gain",
                                       "image datasets", "image loss", "trapped", "note"], trap),
        f'<p class="note">{e(_TRAP_NOTE)}</p>',
        figures.get("fig-trap", ""),
        ('<p class="note">solid: video gain per frame budget; dashed: image gain (below zero: image loss); each '
         "benchmark's official delta on its full scale, macro mean over datasets</p>"),
        "<h3>Video gain and image loss against train frames (official scores, points of full scale)</h3>",
        table("table-train-frames", ["architecture", "size", "train frames", "checkpoint", "base", "video frames",
                                      "video gain", "image loss", "trapped", "note"], tf),
        figures.get("fig-train-frames", ""),
        '<p class="note">solid circles: video gain; dashed squares: image loss; hybrid unjoined on the right</p>',
        ("<h3>Headline scores against the base (each benchmark's own unit, at the budget its score is read from: "
         "a video benchmark's dearest, an image benchmark's image budget)</h3>"),
        table("table-headlines", ["checkpoint", "base", "dataset", "kind", "budget", "metric", "subset", "score",
                                   "base score", "delta", "missing subtasks"], heads),
        "<h3>Official scores against the base (MME and Video-MME v2 in points, counts as counts, the others in "
        "%)</h3>",
        table("table-benchmark-scores", ["checkpoint", "dataset", "budget", "metric", "headline", "score", "base",
                                          "delta"], scores),
        "<h3>Fine-grained deltas: subtasks, splits and categories</h3>",
        table("table-category-deltas", ["checkpoint", "dataset", "budget", "metric", "subset", "score", "base",
                                         "delta", "rescue", "harm"], _category_rows(c)),
    ])


def _per_question(c: dict[str, Any]) -> str:
    pq = c["per_question"]
    trap = _trap_rows(pq["temporal_trap"], per_question=True)
    tf = _train_rows(pq["train_frames"], per_question=True)
    per_ds = [[r["model_id"], r["base_id"], r["dataset"], r["kind"], r["budget_id"], r["n_items"], points(r["accuracy"]),
               points(r["base_accuracy"]), points(r["gain"], True), r["rescue"], r["harm"]]
              for r in pq["datasets"] if r["model_id"] != r["base_id"]]
    per_budget = [[r["model_id"], r["dataset"], r["kind"], r["budget_id"], r["n_items"], points(r["accuracy"]),
                   points(r["gain"]), r["rescue"], r["harm"], points(r["net"]), points(r["churn"])]
                  for r in pq["table"] if r["model_id"] != r["base_id"]]
    return "".join([
        "<h3>Per question: every MMBench rotation and every MME question an item (paired items, points)</h3>",
        '<p class="note">accuracy gains on the items the base and all its fine-tunes answered; not the '
        "benchmarks' official scores</p>",
        table("table-temporal-trap-per-question", ["checkpoint", "base", "frames", "video datasets", "video acc",
                                                    "video gain", "image datasets", "image acc", "image loss",
                                                    "trapped", "note"], trap),
        table("table-train-frames-per-question", ["architecture", "size", "train frames", "checkpoint", "base",
                                                   "video frames", "video gain", "image loss", "video R/H",
                                                   "image R/H", "trapped", "note"], tf),
        table("table-checkpoint-datasets", ["checkpoint", "base", "dataset", "kind", "budget", "items", "acc",
                                             "base acc", "delta", "rescue", "harm"], per_ds),
        table("table-checkpoints", ["checkpoint", "dataset", "kind", "budget", "items", "acc", "gain", "rescue",
                                     "harm", "net", "churn"], per_budget),
    ])


def checkpoint_section(c: dict[str, Any], figures: Mapping[str, str]) -> str:
    """The whole checkpoint section of the report: official scores first, the per-question view after.

    Args:
        c: The checkpoint document.
        figures: The section's figures as HTML by id (``fig-trap``, ``fig-train-frames``; one missing is left
            out), as the report draws them (`engine.report.figures`).
    """
    kinds = ", ".join(f"{d} {k}" for d, k in c["dataset_kinds"].items())
    note = (f"bases: {', '.join(c['bases'])}; video benchmarks: {', '.join(c['video_datasets']) or 'none'}; image "
            f"benchmarks: {', '.join(c['image_datasets']) or 'none'}; gains are each benchmark's official score "
            f"against the base (on its full scale), macro means over datasets; a dataset's kind comes from its "
            f"items' media ({kinds})")
    return "".join([
        f"<h2>Checkpoints: temporal trap ({e(', '.join(c['models']))})</h2>", f'<p class="note">{e(note)}</p>',
        _official(c, figures), _per_question(c),
    ])
