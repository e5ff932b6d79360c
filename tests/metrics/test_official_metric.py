"""The official scores in `framesweep metrics` (groups[].official_scores) and the report (table-official-N),
Video-MME v2 group scores among them: values by hand (the rows of test_video_official_scores)."""

from __future__ import annotations

import pytest
from helpers.benchmark_rows import v2_rows, videomme_rows
from helpers.metric_rows import lazy

from engine.metrics.document import summary_document
from engine.metrics.options import SummaryOptions
from engine.metrics.registry import METRICS
from engine.metrics.summary import summary_tables
from engine.report import render_report


def _doc() -> dict:
    opts = SummaryOptions(n_boot=0)
    return summary_document(summary_tables(lazy([*v2_rows(), *videomme_rows()]), opts), opts)


def _group(doc: dict, dataset: str) -> dict:
    return next(g for g in doc["groups"] if g["dataset"] == dataset)


def test_metrics_json_carries_the_official_scores_and_the_v2_group_scores() -> None:
    doc = _doc()
    assert METRICS.get("official_scores").name == "official_scores"
    v2 = _group(doc, "videomme_v2")["official_scores"]
    # complete groups 001 (relevance, 3 right: 900/16), 002 (logic [1,[2,3],4], run 2: 400/12), 003 (logic
    # [[1,2],3,4], 0111: q2, parallel to the wrong q1, is right: k = 1, 10); 004 has 3 of its 4 answers:
    # incomplete. 12 of the 15 answers right.
    assert v2 == [
        {"budget_id": "f16", "metric": "accuracy", "subset": None, "value": pytest.approx(12 / 15),
         "headline": False, "missing": None},
        {"budget_id": "f16", "metric": "videomme_v2_logic_score", "subset": None,
         "value": pytest.approx((400 / 12 + 10) / 2), "headline": False, "missing": None},
        {"budget_id": "f16", "metric": "videomme_v2_n_groups", "subset": None, "value": 3.0, "headline": False,
         "missing": None},
        {"budget_id": "f16", "metric": "videomme_v2_n_incomplete", "subset": None, "value": 1.0, "headline": False,
         "missing": None},
        {"budget_id": "f16", "metric": "videomme_v2_relevance_score", "subset": None, "value": 56.25,
         "headline": False, "missing": None},
        {"budget_id": "f16", "metric": "videomme_v2_score", "subset": None,
         "value": pytest.approx((56.25 + 400 / 12 + 10) / 3), "headline": True, "missing": None},
    ]
    vmme = {r["metric"]: r["value"] for r in _group(doc, "videomme")["official_scores"]}
    assert vmme == pytest.approx({"accuracy": 2 / 4, "videomme_accuracy": 2 / 3, "videomme_accuracy_counted": 2 / 4,
                                  "videomme_n_empty": 1.0})


def test_report_shows_the_official_scores() -> None:
    html = render_report(_doc())
    assert 'id="table-official-' in html
    start = html.index("videomme_v2_score")
    assert "33.2" in html[start:start + 200]  # (56.25 + 33.33 + 10) / 3 = 33.19 points
