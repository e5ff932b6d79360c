"""Letter-prior bias on hand-made rows: letter distributions, the dominant letter, flagged text overwrite.

Budgets (text, f4); (prediction, answer) per item:
    a: text A / A (right)   f4 A (right)
    b: text A / B (wrong)   f4 B (right)
    c: text A / A (right)   f4 C (wrong)   right text-only with the dominant letter A, overwritten: flagged
    d: text C / C (right)   f4 A (wrong)   overwritten, not flagged
    e: text A / D (wrong)   f4 none (wrong)
text: predictions A x4, C x1 -> dominant A (.8); answers A A B C D -> always A: .4; accuracy .6.
f4: predictions A x2, B, C, none -> dominant A (.4); always A: .4; accuracy .4; one item without a prediction.
"""

from __future__ import annotations

import polars as pl
from helpers.metric_rows import collect_both, frame, lazy

from engine.metrics.document import summary_document
from engine.metrics.grid import matched
from engine.metrics.letter_prior import letter_cells, letter_distribution, letter_prior, prior_overwrite
from engine.metrics.registry import METRICS
from engine.metrics.summary import SummaryOptions, summary_tables
from engine.report import render_report

BUDGETS = {"text": 0, "f4": 4}
ANSWERS = {"a": "A", "b": "B", "c": "A", "d": "C", "e": "D"}
PREDS = {"a": ("A", "A"), "b": ("A", "B"), "c": ("A", "C"), "d": ("C", "A"), "e": ("A", None)}


def _rows() -> pl.LazyFrame:
    marks = {i: "".join("1" if p == ANSWERS[i] else "0" for p in preds) for i, preds in PREDS.items()}
    cells = {(i, b): {"pred": p, "answer": ANSWERS[i]} for i, preds in PREDS.items()
             for b, p in zip(BUDGETS, preds, strict=True)}
    return lazy(frame(marks, budgets=BUDGETS, per_cell=cells))


def _cells() -> pl.LazyFrame:
    rows = _rows()
    return letter_cells(matched(rows), rows)


def test_dominant_letter_and_always_answering_it() -> None:
    got = collect_both(letter_prior(_cells()))
    assert got.select("budget_id", "n_items", "n_no_pred", "accuracy", "dominant_letter", "dominant_share",
                      "always_dominant_accuracy").rows() == [
        ("text", 5, 0, 0.6, "A", 0.8, 0.4),
        ("f4", 5, 1, 0.4, "A", 0.4, 0.4),
    ]


def test_predicted_against_answer_letters() -> None:
    got = collect_both(letter_distribution(_cells()))
    assert got.select("budget_id", "letter", "n_pred", "n_answer", "share_pred", "share_answer").rows() == [
        ("text", "A", 4, 2, 0.8, 0.4), ("text", "B", 0, 1, 0.0, 0.2), ("text", "C", 1, 1, 0.2, 0.2),
        ("text", "D", 0, 1, 0.0, 0.2),
        ("f4", "A", 2, 2, 0.4, 0.4), ("f4", "B", 1, 1, 0.2, 0.2), ("f4", "C", 1, 1, 0.2, 0.2),
        ("f4", "D", 0, 1, 0.0, 0.2),
    ]


def test_text_overwrite_flags_the_dominant_text_letter() -> None:
    items, overwrite = prior_overwrite(_cells())
    assert collect_both(items).select("item_id", "text_pred", "dominant_text_letter", "flagged").rows() == [
        ("a", "A", "A", True), ("c", "A", "A", True), ("d", "C", "A", False)]
    assert collect_both(overwrite).select("budget_id", "n_text_correct", "n_flagged", "n_overwritten",
                                          "n_overwritten_flagged").rows() == [("f4", 3, 2, 2, 1)]


def test_registered_json_key_and_report_section() -> None:
    assert METRICS.get("letter_prior").name == "letter_prior"
    opts = SummaryOptions(n_boot=0)
    doc = summary_document(summary_tables(_rows(), opts), opts)
    lp = doc["groups"][0]["letter_prior"]
    assert [b["budget_id"] for b in lp["by_budget"]] == ["text", "f4"]
    assert lp["by_budget"][0]["predicted"] == {"A": 0.8, "B": 0.0, "C": 0.2, "D": 0.0}
    assert lp["by_budget"][1]["always_dominant_accuracy"] == 0.4
    assert lp["text"] == {"budget_id": "text", "dominant_letter": "A", "n_text_correct": 3, "n_flagged": 2,
                          "flagged_items": ["a", "c"],
                          "overwrite": [{"budget_id": "f4", "n_overwritten": 2, "n_overwritten_flagged": 1}]}
    html = render_report(doc)
    assert 'id="table-letter-prior-0"' in html and 'id="table-text-overwrite-prior-0"' in html


def test_no_text_budget_no_flags() -> None:
    rows = lazy(frame({"p": "10", "q": "01"}, budgets={"f4": 4, "f8": 8}))
    opts = SummaryOptions(n_boot=0)
    lp = summary_document(summary_tables(rows, opts), opts)["groups"][0]["letter_prior"]
    assert lp["text"] is None
    # metric_rows: right answers predict A, wrong ones B; the answer is A
    assert [(b["dominant_letter"], b["always_dominant_accuracy"]) for b in lp["by_budget"]] == [("A", 1.0), ("A", 1.0)]
