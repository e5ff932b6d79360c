"""Video-MME v2 logic groups: the official chain rule (`cal_logic` of the Video-MME-v2 repository's evaluation
script), where a parallel question may continue the chain. Every k and score below is worked out by hand from the
rule in `engine.datasets.videomme_v2.chain_steps`: the right answers on the steps reached, a step reached when
every earlier step is wholly right; k mapped by the structure."""

from __future__ import annotations

import polars as pl
import pytest

from engine.datasets.scoring_rules import GROUP_TABLE_SCHEMA, videomme_v2_group_scores, videomme_v2_summary
from engine.datasets.videomme_v2 import LOGIC_STEPS, chain_steps
from engine.results.schema import RESULT_SCHEMA

T = 100 / 12  # the [1,[2,3],4] map: {1: T, 2: 4T, 3: 7T, 4: 100}

# answers of questions 1-4 ("1" right) -> (k, score)
PARALLEL_MIDDLE = {  # [1,[2,3],4]: steps (q1), (q2, q3), (q4)
    "0000": (0, 0.0), "0001": (0, 0.0), "0010": (0, 0.0), "0011": (0, 0.0),  # q1 wrong: nothing reached after it
    "0100": (0, 0.0), "0101": (0, 0.0), "0110": (0, 0.0), "0111": (0, 0.0),
    "1000": (1, T), "1001": (1, T),  # parallel step both wrong: the chain stops at q1
    "1010": (2, 4 * T), "1011": (2, 4 * T),  # the issue's case: q3 continues the chain (33.33, not 8.33); q4 not
    "1100": (2, 4 * T), "1101": (2, 4 * T),  # reached, the parallel step being only half right
    "1110": (3, 7 * T),
    "1111": (4, 100.0),
}
PARALLEL_FIRST = {  # [[1,2],3,4]: steps (q1, q2), (q3), (q4); map {1: 10, 2: 20, 3: 50, 4: 100}
    "0000": (0, 0.0), "0001": (0, 0.0), "0010": (0, 0.0), "0011": (0, 0.0),  # both parallel questions wrong
    "0100": (1, 10.0), "0101": (1, 10.0), "0110": (1, 10.0), "0111": (1, 10.0),  # q2 right, q1 wrong: k = 1
    "1000": (1, 10.0), "1001": (1, 10.0), "1010": (1, 10.0), "1011": (1, 10.0),  # q1 right, q2 wrong: k = 1
    "1100": (2, 20.0), "1101": (2, 20.0),
    "1110": (3, 50.0),
    "1111": (4, 100.0),
}
SERIAL = {  # [1,2,3,4]: the plain leading run; map {1: 100/16, 2: 400/16, 3: 900/16, 4: 100}
    "0000": (0, 0.0), "0001": (0, 0.0), "0010": (0, 0.0), "0011": (0, 0.0),
    "0100": (0, 0.0), "0101": (0, 0.0), "0110": (0, 0.0), "0111": (0, 0.0),
    "1000": (1, 6.25), "1001": (1, 6.25), "1010": (1, 6.25), "1011": (1, 6.25),
    "1100": (2, 25.0), "1101": (2, 25.0),
    "1110": (3, 56.25),
    "1111": (4, 100.0),
}


def _groups_and_rows(cases: dict[str, tuple[str, str]]) -> tuple[pl.DataFrame, pl.LazyFrame]:
    """The group table and result rows of groups {group_id: (group_type + ":" + structure, answers)}."""
    groups, data = [], {c: [] for c in RESULT_SCHEMA}
    for gid, (kind, answers) in cases.items():
        gtype, structure = kind.split(":", 1)
        for q, mark in enumerate(answers, 1):
            groups.append({"dataset": "v2", "item_id": f"{gid}-{q}", "group_id": gid, "position": q, "group_size": 4,
                           "group_type": gtype, "group_structure": structure, "level": 1})
            for c in RESULT_SCHEMA:
                data[c].append(None)
            for c, v in {"model_id": "m", "dataset": "v2", "budget_id": "f8", "status": "ok", "item_id": f"{gid}-{q}",
                         "correct": mark == "1"}.items():
                data[c][-1] = v
    return pl.DataFrame(groups, schema=GROUP_TABLE_SCHEMA), pl.LazyFrame(data, schema=RESULT_SCHEMA)


def _scores(kind: str, table: dict[str, tuple[int, float]]) -> dict[str, tuple[int, float]]:
    groups, rows = _groups_and_rows({answers: (kind, answers) for answers in table})
    got = videomme_v2_group_scores(rows, groups).collect()
    return {g: (k, s) for g, k, s in got.select("group_id", "run", "score").rows()}


def test_chain_steps_of_the_three_structures() -> None:
    assert LOGIC_STEPS == {"[1,2,3,4]": (0, 1, 2, 3), "[1,[2,3],4]": (0, 1, 1, 2), "[[1,2],3,4]": (0, 0, 1, 2)}
    assert chain_steps("[[1,2],[3,4]]") == (0, 0, 1, 1)  # nested lists anywhere: one step each


def test_the_issues_case_scores_33_not_8() -> None:
    """[1,[2,3],4] answered 1,0,1,x: q1 right, then the parallel step [2,3] has q3 right, so k = 1 + 1 = 2 ->
    400/12 = 33.33 (the plain leading run stopped at q2: k = 1 -> 100/12 = 8.33); q4 is never reached."""
    got = _scores("logic:[1,[2,3],4]", {"1010": (2, 4 * T), "1011": (2, 4 * T)})
    assert got == {"1010": (2, pytest.approx(33.333333)), "1011": (2, pytest.approx(33.333333))}


@pytest.mark.parametrize(("kind", "table"), [
    ("logic:[1,[2,3],4]", PARALLEL_MIDDLE), ("logic:[[1,2],3,4]", PARALLEL_FIRST), ("logic:[1,2,3,4]", SERIAL),
    ("logic:[1, [2, 3], 4]", PARALLEL_MIDDLE),  # rows of an import keep the file's spaces: the same chain
])
def test_every_answer_pattern_of_each_structure(kind: str, table: dict[str, tuple[int, float]]) -> None:
    got = _scores(kind, table)
    assert got == {a: (k, pytest.approx(s)) for a, (k, s) in table.items()}


def test_relevance_counts_right_answers_in_any_order() -> None:
    got = _scores("relevance:[1,2,3,4]", {"0101": (0, 25.0), "1011": (1, 56.25), "1111": (4, 100.0)})
    assert {g: s for g, (_, s) in got.items()} == {"0101": 25.0, "1011": 56.25, "1111": 100.0}


def test_the_mean_over_all_64_patterns() -> None:
    """Every answer pattern of a relevance group and of the three logic structures, one group each.

    relevance: sum over k of C(4, k) x map = 4 x 6.25 + 6 x 25 + 4 x 56.25 + 100 = 500
    [1,2,3,4]: 4 x 6.25 + 2 x 25 + 56.25 + 100 = 231.25
    [1,[2,3],4]: 2 x T + 4 x 4T + 7T + 100 = 25T + 100 = 308.33 (the plain run: 19T + 100 = 258.33, 50 less)
    [[1,2],3,4]: 8 x 10 + 2 x 20 + 50 + 100 = 270 (the plain run: 4 x 10 + 2 x 20 + 50 + 100 = 230, 40 less)
    logic mean = (231.25 + 308.33 + 270) / 48 = 16.866; overall = (500 + 809.58) / 64 = 20.462, which the plain
    run put 90 / 64 = 1.406 points lower.
    """
    relevance = {a: ("relevance:[1,2,3,4]", a) for a in SERIAL}
    cases = {f"r{a}": v for a, v in relevance.items()}
    for name, kind, table in (("s", "[1,2,3,4]", SERIAL), ("m", "[1,[2,3],4]", PARALLEL_MIDDLE),
                              ("f", "[[1,2],3,4]", PARALLEL_FIRST)):
        cases |= {f"{name}{a}": (f"logic:{kind}", a) for a in table}
    groups, rows = _groups_and_rows(cases)
    summary = videomme_v2_summary(videomme_v2_group_scores(rows, groups)).collect().row(0, named=True)
    logic = 231.25 + (25 * T + 100) + 270
    assert summary["n_groups"] == 64
    assert summary["relevance_score"] == pytest.approx(500 / 16)
    assert summary["logic_score"] == pytest.approx(logic / 48)
    assert summary["score"] == pytest.approx((500 + logic) / 64)
    assert summary["score"] == pytest.approx(20.4622, abs=1e-4)


def test_an_incomplete_logic_group_has_a_run_but_no_score() -> None:
    """[1,[2,3],4] with q4 unanswered: q1 and q2 right, q3 wrong -> run 2, but a group needs its 4 answers."""
    groups, rows = _groups_and_rows({"g": ("logic:[1,[2,3],4]", "110")})
    got = videomme_v2_group_scores(rows, groups.vstack(pl.DataFrame(
        [{"dataset": "v2", "item_id": "g-4", "group_id": "g", "position": 4, "group_size": 4, "group_type": "logic",
          "group_structure": "[1,[2,3],4]", "level": 1}], schema=GROUP_TABLE_SCHEMA))).collect().row(0, named=True)
    assert (got["n"], got["run"], got["complete"], got["score"]) == (3, 2, False, None)
