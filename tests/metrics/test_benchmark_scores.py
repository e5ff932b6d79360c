"""Official image-benchmark scores over hand-made rows, every value computed by hand.

Fixtures (one model, budget f16: the image sent once):
- MME: celebrity a (right, right), b (right, wrong): acc 75, acc+ 50 -> 125; OCR c (wrong, wrong): 0;
  code_reasoning d (right, right), e (wrong, right): 125. Only 2 of the 10 perception and 1 of the 4
  cognition subtasks ran: no total (the old sum read perception 125 + 0 = 125, cognition 125).
- POPE: adversarial gold yes yes no no, said yes no yes no: tp fn fp tn 1 1 1 1 -> accuracy, precision,
  recall, F1 0.5, yes-ratio 0.5; random gold yes no, said yes yes: accuracy 0.5, precision 0.5, recall 1,
  F1 2/3, yes-ratio 1; pooled (6): tp 2 fp 2 fn 1 tn 1 -> accuracy 0.5, precision 0.5, recall 2/3,
  F1 4/7, yes-ratio 2/3. Means over the two splits: F1 (1/2 + 2/3) / 2 = 7/12, accuracy 0.5.
- MMStar: 2 of 3 right.
- MMBench: question 0 (3 rotations) all right; question 1 (2 rotations) the second wrong; question 2
  (2 rotations) the second an error row: incomplete. Official circular (incomplete = wrong) 1/3, over
  the complete questions 1/2; vanilla (rotation 0) 2/3. (Rows without group_size: a question's
  rotations are those seen.)
"""

from __future__ import annotations

import polars as pl
import pytest
from helpers.benchmark_rows import (
    image_row,
    image_rows,
    mmbench_rows,
    mmbench_sized_rows,
    mmstar_rows,
    pope_rows,
    yesno_row,
)
from helpers.metric_rows import collect_both, lazy

from engine.datasets.mme import COGNITION, PERCEPTION
from engine.metrics.benchmark_scores import BENCHMARK_SCORE_SCHEMA, benchmark_column, benchmark_scores
from engine.results.schema import ResultRow


def _values(df: pl.DataFrame, dataset: str, budget: str | None = None) -> dict[tuple[str, str | None], float]:
    mine = df.filter(pl.col("dataset") == dataset)
    if budget is not None:
        mine = mine.filter(pl.col("budget_id") == budget)
    return {(m, s): v for m, s, v in mine.select("metric", "subset", "value").rows()}


def _headlines(df: pl.DataFrame) -> set[tuple[str, str, str | None]]:
    return {(d, m, s) for d, m, s in df.filter(pl.col("headline")).select("dataset", "metric", "subset").rows()}


POPE_VALUES = {
    ("accuracy", None): 3 / 6,
    ("pope_accuracy", None): 0.5, ("pope_precision", None): 0.5, ("pope_recall", None): 2 / 3,
    ("pope_f1", None): 4 / 7, ("pope_yes_ratio", None): 2 / 3,
    ("pope_accuracy", "adversarial"): 0.5, ("pope_precision", "adversarial"): 0.5,
    ("pope_recall", "adversarial"): 0.5, ("pope_f1", "adversarial"): 0.5, ("pope_yes_ratio", "adversarial"): 0.5,
    ("pope_accuracy", "random"): 0.5, ("pope_precision", "random"): 0.5, ("pope_recall", "random"): 1.0,
    ("pope_f1", "random"): 2 / 3, ("pope_yes_ratio", "random"): 1.0,
    ("pope_f1_split_mean", None): (1 / 2 + 2 / 3) / 2,  # 7/12, not the pooled 4/7
    ("pope_accuracy_split_mean", None): (0.5 + 0.5) / 2,
}


def test_official_scores_of_every_image_benchmark() -> None:
    got = collect_both(benchmark_scores(lazy(image_rows())))
    assert got.schema == pl.Schema(BENCHMARK_SCORE_SCHEMA)
    assert set(got["model_id"]) == {"m"} and set(got["budget_id"]) == {"f16"}
    assert _values(got, "mme") == pytest.approx({
        ("accuracy", None): 6 / 10,
        ("mme_perception", None): None, ("mme_cognition", None): None,  # 2 of 10, 1 of 4 subtasks ran
        ("mme_acc", "celebrity"): 75.0, ("mme_acc_plus", "celebrity"): 50.0, ("mme_score", "celebrity"): 125.0,
        ("mme_acc", "OCR"): 0.0, ("mme_acc_plus", "OCR"): 0.0, ("mme_score", "OCR"): 0.0,
        ("mme_acc", "code_reasoning"): 75.0, ("mme_acc_plus", "code_reasoning"): 50.0,
        ("mme_score", "code_reasoning"): 125.0,
    })
    missing = dict(got.filter(pl.col("missing").is_not_null()).select("metric", "missing").rows())
    assert missing == {"mme_perception": ["existence", "count", "position", "color", "posters", "scene", "landmark",
                                          "artwork"],
                       "mme_cognition": ["commonsense_reasoning", "numerical_calculation", "text_translation"]}
    assert _values(got, "pope") == pytest.approx(POPE_VALUES)
    assert _values(got, "mmstar") == pytest.approx({("accuracy", None): 2 / 3, ("mmstar_accuracy", None): 2 / 3})
    assert _values(got, "mmbench") == pytest.approx({
        ("accuracy", None): 4 / 6,  # per question, over the 6 ok rows
        ("mmbench_circular_accuracy", None): 1 / 3,  # q0 right; q1 wrong; q2 (an error row) wrong
        ("mmbench_circular_accuracy_complete", None): 1 / 2,  # q0, q1
        ("mmbench_n_questions", None): 3.0, ("mmbench_n_incomplete", None): 1.0,
        ("mmbench_vanilla_accuracy", None): 2 / 3,
    })
    assert _headlines(got) == {("mme", "mme_perception", None), ("mme", "mme_cognition", None),
                               ("pope", "pope_f1_split_mean", None), ("pope", "pope_accuracy_split_mean", None),
                               ("mmstar", "mmstar_accuracy", None), ("mmbench", "mmbench_circular_accuracy", None)}


def _mme_image(category: str, image: str, marks: str, **extra: object) -> list[ResultRow]:
    """An image's rows: "1" right, "0" wrong, "e" an error row (gold yes)."""
    out = []
    for k, mark in enumerate(marks):
        item = f"{category}/{image}#{k}"
        if mark == "e":
            out.append(image_row("mme", "mme.fs1", item, "e", category=category, task_kind="yesno", **extra))
        else:
            out.append(yesno_row("mme", "mme.fs1", item, "yes", "yes" if mark == "1" else "no", category=category,
                           **extra))
    return out


def test_an_mme_total_needs_every_subtask_of_its_half() -> None:
    """Every answer right: each subtask 100 + 100 = 200, perception 10 x 200 = 2000, cognition 4 x 200 = 800.
    Without OCR and code_reasoning (no rows at all) the old sums read 1800 and 600; now both are null and
    name what is missing. A subtask with rows but no complete image (count: the second question an error
    row) has no score and counts as missing too."""
    every = [r for c in (*PERCEPTION, *COGNITION) for r in _mme_image(c, "x.jpg", "11", group_size=2)]
    got = collect_both(benchmark_scores(lazy(every)))
    assert _values(got, "mme")[("mme_perception", None)] == 2000.0
    assert _values(got, "mme")[("mme_cognition", None)] == 800.0
    assert got["missing"].null_count() == got.height
    cut = [r for r in every if r.category not in ("OCR", "code_reasoning")]
    cut = [r for r in cut if r.category != "count"] + _mme_image("count", "x.jpg", "1e", group_size=2)
    got = collect_both(benchmark_scores(lazy(cut)))
    totals = got.filter(pl.col("metric").is_in(["mme_perception", "mme_cognition"]))
    assert totals.select("metric", "value", "headline", "missing").rows() == [
        ("mme_cognition", None, True, ["code_reasoning"]), ("mme_perception", None, True, ["count", "OCR"])]
    assert _values(got, "mme")[("mme_acc", "count")] == 100.0  # 1 ok row, right
    assert _values(got, "mme")[("mme_acc_plus", "count")] is None  # no complete image


@pytest.mark.parametrize("recorded", [True, False], ids=["group_size", "before-group_size"])
def test_an_mme_image_of_one_question_is_never_an_acc_plus_input(recorded: bool) -> None:
    """existence: x (right, right); y has one row only (its pair cut from the file), wrong. acc over the 3
    ok rows = 2/3 x 100; acc+ over the complete images = x alone = 100 -> score 166.67. The old rule took
    y as a complete one-question image: acc+ = 1/2 -> 50 (acc+ over such images repeats acc). Rows from
    before group_size read MME's two questions per image."""
    size = {"group_size": 2} if recorded else {}
    rows = [*_mme_image("existence", "x.jpg", "11", **size), *_mme_image("existence", "y.jpg", "0", **size)]
    got = _values(collect_both(benchmark_scores(lazy(rows))), "mme")
    assert {k: v for k, v in got.items() if k[1] == "existence"} == pytest.approx({
        ("mme_acc", "existence"): 200 / 3, ("mme_acc_plus", "existence"): 100.0,
        ("mme_score", "existence"): 200 / 3 + 100.0})


@pytest.mark.parametrize("with_group_id", [True, False], ids=["group_id", "group_from_the_id"])
def test_mmbench_rotations_come_from_the_options_and_a_missing_one_is_wrong(with_group_id: bool) -> None:
    """f16: q0 right; q1 complete, wrong; q2 an error row; q3 2 of its 4 rotations (the old rule saw two rows
    and called it complete and right: 2/3 over complete questions). Official = 1 right / 4 questions = 0.25,
    n_incomplete 2 (q2, q3), over the complete ones (q0, q1) 1/2; vanilla: rotation 0 right for q0, q1, q3,
    wrong for q2 -> 3/4. Per question: 6 of the 8 ok rows right. Per l2-category: a = q0, q1 -> 1/2;
    b = q2, q3 -> 0/2. f32: only q0 answered so far: 1/4 official, 3 incomplete, 1/1 over complete. Rows
    without group_id (the question read from the id, index + r x 1,000,000) give the same."""
    rows = mmbench_sized_rows()
    if not with_group_id:
        rows = [ResultRow(**{**r.__dict__, "group_id": None}) for r in rows]
    got = collect_both(benchmark_scores(lazy(rows)))
    assert _values(got, "mmbench", "f16") == pytest.approx({
        ("accuracy", None): 6 / 8,
        ("mmbench_circular_accuracy", None): 1 / 4, ("mmbench_circular_accuracy_complete", None): 1 / 2,
        ("mmbench_n_questions", None): 4.0, ("mmbench_n_incomplete", None): 2.0,
        ("mmbench_vanilla_accuracy", None): 3 / 4,
        ("mmbench_circular_accuracy", "a"): 1 / 2, ("mmbench_circular_accuracy", "b"): 0.0,
    })
    assert _values(got, "mmbench", "f32") == pytest.approx({
        ("accuracy", None): 1.0,
        ("mmbench_circular_accuracy", None): 1 / 4, ("mmbench_circular_accuracy_complete", None): 1.0,
        ("mmbench_n_questions", None): 4.0, ("mmbench_n_incomplete", None): 3.0,
        ("mmbench_vanilla_accuracy", None): 1.0,
        ("mmbench_circular_accuracy", "a"): 1 / 2, ("mmbench_circular_accuracy", "b"): 0.0,
    })
    assert _headlines(got) == {("mmbench", "mmbench_circular_accuracy", None)}


LEAF_QUESTIONS = (  # question, options, rotation marks, l2-category, leaf category
    (0, 2, "11", "fp", "celebrity_recognition"),
    (1, 2, "01", "fp", "celebrity_recognition"),
    (2, 3, "111", "fp", "attribute_recognition"),
    (3, 2, "1e", "fp", "attribute_recognition"),  # its second rotation an error row: wrong
    (4, 4, "1111", "cp", "image_style"),
    (5, 4, "1110", "cp", "image_style"),  # 3 of 4 rotations right: wrong
    (6, 3, "111", "fp", "attribute_recognition"),
)


def test_mmbench_circular_accuracy_per_leaf_category() -> None:
    """Questions right (every rotation right): q0, q2, q4, q6 -> overall 4/7; per l2-category fp = q0 q1 q2 q3
    q6 -> 3/5, cp = q4 q5 -> 1/2; per leaf category celebrity_recognition = q0 q1 -> 1/2,
    attribute_recognition = q2 q3 q6 -> 2/3 (q3 incomplete: wrong), image_style = q4 q5 -> 1/2. Complete: all
    but q3 -> 4/6. Vanilla (rotation 0): all but q1 -> 6/7. Per question: 17 of the 19 ok rows right (q1 and
    q5 one wrong each)."""
    rows = [image_row("mmbench", "mmbench-dev.fs1", str(q + r * 1_000_000), m, group_id=str(q), group_size=k,
                 task_type=l2, category=leaf)
            for q, k, marks, l2, leaf in LEAF_QUESTIONS for r, m in enumerate(marks)]
    got = _values(collect_both(benchmark_scores(lazy(rows))), "mmbench")
    assert got == pytest.approx({
        ("accuracy", None): 17 / 19,
        ("mmbench_circular_accuracy", None): 4 / 7, ("mmbench_circular_accuracy_complete", None): 4 / 6,
        ("mmbench_n_questions", None): 7.0, ("mmbench_n_incomplete", None): 1.0,
        ("mmbench_vanilla_accuracy", None): 6 / 7,
        ("mmbench_circular_accuracy", "fp"): 3 / 5, ("mmbench_circular_accuracy", "cp"): 1 / 2,
        ("mmbench_leaf_circular_accuracy", "celebrity_recognition"): 1 / 2,
        ("mmbench_leaf_circular_accuracy", "attribute_recognition"): 2 / 3,
        ("mmbench_leaf_circular_accuracy", "image_style"): 1 / 2,
    })


def test_a_question_no_row_ever_reached_is_not_in_the_universe() -> None:
    """The questions are those some row names: with q3 absent from every row (nothing knows it exists), f16 is
    q0 right, q1 wrong, q2 incomplete -> 1/3."""
    rows = [r for r in mmbench_sized_rows() if not r.item_id.endswith("3")]
    got = _values(collect_both(benchmark_scores(lazy(rows))), "mmbench", "f16")
    assert (got[("mmbench_circular_accuracy", None)], got[("mmbench_n_questions", None)]) == pytest.approx(
        (1 / 3, 3.0))


def test_benchmark_by_dataset_id_and_by_version() -> None:
    # datasets under their own ids: the version tells which benchmark; a mapping overrides it
    rows = [*mmstar_rows("star"), *pope_rows("pope_val")]
    got = collect_both(benchmark_scores(lazy(rows)))
    assert _values(got, "pope_val") == pytest.approx(POPE_VALUES)
    assert ("mmstar_accuracy", None) in _values(got, "star")
    plain = [*mmbench_rows("mmb")]
    plain = [ResultRow(**{**r.__dict__, "dataset_version": "custom"}) for r in plain]
    unnamed = collect_both(benchmark_scores(lazy(plain)))
    assert unnamed.select("metric", "headline").rows() == [("accuracy", True)]  # no official rule: accuracy
    named = collect_both(benchmark_scores(lazy(plain), {"mmb": "mmbench"}))
    assert _values(named, "mmb")[("mmbench_circular_accuracy", None)] == pytest.approx(1 / 3)
    kinds = lazy(plain).select(benchmark_column({"mmb": "mmbench"})).unique().collect()
    assert kinds["benchmark"].to_list() == ["mmbench"]
    versions = ["mme.fs1", "videomme-v1.fs1", "videomme-v2.fs1", "mvbench.fs1", "tempcompass.fs1", "video_mmmu.fs1",
                "mlvu-dev.fs1", "mmbench-dev.fs1", "mmstar-val.fs1", "pope.fs1"]
    got = pl.DataFrame({"dataset_version": versions}).select(benchmark_column())["benchmark"].to_list()
    assert got == ["mme", "videomme", "videomme_v2", "mvbench", "tempcompass", "video_mmmu", None, "mmbench",
                   "mmstar", "pope"]


def test_error_rows_are_not_answers() -> None:
    rows = [*mmstar_rows(), image_row("mmstar", "mmstar-val.fs1", "9", "e")]
    assert _values(collect_both(benchmark_scores(lazy(rows))), "mmstar")[("mmstar_accuracy", None)] == \
        pytest.approx(2 / 3)


def test_mme_acc_plus_counts_complete_images_only_and_a_total_waits_for_every_category() -> None:
    """existence: x (right, right), y (right, error row): acc 3/3 = 100 over ok rows; acc+ over the one
    complete image x = 100 (y's error row is no answer: counting y as both right, as a rule over the ok
    rows would, or as wrong, would both be guesses) -> 200. count: z (right, error): no complete image,
    no score. code_reasoning w (right, wrong): 50 + 0. Neither half has all its subtasks: no total."""
    rows = [yesno_row("mme", "mme.fs1", f"existence/x.jpg#{k}", "yes", "yes", category="existence") for k in (0, 1)]
    rows += [yesno_row("mme", "mme.fs1", "existence/y.jpg#0", "yes", "yes", category="existence"),
             image_row("mme", "mme.fs1", "existence/y.jpg#1", "e", category="existence", task_kind="yesno"),
             yesno_row("mme", "mme.fs1", "count/z.jpg#0", "no", "no", category="count"),
             image_row("mme", "mme.fs1", "count/z.jpg#1", "e", category="count", task_kind="yesno"),
             yesno_row("mme", "mme.fs1", "code_reasoning/w.png#0", "yes", "yes", category="code_reasoning"),
             yesno_row("mme", "mme.fs1", "code_reasoning/w.png#1", "yes", "no", category="code_reasoning")]
    mme = _values(collect_both(benchmark_scores(lazy(rows))), "mme")
    assert mme == pytest.approx({
        ("accuracy", None): 5 / 6,
        ("mme_perception", None): None, ("mme_cognition", None): None,
        ("mme_acc", "existence"): 100.0, ("mme_acc_plus", "existence"): 100.0, ("mme_score", "existence"): 200.0,
        ("mme_acc", "count"): 100.0, ("mme_acc_plus", "count"): None, ("mme_score", "count"): None,
        ("mme_acc", "code_reasoning"): 50.0, ("mme_acc_plus", "code_reasoning"): 0.0,
        ("mme_score", "code_reasoning"): 50.0,
    })
    # once y's second question is answered wrong, y is complete and not both right: acc+ 50
    rows[3] = yesno_row("mme", "mme.fs1", "existence/y.jpg#1", "no", "yes", category="existence")
    mme = _values(collect_both(benchmark_scores(lazy(rows))), "mme")
    assert mme[("mme_acc", "existence")] == pytest.approx(75.0)
    assert mme[("mme_acc_plus", "existence")] == pytest.approx(50.0)
