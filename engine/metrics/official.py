"""Each benchmark's official scores in the metrics document and the report.

Per group (model, dataset, chain) and budget of the chain: the rows of
`engine.metrics.benchmark_scores.benchmark_scores` (MME totals and subtasks, POPE, MMStar,
MMBench circular accuracy with its incomplete questions, also per l2 and per leaf category,
Video-MME with empty answers left out, the Video-MME v2 group scores, MVBench, TempCompass,
Video-MMMU, a bridged lmms-eval task's own aggregation; accuracy for every dataset), with their headline flag and, for a null MME total, the subtasks it lacks. The
benchmark is read from the rows' ``dataset_version``. The text-only budget belongs to every
chain, so its scores appear in each.

Registered as the metric ``official_scores`` (JSON key ``groups[].official_scores``: a list of
{budget_id, metric, subset, value, headline, missing}, in chain order; report
``table-official-N``, shown when a group has a score beyond plain accuracy).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from engine.metrics.benchmark_scores import benchmark_scores, score_unit
from engine.metrics.grid import GROUP, budget_table
from engine.metrics.registry import GroupRows, Inputs, Metric, register_metric
from engine.metrics.sections import Block, Heading, Note, Score, Table

__all__ = ["chain_scores"]

_FIELDS = ("budget_id", "metric", "subset", "value", "headline", "missing")


def chain_scores(rows: pl.LazyFrame) -> pl.LazyFrame:
    """`benchmark_scores` of `rows` on the chains: model_id, dataset, protocol_id, budget_id, chain_rank, metric,
    subset, value, headline, missing; by group, chain rank, metric and subset."""
    chains = budget_table(rows).select(*GROUP, "budget_id", "chain_rank")
    return (
        benchmark_scores(rows).join(chains, on=["model_id", "dataset", "budget_id"], how="inner")
        .select(*GROUP, "budget_id", "chain_rank", "metric", "subset", "value", "headline", "missing")
        .sort([*GROUP, "chain_rank", "metric", "subset"], nulls_last=False)
    )


def _tables(inputs: Inputs) -> dict[str, pl.LazyFrame]:
    return {"scores": chain_scores(inputs.snapshot)}


def _document(rows: GroupRows, opts: Any) -> list[dict[str, Any]]:
    return [{k: r[k] for k in _FIELDS} for r in rows("scores")]


def _report(g: dict[str, Any], idx: int) -> list[Block]:
    scores = g.get("official_scores") or []
    if all(r["metric"] == "accuracy" for r in scores):
        return []
    rows = [[r["budget_id"], r["metric"], r["subset"] or "", Score(r["value"], score_unit(r["metric"])),
             "yes" if r["headline"] else "", ", ".join(r["missing"] or [])] for r in scores]
    note = "each benchmark as it publishes its score, over the ok rows of each budget; headline: its own score"
    return [Heading("Official scores (MME and Video-MME v2 in points, counts as counts, the others in %)"), Note(note),
            Table(f"table-official-{idx}", ["budget", "metric", "subset", "score", "headline", "missing subtasks"],
                  rows)]


register_metric(Metric(
    name="official_scores",
    inputs=("dataset_version", "group_id", "group_size", "group_type", "group_structure"),
    optional_inputs=("score_detail",),
    tables=_tables,
    document=_document,
    report=_report,
    higher_is_better=True,
    description="each benchmark's official scores per budget (MME, POPE, MMStar, MMBench circular, Video-MME, "
                "Video-MME v2 group scores, MVBench, TempCompass, Video-MMMU), the headline flagged",
))
