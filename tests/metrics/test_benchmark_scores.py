"""Official image-benchmark scores over hand-made rows, every value computed by hand.

Fixtures (one model, budget f16: the image sent once):
- MME: celebrity a (right, right), b (right, wrong): acc 75, acc+ 50 -> 125; OCR c (wrong, wrong): 0;
  code_reasoning d (right, right), e (wrong, right): 125. Perception 125 + 0 = 125, cognition 125.
- POPE: adversarial gold yes yes no no, said yes no yes no: tp fn fp tn 1 1 1 1 -> accuracy, precision,
  recall, F1 0.5, yes-ratio 0.5; random gold yes no, said yes yes: accuracy 0.5, precision 0.5, recall 1,
  F1 2/3, yes-ratio 1; pooled (6): tp 2 fp 2 fn 1 tn 1 -> accuracy 0.5, precision 0.5, recall 2/3,
  F1 4/7, yes-ratio 2/3.
- MMStar: 2 of 3 right.
- MMBench: question 0 (3 rotations) all right; question 1 (2 rotations) the second wrong; question 2
  (2 rotations) the second an error row: incomplete. Circular 1/2; vanilla (rotation 0) 2/3.
"""

from __future__ import annotations

import polars as pl
import pytest
from metric_rows import collect_both, lazy, row

from engine.metrics.benchmark_scores import benchmark_column, benchmark_scores
from engine.results.schema import ResultRow

F16 = {"budget": "f16", "frames": 16}


def _img(dataset: str, version: str, item: str, mark: str, **extra: object) -> ResultRow:
    return row("m", dataset, item, "f16", 16, mark, dataset_version=version, frames_sent=1, frame_indices=[0],
               media_kind="image", **extra)


def _yn(dataset: str, version: str, item: str, gold: str, said: str, **extra: object) -> ResultRow:
    return _img(dataset, version, item, "1" if gold == said else "0", task_kind="yesno", answer=gold, pred=said,
                **extra)


def mme_rows(dataset: str = "mme", version: str = "mme.fs1") -> list[ResultRow]:
    marks = {"celebrity/a.jpg": "11", "celebrity/b.jpg": "10", "OCR/c.jpg": "00", "code_reasoning/d.png": "11",
             "code_reasoning/e.png": "01"}
    out = []
    for image, two in marks.items():
        for k, mark in enumerate(two):
            # the first image's rows carry group_id; the rest fall back to the id's "#k" convention
            group = {"group_id": image} if image.startswith("celebrity/a") else {}
            out.append(_yn(dataset, version, f"{image}#{k}", "yes", "yes" if mark == "1" else "no",
                           category=image.split("/")[0], **group))
    return out


def pope_rows(dataset: str = "pope") -> list[ResultRow]:
    cells = [("adversarial", "yes", "yes"), ("adversarial", "yes", "no"), ("adversarial", "no", "yes"),
             ("adversarial", "no", "no"), ("random", "yes", "yes"), ("random", "no", "yes")]
    return [_yn(dataset, "pope.fs1", f"{split}/{i}", gold, said, category=split)
            for i, (split, gold, said) in enumerate(cells)]


def mmstar_rows(dataset: str = "mmstar") -> list[ResultRow]:
    return [_img(dataset, "mmstar-val.fs1", str(i), m) for i, m in enumerate("110")]


def mmbench_rows(dataset: str = "mmbench") -> list[ResultRow]:
    marks = {0: "111", 1: "10", 2: "0e"}
    return [_img(dataset, "mmbench-dev.fs1", str(q + r * 1_000_000), m, **({"group_id": str(q)} if q else {}))
            for q, ms in marks.items() for r, m in enumerate(ms)]


def image_rows() -> list[ResultRow]:
    return [*mme_rows(), *pope_rows(), *mmstar_rows(), *mmbench_rows()]


def _values(df: pl.DataFrame, dataset: str) -> dict[tuple[str, str | None], float]:
    return {(m, s): v for m, s, v in df.filter(pl.col("dataset") == dataset).select("metric", "subset", "value").rows()}


def test_official_scores_of_every_image_benchmark() -> None:
    got = collect_both(benchmark_scores(lazy(image_rows())))
    assert set(got["model_id"]) == {"m"} and set(got["budget_id"]) == {"f16"}
    mme = _values(got, "mme")
    assert mme[("mme_perception", None)] == pytest.approx(125.0)
    assert mme[("mme_cognition", None)] == pytest.approx(125.0)
    assert mme[("mme_score", "celebrity")] == pytest.approx(125.0)
    assert (mme[("mme_acc", "celebrity")], mme[("mme_acc_plus", "celebrity")]) == pytest.approx((75.0, 50.0))
    assert mme[("mme_score", "OCR")] == 0.0
    assert mme[("mme_score", "code_reasoning")] == pytest.approx(125.0)
    assert mme[("accuracy", None)] == pytest.approx(6 / 10)
    pope = _values(got, "pope")
    assert {m: pope[(m, "adversarial")] for m in ("pope_accuracy", "pope_f1", "pope_yes_ratio")} == pytest.approx(
        {"pope_accuracy": 0.5, "pope_f1": 0.5, "pope_yes_ratio": 0.5})
    assert (pope[("pope_accuracy", "random")], pope[("pope_recall", "random")], pope[("pope_f1", "random")],
            pope[("pope_yes_ratio", "random")]) == pytest.approx((0.5, 1.0, 2 / 3, 1.0))
    assert (pope[("pope_accuracy", None)], pope[("pope_precision", None)], pope[("pope_recall", None)],
            pope[("pope_f1", None)], pope[("pope_yes_ratio", None)]) == pytest.approx((0.5, 0.5, 2 / 3, 4 / 7, 2 / 3))
    assert _values(got, "mmstar") == pytest.approx({("accuracy", None): 2 / 3, ("mmstar_accuracy", None): 2 / 3})
    mmb = _values(got, "mmbench")
    assert mmb[("mmbench_circular_accuracy", None)] == pytest.approx(0.5)
    assert mmb[("mmbench_vanilla_accuracy", None)] == pytest.approx(2 / 3)
    assert mmb[("accuracy", None)] == pytest.approx(4 / 6)  # per question, over the 6 ok rows


def test_half_of_mme_not_run_has_no_total() -> None:
    rows = [r for r in mme_rows() if not r.item_id.startswith("code_reasoning")]
    got = _values(collect_both(benchmark_scores(lazy(rows))), "mme")
    assert ("mme_cognition", None) not in got and got[("mme_perception", None)] == pytest.approx(125.0)


def test_benchmark_by_dataset_id_and_by_version() -> None:
    # datasets under their own ids: the version tells which benchmark; a mapping overrides it
    rows = [*mme_rows("mme_val"), *mmstar_rows("star")]
    got = collect_both(benchmark_scores(lazy(rows)))
    assert _values(got, "mme_val")[("mme_perception", None)] == pytest.approx(125.0)
    assert ("mmstar_accuracy", None) in _values(got, "star")
    plain = [*mmbench_rows("mmb")]
    plain = [ResultRow(**{**r.__dict__, "dataset_version": "custom"}) for r in plain]
    assert set(collect_both(benchmark_scores(lazy(plain)))["metric"]) == {"accuracy"}
    named = collect_both(benchmark_scores(lazy(plain), {"mmb": "mmbench"}))
    assert _values(named, "mmb")[("mmbench_circular_accuracy", None)] == pytest.approx(0.5)
    kinds = lazy(plain).select(benchmark_column({"mmb": "mmbench"})).unique().collect()
    assert kinds["benchmark"].to_list() == ["mmbench"]


def test_error_rows_are_not_answers() -> None:
    rows = [*mmstar_rows(), _img("mmstar", "mmstar-val.fs1", "9", "e")]
    assert _values(collect_both(benchmark_scores(lazy(rows))), "mmstar")[("mmstar_accuracy", None)] == \
        pytest.approx(2 / 3)


def test_mme_acc_plus_counts_complete_images_only_and_a_total_waits_for_every_category() -> None:
    """existence: x (right, right), y (right, error row): acc 3/3 = 100 over ok rows; acc+ over the one
    complete image x = 100 (y's error row is no answer: counting y as both right, as a rule over the ok
    rows would, or as wrong, would both be guesses) -> 200. count: z (right, error): no complete image,
    no score, so no perception total (a total skipping a category would read as a low score).
    code_reasoning w (right, wrong): 50 + 0 -> cognition 50."""
    rows = [_yn("mme", "mme.fs1", f"existence/x.jpg#{k}", "yes", "yes", category="existence") for k in (0, 1)]
    rows += [_yn("mme", "mme.fs1", "existence/y.jpg#0", "yes", "yes", category="existence"),
             _img("mme", "mme.fs1", "existence/y.jpg#1", "e", category="existence", task_kind="yesno"),
             _yn("mme", "mme.fs1", "count/z.jpg#0", "no", "no", category="count"),
             _img("mme", "mme.fs1", "count/z.jpg#1", "e", category="count", task_kind="yesno"),
             _yn("mme", "mme.fs1", "code_reasoning/w.png#0", "yes", "yes", category="code_reasoning"),
             _yn("mme", "mme.fs1", "code_reasoning/w.png#1", "yes", "no", category="code_reasoning")]
    mme = _values(collect_both(benchmark_scores(lazy(rows))), "mme")
    assert mme[("mme_acc", "existence")] == pytest.approx(100.0)
    assert mme[("mme_acc_plus", "existence")] == pytest.approx(100.0)
    assert mme[("mme_score", "existence")] == pytest.approx(200.0)
    assert mme[("mme_acc", "count")] == pytest.approx(100.0)
    assert mme.get(("mme_acc_plus", "count")) is None and mme.get(("mme_score", "count")) is None
    assert ("mme_perception", None) not in mme
    assert mme[("mme_cognition", None)] == pytest.approx(50.0)
    # once y's second question is answered wrong, y is complete and not both right: acc+ 50
    rows[3] = _yn("mme", "mme.fs1", "existence/y.jpg#1", "no", "yes", category="existence")
    mme = _values(collect_both(benchmark_scores(lazy(rows))), "mme")
    assert mme[("mme_acc", "existence")] == pytest.approx(75.0)
    assert mme[("mme_acc_plus", "existence")] == pytest.approx(50.0)
