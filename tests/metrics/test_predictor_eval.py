"""The hybrid-frame predictor scored against a hand-built sweep."""

from __future__ import annotations

import polars as pl
import pytest
from helpers.metric_rows import collect_both, frame, lazy, row
from helpers.predictor_rows import SWEEP, all_predictions, predictions, predictor_rows
from polars.testing import assert_frame_equal

from engine.adaptive.predictions import PREDICTION_SCHEMA
from engine.metrics.predictor import evaluate_predictor, latest_predictions, predictor_document


def collect_tables(tables: dict[str, pl.LazyFrame]) -> dict[str, pl.DataFrame]:
    """Collect together with the streaming and the in-memory engine; both must agree exactly."""
    streaming = pl.collect_all(list(tables.values()), engine="streaming")
    memory = pl.collect_all(list(tables.values()), engine="in-memory")
    for a, b in zip(streaming, memory, strict=True):
        assert_frame_equal(a, b)
    return dict(zip(tables, memory, strict=True))


def _evaluate(**kw: object) -> dict[str, pl.DataFrame]:
    return collect_tables(evaluate_predictor(lazy(predictor_rows()), all_predictions().lazy(),
                                             **kw))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def evaluated() -> dict[str, pl.DataFrame]:
    return _evaluate()


def test_the_parsed_predictions() -> None:
    p = predictions()
    assert p.select("item_id", "predicted_frames", "parse_status").rows() == [
        ("a", 4, "exact"), ("b", 8, "letter"), ("c", None, "unparsed: no frame count found"), ("e", 32, "exact"),
        ("g", 0, "text_only"), ("h", 8, "exact")]
    assert collect_both(latest_predictions(all_predictions().lazy()).filter(pl.col("item_id") == "a").select(
        "predicted_frames")).item() == 4


def test_items_choices_and_sufficient_budgets(evaluated: dict[str, pl.DataFrame]) -> None:
    items = evaluated["items"]
    assert items.select("item_id", "source", "budget_id", "frames", "correct", "sufficient_budget", "oracle_frames",
                        "agree", "direction").rows() == [
        ("a", "predicted", "f4", 4, True, "f4", 4, True, "match"),
        ("b", "predicted", "f8", 8, False, "text", 0, False, "over"),
        ("c", "unparsed", "f16", 16, True, "text", 0, False, "over"),
        ("e", "off_grid", "f16", 16, False, None, 0, None, "unsolvable"),
        ("g", "predicted", "text", 0, False, "f8", 8, False, "under"),
    ]
    assert set(items["predictor_id"]) == {"p"} and set(items["model_id"]) == {"m"}


def test_summary_against_fixed_budgets_and_the_oracle(evaluated: dict[str, pl.DataFrame]) -> None:
    t = evaluated
    s = t["summary"].to_dicts()
    assert len(s) == 1
    assert s[0] == {
        "predictor_id": "p", "model_id": "m", "dataset": "d", "protocol_id": "default",
        "n_items": 5, "n_solvable": 4, "n_unsolvable": 1,
        "n_unparsed": 1, "n_off_grid": 1, "n_without_prediction": 1, "n_predictions_unmatched": 1,
        "fallback_budget": "f16", "accuracy": 0.4, "mean_frames": 8.8, "agreement": 0.25, "n_agree": 1,
        "n_under": 1, "n_over": 2, "oracle_accuracy": 0.8, "oracle_mean_frames": 2.4,
    }
    fixed = t["fixed"]
    assert fixed.select("budget_id", "rank", "frames", "accuracy", "mean_frames").rows() == [
        ("text", 0, 0, 0.4, 0.0), ("f4", 1, 4, 0.4, 4.0), ("f8", 2, 8, 0.6, 8.0), ("f16", 3, 16, 0.4, 16.0)]
    assert fixed["accuracy_delta"].to_list() == pytest.approx([0.0, 0.0, -0.2, 0.0])
    saved = fixed["frames_saved"].to_list()
    assert saved[0] is None and saved[1:] == pytest.approx([1 - 8.8 / 4, 1 - 8.8 / 8, 1 - 8.8 / 16])


def test_confusion_matrix_and_parse_counts(evaluated: dict[str, pl.DataFrame]) -> None:
    t = evaluated
    assert t["confusion"].select("predicted", "sufficient", "n").rows() == [
        ("text", "f8", 1), ("f4", "f4", 1), ("f8", "text", 1), ("f16", "text", 1), ("f16", None, 1)]
    assert t["parse"].select("parse_kind", "n").rows() == [("exact", 2), ("letter", 1), ("text_only", 1),
                                                           ("unparsed", 1)]


def test_declared_fallback_budget() -> None:
    t = _evaluate(fallback="f4")
    assert t["items"].filter(pl.col("source") != "predicted").select("item_id", "budget_id", "correct").rows() == [
        ("c", "f4", False), ("e", "f4", False)]
    s = t["summary"].row(0, named=True)
    assert (s["fallback_budget"], s["accuracy"], s["mean_frames"]) == ("f4", 0.2, 4.0)
    missing = _evaluate(fallback="f99")["summary"].row(0, named=True)
    assert (missing["fallback_budget"], missing["accuracy"]) == ("f16", 0.4)


def test_a_restricted_grid() -> None:
    t = _evaluate(budgets=["f4", "f16"])  # h is complete on it; 8 and 0 frames are off this grid
    assert t["items"].select("item_id", "source", "budget_id").rows() == [
        ("a", "predicted", "f4"), ("b", "off_grid", "f16"), ("c", "unparsed", "f16"), ("e", "off_grid", "f16"),
        ("g", "off_grid", "f16"), ("h", "off_grid", "f16")]
    s = t["summary"].row(0, named=True)
    assert (s["n_items"], s["n_off_grid"], s["n_unparsed"], s["accuracy"]) == (6, 4, 1, 4 / 6)


def test_several_models_and_the_model_filter() -> None:
    rows = lazy([*predictor_rows(), *frame({i: "1111" for i in SWEEP}, model="m2")])
    preds = all_predictions().lazy()
    both = collect_tables(evaluate_predictor(rows, preds))["summary"]
    assert both.select("model_id", "n_items", "accuracy", "agreement", "oracle_mean_frames").rows() == [
        ("m", 5, 0.4, 0.25, 2.4), ("m2", 6, 1.0, 1 / 6, 0.0)]  # m2: h is complete; only g picks text
    only = collect_both(evaluate_predictor(rows, preds, "m2")["summary"])
    assert only["model_id"].to_list() == ["m2"]


def test_document(evaluated: dict[str, pl.DataFrame]) -> None:
    doc = predictor_document(evaluated)
    assert len(doc) == 1
    g = doc[0]
    assert g["grid"] == ["text", "f4", "f8", "f16"]
    assert g["best_fixed"] == {"budget_id": "f8", "accuracy": 0.6}
    assert g["confusion"][0] == {"predicted": "text", "sufficient": "f8", "n": 1}
    assert g["parse"] == {"exact": 2, "letter": 1, "text_only": 1, "unparsed": 1}
    assert [f["budget_id"] for f in g["fixed"]] == g["grid"]


def test_no_predictions_gives_empty_tables() -> None:
    empty = pl.LazyFrame(schema=PREDICTION_SCHEMA)
    t = collect_tables(evaluate_predictor(lazy(predictor_rows()), empty))
    assert all(df.is_empty() for df in t.values())
    assert predictor_document(t) == []


def test_rows_of_the_online_predicted_run_stay_off_the_grid() -> None:
    online = [row("m", "d", i, "pred-p", f, "1") for i, f in (("a", 4), ("b", 8), ("e", 16), ("k", 0))]
    t = collect_tables(evaluate_predictor(lazy([*predictor_rows(), *online]), all_predictions().lazy()))
    assert t["fixed"]["budget_id"].to_list() == ["text", "f4", "f8", "f16"]
    s = t["summary"].row(0, named=True)
    assert (s["n_items"], s["accuracy"], s["mean_frames"]) == (5, 0.4, 8.8)
