"""Terminal regressions (right at a cheaper *visual* budget) and sampling recovery over all of them.

Chain (text, f4, f8), uniform; alternates at f8: random (seed 1) and segment_centre.
    item  text f4 f8   f8-random  f8-segment
    p      0   1  0       1          0        terminal, recovered by random
    q      0   1  0       .          1        terminal, recovered by segment_centre
    r      0   1  0       0          .        terminal, not recovered
    u      0   1  0       .          .        terminal, no alternate result at all
    s      1   0  0       .          .        right only text-only: text overwrite, not terminal
    t      0   0  1       .          .        right at the top
Terminal: p, q, r, u (4 of 6). random: results for p, r -> 1 recovered: 1/4 over all terminal
regressions, 1/2 over those with a result; segment_centre: p, q -> 1: 1/4 and 1/2; any: p, q, r
have some alternate, p and q are recovered: 2/4 and 2/3.
"""

from __future__ import annotations

import polars as pl
from helpers.metric_rows import collect_both, frame, lazy, row

from engine.metrics.document import summary_document
from engine.metrics.grid import matched
from engine.metrics.rates import rate_table
from engine.metrics.regression import alternate_rows, sampling_recovery, terminal_items, terminal_regressions
from engine.metrics.summary import SummaryOptions, summary_tables

CHAIN = {"text": 0, "f4": 4, "f8": 8}
TRAJ = {"p": "010", "q": "010", "r": "010", "u": "010", "s": "100", "t": "001"}
ALTS = {("p", "f8-random-seed1"): "1", ("r", "f8-random-seed1"): "0",
        ("p", "f8-segment_centre"): "0", ("q", "f8-segment_centre"): "1"}


def _rows() -> list:
    rows = frame(TRAJ, budgets=CHAIN)
    for (item, b), mark in ALTS.items():
        policy, seed = ("random", 1) if "random" in b else ("segment_centre", 0)
        rows.append(row("m", "d", item, b, 8, mark, policy=policy, seed=seed))
    return rows


def _default(df: pl.DataFrame) -> pl.DataFrame:
    return df.filter(pl.col("protocol_id") == "default") if "protocol_id" in df.columns else df


def test_text_only_right_is_not_a_terminal_regression() -> None:
    m = matched(lazy(_rows()))
    got = _default(collect_both(terminal_items(m)))
    assert dict(got.select("item_id", "terminal").rows()) == {
        "p": True, "q": True, "r": True, "u": True, "s": False, "t": False}
    assert _default(collect_both(terminal_regressions(m))).select("n_items", "n_terminal").rows() == [(6, 4)]
    # a chain whose dearest budget is text-only has none; right at text then wrong at f4 only is not one either
    assert collect_both(terminal_items(matched(lazy(frame({"x": "10"}, budgets={"text": 0, "f4": 4})))))[
        "terminal"].to_list() == [False]


def test_recovery_over_all_terminal_regressions_beside_those_with_an_alternate() -> None:
    rows = lazy(_rows())
    got = _default(collect_both(sampling_recovery(matched(rows), alternate_rows(rows))))
    assert got.select("alt_budget_id", "n_terminal", "n_with_alt", "n_missing_alt", "n_recovered",
                      "sampling_recovery", "sampling_recovery_with_alt").rows() == [
        ("f8-random-seed1", 4, 2, 2, 1, 0.25, 0.5),
        ("f8-segment_centre", 4, 2, 2, 1, 0.25, 0.5),
        ("any", 4, 3, 1, 2, 0.5, 2 / 3),
    ]


def test_recovery_rates_and_document() -> None:
    rows = lazy(_rows())
    rates = _default(collect_both(rate_table(matched(rows), alt=alternate_rows(rows))))
    pick = {(r["metric"], r["key"]): r["value"] for r in rates.to_dicts() if r["metric"].startswith("sampling")}
    assert pick == {
        ("sampling_recovery", "f8-random-seed1"): 0.25, ("sampling_recovery", "f8-segment_centre"): 0.25,
        ("sampling_recovery", "any"): 0.5,
        ("sampling_recovery_with_alt", "f8-random-seed1"): 0.5, ("sampling_recovery_with_alt", "f8-segment_centre"): 0.5,
        ("sampling_recovery_with_alt", "any"): 2 / 3,
    }
    opts = SummaryOptions(n_boot=0)
    doc = summary_document(summary_tables(rows, opts), opts)
    (g,) = [g for g in doc["groups"] if g.get("protocol_id", "default") == "default"]
    term = g["terminal_regression"]
    assert (term["n_terminal"], term["share"]) == (4, 4 / 6)
    assert [(r["alt_budget_id"], r["share"], r["share_with_alt"]) for r in term["sampling_recovery"]] == [
        ("f8-random-seed1", 0.25, 0.5), ("f8-segment_centre", 0.25, 0.5), ("any", 0.5, 2 / 3)]
