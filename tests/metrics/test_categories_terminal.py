"""The `categories` metric's terminal tables (what `framesweep metrics` and the demo print per question kind)."""

from __future__ import annotations

from engine.metrics.categories import _terminal
from engine.metrics.sections import Rate, Table
from engine.report.cells import cell_text


def _value(kind: str, n: int, acc: dict[str, float], rescue: dict[str, float], harm: dict[str, float]) -> dict:
    return {"value": kind, "n_items": n, "rates": {"fixed_accuracy": acc, "oracle_headroom": 0.25,
                                                   "rescue_rate": rescue, "harm_rate": harm}}


def test_each_kind_gets_its_accuracy_per_budget_and_its_rescue_and_harm_per_step() -> None:
    # hand-computed: flash 2 items, right at f16 only (text->f4 nothing, f4->f16 rescues both);
    # shape 2 items, right from f4 on, one harmed at f16
    flash = _value("flash_count", 2, {"text": 0.0, "f4": 0.0, "f16": 1.0}, {"text->f4": 0.0, "f4->f16": 1.0},
                   {"text->f4": 0.0, "f4->f16": 0.0})
    shape = _value("static_shape", 2, {"text": 0.0, "f4": 1.0, "f16": 0.5}, {"text->f4": 1.0, "f4->f16": 0.0},
                   {"text->f4": 0.0, "f4->f16": 0.5})
    same_split = [dict(v, value=v["value"].upper()) for v in (flash, shape)]  # e.g. `category` = `task_type`
    g = {"grid": ["text", "f4", "f16"], "categories": {"task_type": [flash, shape], "category": same_split,
                                                       "duration": [_value("short", 4, {}, {}, {})]}}
    acc, flows = _terminal(g)  # one split printed once; a column with one value says nothing
    assert isinstance(acc, Table) and isinstance(flows, Table)
    assert acc.head == ["task_type", "items", "text", "f4", "f16", "headroom"]
    assert [[cell_text(c) for c in r] for r in acc.rows] == [["flash_count", "2", "0.0", "0.0", "100.0", "25.0"],
                                                             ["static_shape", "2", "0.0", "100.0", "50.0", "25.0"]]
    assert flows.head == ["task_type", "text->f4", "f4->f16"]
    assert [[cell_text(c) for c in r] for r in flows.rows] == [["flash_count", "0.0 / 0.0", "100.0 / 0.0"],
                                                               ["static_shape", "100.0 / 0.0", "0.0 / 50.0"]]
    assert acc.rows[0][2] == Rate(0.0)


def test_a_chain_without_categories_prints_nothing() -> None:
    assert _terminal({"grid": ["text", "f4"], "categories": {}}) == []
