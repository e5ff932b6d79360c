"""Every metric per protocol chain, and robustness across chains, on a hand-built four-protocol sweep.

Budgets: {text, f8, f16, f32} (default), {f16, f32} at px50176, {f16, f32} random-seed1 and
{f16, f32} cached; the text-only budget is every chain's. Trajectories, cheapest first:

    default       text f8 f16 f32      px50176  f16 f32    random-seed1 f16 f32    cached f16 f32
    a              1   0   1   0                 1   1                  0   0             1   0
    b              0   1   1   1                 1   0                  1   1             0   1
    c              1   1   0   0                 0   1                  1   0             0   0
    d              0   0   0   1                 0   0                  1   1             .   1
    e              1   1   1   1                 1   1                  0   1             1   1

d has no f16-cached row, so the cached chain has 4 items (d excluded), the others 5.
Confused (right at a budget, wrong at a later one): default {a, c}, px50176 {b, c},
random-seed1 {a, c, e}, cached {a, c}. Harmed (right at the first visual budget, wrong at
the last): default {c}, px50176 {b}, random-seed1 {c}, cached {a}.
"""

from __future__ import annotations

import json

import polars as pl
import pytest
from helpers.metric_rows import collect_both, lazy, row

from engine.metrics.document import summary_document
from engine.metrics.grid import matched
from engine.metrics.robustness import robustness
from engine.metrics.summary import SummaryOptions, summary_tables

TEXT = {"a": "1", "b": "0", "c": "1", "d": "0", "e": "1"}
CHAINS = {  # protocol -> (budget -> (frames, extra columns)), item -> marks
    "default": ({"f8": (8, {}), "f16": (16, {}), "f32": (32, {})},
                {"a": "010", "b": "111", "c": "100", "d": "001", "e": "111"}),
    "px50176": ({"f16-px50176": (16, {"max_pixels": 50176}), "f32-px50176": (32, {"max_pixels": 50176})},
                {"a": "11", "b": "10", "c": "01", "d": "00", "e": "11"}),
    "random-seed1": ({"f16-random-seed1": (16, {"policy": "random", "seed": 1}),
                      "f32-random-seed1": (32, {"policy": "random", "seed": 1})},
                     {"a": "00", "b": "11", "c": "10", "d": "11", "e": "01"}),
    "cached": ({"f16-cached": (16, {"pipeline": "cached"}), "f32-cached": (32, {"pipeline": "cached"})},
               {"a": "10", "b": "01", "c": "00", "d": ".1", "e": "11"}),
}


def _rows() -> pl.LazyFrame:
    rows = [row("m", "d", i, "text", 0, mark) for i, mark in TEXT.items()]
    for budgets, items in CHAINS.values():
        for item, marks in items.items():
            for (b, (frames, extra)), mark in zip(budgets.items(), marks, strict=True):
                if mark != ".":
                    rows.append(row("m", "d", item, b, frames, mark, **extra))
    return lazy(rows)


@pytest.fixture(scope="module")
def doc() -> dict:
    opts = SummaryOptions(n_boot=0, taus=(1.0,))
    docs = [summary_document(summary_tables(_rows(), SummaryOptions(**{**opts.__dict__, "engine": e})), opts)
            for e in ("streaming", "in-memory")]
    assert json.dumps(docs[0], allow_nan=False) == json.dumps(docs[1], allow_nan=False)
    return docs[0]


def _groups(doc: dict) -> dict[str, dict]:
    return {g["protocol_id"]: g for g in doc["groups"]}


def test_four_chains_share_the_text_budget_and_drop_or_merge_no_budget(doc: dict) -> None:
    g = _groups(doc)
    assert list(g) == ["default", "cached", "px50176", "random-seed1"]  # the primary (most budgets) leads
    assert [x["primary"] for x in g.values()] == [True, False, False, False]
    assert {p: x["grid"] for p, x in g.items()} == {
        "default": ["text", "f8", "f16", "f32"], "cached": ["text", "f16-cached", "f32-cached"],
        "px50176": ["text", "f16-px50176", "f32-px50176"],
        "random-seed1": ["text", "f16-random-seed1", "f32-random-seed1"]}
    assert {p: (x["n_items"], x["n_excluded"]) for p, x in g.items()} == {
        "default": (5, 0), "cached": (4, 1), "px50176": (5, 0), "random-seed1": (5, 0)}
    none = {"max_pixels": None, "short_side": None, "min_pixels": None, "exact_pixels": None, "policy": "uniform",
            "seed": 0, "pipeline": "raw"}
    assert {p: x["protocol"] for p, x in g.items()} == {
        "default": none, "cached": {**none, "pipeline": "cached"}, "px50176": {**none, "max_pixels": 50176},
        "random-seed1": {**none, "policy": "random", "seed": 1}}


def test_per_chain_values_match_the_hand_computed_reference(doc: dict) -> None:
    g = _groups(doc)
    assert {p: x["fixed_accuracy"] for p, x in g.items()} == {
        "default": {"text": 3 / 5, "f8": 3 / 5, "f16": 3 / 5, "f32": 3 / 5},
        "cached": {"text": 3 / 4, "f16-cached": 2 / 4, "f32-cached": 2 / 4},
        "px50176": {"text": 3 / 5, "f16-px50176": 3 / 5, "f32-px50176": 3 / 5},
        "random-seed1": {"text": 3 / 5, "f16-random-seed1": 3 / 5, "f32-random-seed1": 3 / 5}}
    assert {p: (x["best_fixed"], x["oracle_accuracy"], x["oracle_headroom"]) for p, x in g.items()} == {
        "default": ({"budget_id": "text", "accuracy": 3 / 5}, 1.0, 1.0 - 3 / 5),
        "cached": ({"budget_id": "text", "accuracy": 3 / 4}, 1.0, 1.0 - 3 / 4),
        "px50176": ({"budget_id": "text", "accuracy": 3 / 5}, 4 / 5, 4 / 5 - 3 / 5),
        "random-seed1": ({"budget_id": "text", "accuracy": 3 / 5}, 1.0, 1.0 - 3 / 5)}
    assert {p: (x["visual_confusion"], x["visual_confusion_visual_only"]) for p, x in g.items()} == {
        "default": (2 / 5, 2 / 5), "cached": (2 / 4, 1 / 4), "px50176": (2 / 5, 1 / 5), "random-seed1": (3 / 5, 1 / 5)}
    assert [(t["from"], t["to"], t["rescue"], t["harm"]) for t in g["default"]["transitions"]] == [
        ("text", "f8", 1, 1), ("f8", "f16", 1, 1), ("f16", "f32", 1, 1)]
    assert [(t["from"], t["to"], t["rescue"], t["harm"]) for t in g["px50176"]["transitions"]] == [
        ("text", "f16-px50176", 1, 1), ("f16-px50176", "f32-px50176", 1, 1)]
    assert g["default"]["text_overwrite"] == {
        "n_text_correct": 3, "any": {"share_all": 2 / 5, "share_text_correct": 2 / 3},
        "all": {"share_all": 0.0, "share_text_correct": 0.0},
        "by_budget": {"f8": {"share_all": 1 / 5, "share_text_correct": 1 / 3},
                      "f16": {"share_all": 1 / 5, "share_text_correct": 1 / 3},
                      "f32": {"share_all": 2 / 5, "share_text_correct": 2 / 3}}}
    terminal = {p: (x["terminal_regression"]["max_budget"], x["terminal_regression"]["n_terminal"])
                for p, x in g.items()}
    assert terminal == {"default": ("f32", 2), "cached": ("f32-cached", 1), "px50176": ("f32-px50176", 1),
                        "random-seed1": ("f32-random-seed1", 1)}


ROBUSTNESS = [  # (a, b, n, confused a, b, both, jaccard, harmed a, b, both, headroom a, b, confusion rate a, b)
    # over the text-only budget and the frame counts both chains have: default's f8 is left out when it is paired
    # with a {f16, f32} chain, so default harms {a} (right at f16, wrong at f32), not {c} (right at f8)
    ("cached", "default", 4, 2, 2, 2, 1.0, 1, 1, 1, 1.0 - 3 / 4, 1.0 - 3 / 4, 2 / 4, 2 / 4),
    ("cached", "px50176", 4, 2, 2, 1, 1 / 3, 1, 1, 0, 1.0 - 3 / 4, 1.0 - 3 / 4, 2 / 4, 2 / 4),
    ("cached", "random-seed1", 4, 2, 3, 2, 2 / 3, 1, 1, 0, 1.0 - 3 / 4, 1.0 - 3 / 4, 2 / 4, 3 / 4),
    ("default", "px50176", 5, 2, 2, 1, 1 / 3, 1, 1, 0, 1.0 - 3 / 5, 4 / 5 - 3 / 5, 2 / 5, 2 / 5),
    ("default", "random-seed1", 5, 2, 3, 2, 2 / 3, 1, 1, 0, 1.0 - 3 / 5, 1.0 - 3 / 5, 2 / 5, 3 / 5),
    ("px50176", "random-seed1", 5, 2, 3, 1, 1 / 4, 1, 1, 0, 4 / 5 - 3 / 5, 1.0 - 3 / 5, 2 / 5, 3 / 5),
]
ROBUSTNESS_WHOLE = [  # the same over the whole chains (default with its f8): harmed default {c}
    ("cached", "default", 4, 2, 2, 2, 1.0, 1, 1, 0, 1.0 - 3 / 4, 1.0 - 3 / 4, 2 / 4, 2 / 4),
    ("cached", "px50176", 4, 2, 2, 1, 1 / 3, 1, 1, 0, 1.0 - 3 / 4, 1.0 - 3 / 4, 2 / 4, 2 / 4),
    ("cached", "random-seed1", 4, 2, 3, 2, 2 / 3, 1, 1, 0, 1.0 - 3 / 4, 1.0 - 3 / 4, 2 / 4, 3 / 4),
    ("default", "px50176", 5, 2, 2, 1, 1 / 3, 1, 1, 0, 1.0 - 3 / 5, 4 / 5 - 3 / 5, 2 / 5, 2 / 5),
    ("default", "random-seed1", 5, 2, 3, 2, 2 / 3, 1, 1, 1, 1.0 - 3 / 5, 1.0 - 3 / 5, 2 / 5, 3 / 5),
    ("px50176", "random-seed1", 5, 2, 3, 1, 1 / 4, 1, 1, 0, 4 / 5 - 3 / 5, 1.0 - 3 / 5, 2 / 5, 3 / 5),
]
ROBUSTNESS_KEYS = ["protocol_a", "protocol_b", "n_items", "confused_a", "confused_b", "confused_both", "jaccard",
                   "harmed_a", "harmed_b", "harmed_both", "headroom_a", "headroom_b", "confusion_rate_a",
                   "confusion_rate_b"]
WHOLE_KEYS = [*ROBUSTNESS_KEYS[:3], *(f"{k}_whole" for k in ROBUSTNESS_KEYS[3:])]


def test_six_robustness_pairs_over_the_items_matched_in_both_chains(doc: dict) -> None:
    assert [{k: r[k] for k in ROBUSTNESS_KEYS} for r in doc["robustness"]] == [
        dict(zip(ROBUSTNESS_KEYS, want, strict=True)) for want in ROBUSTNESS]
    assert {(r["model_id"], r["dataset"]) for r in doc["robustness"]} == {("m", "d")}
    assert [[r[k] for k in WHOLE_KEYS] for r in doc["robustness"]] == [list(w) for w in ROBUSTNESS_WHOLE]
    assert [r["frames_common"] for r in doc["robustness"]] == [[16, 32]] * 6
    got = collect_both(robustness(matched(_rows())))
    assert got.select(ROBUSTNESS_KEYS).rows() == ROBUSTNESS
    assert got.select(WHOLE_KEYS).rows() == ROBUSTNESS_WHOLE


def test_jaccard_is_null_when_neither_chain_confuses_anything() -> None:
    rows = [row("m", "d", "a", "text", 0, "0"), row("m", "d", "a", "f4", 4, "1"),
            row("m", "d", "a", "f4-px9", 4, "1", max_pixels=9)]
    got = collect_both(robustness(matched(lazy(rows))))
    assert got.select("confused_a", "confused_b", "confused_both", "jaccard").rows() == [(0, 0, 0, None)]


def test_a_pair_of_chains_with_no_item_matched_in_both_is_listed_empty() -> None:
    """Item a is matched in the default chain only, b in the px9 chain only: the pair has no common
    item, and is listed with n_items 0 (not left out, which would read as 'not compared')."""
    rows = [row("m", "d", "a", "text", 0, "1"), row("m", "d", "a", "f4", 4, "0"),
            row("m", "d", "b", "text", 0, "1"), row("m", "d", "b", "f4-px9", 4, "0", max_pixels=9)]
    got = collect_both(robustness(matched(lazy(rows))))
    assert got.select("protocol_a", "protocol_b", "n_items", "confused_a", "confused_both", "harmed_b", "jaccard",
                      "headroom_a", "confusion_rate_b").rows() == [("default", "px9", 0, 0, 0, 0, None, None, None)]


def test_the_protocol_option_restricts_every_table_and_the_primary_option_leads(doc: dict) -> None:
    opts = SummaryOptions(n_boot=0, taus=(1.0,), protocols=("px50176", "cached"), primary_protocol="px50176")
    small = summary_document(summary_tables(_rows(), opts), opts)
    assert [(g["protocol_id"], g["primary"]) for g in small["groups"]] == [("px50176", True), ("cached", False)]
    assert [(r["protocol_a"], r["protocol_b"]) for r in small["robustness"]] == [("cached", "px50176")]
    assert _groups(small)["px50176"]["fixed_accuracy"] == _groups(doc)["px50176"]["fixed_accuracy"]


def test_a_kept_chain_has_the_same_values_whatever_else_the_protocol_option_leaves_out() -> None:
    """The default chain's f32 has an alternate in another chain (f32-random-seed1: same frames, size and
    pipeline): its sampling recovery, intervals included, must not change when only the default chain is
    asked for. Only the other groups, their robustness pairs and the option itself may differ."""
    opts = SummaryOptions(n_boot=40, seed=7, taus=(1.0,), primary_protocol="default")
    whole = summary_document(summary_tables(_rows(), opts), opts)
    only = SummaryOptions(**{**opts.__dict__, "protocols": ("default",)})
    alone = summary_document(summary_tables(_rows(), only), only)
    kept = _groups(whole)["default"]
    assert [g["protocol_id"] for g in alone["groups"]] == ["default"]
    recovery = kept["terminal_regression"]["sampling_recovery"]
    assert [r["alt_budget_id"] for r in recovery] == ["f32-random-seed1", "any"]  # not vacuous
    assert json.dumps(_groups(alone)["default"], sort_keys=True) == json.dumps(kept, sort_keys=True)
