"""The temporal trap on official scores: each benchmark's headline delta against the base, and the
per-question view beside it. Every value by hand.

Study: base and ft (16 train frames). Datasets:
- vid (video, no official rule: accuracy is its headline), items a, b at text / f8 / f16:
  base a 000 b 001, ft a 011 b 011 -> accuracy base 0, 0, 1/2; ft 0, 1, 1; gain 0, +1, +1/2.
- mmb (MMBench, an image at f16): three questions of two options (two rotations each).
  base q0 11, q1 00, q2 00: per rotation 2/6 = 1/3, circular 1/3.
  ft   q0 10, q1 10, q2 10: per rotation 3/6 = 1/2, circular 0.
  Official delta 0 - 1/3 = -1/3; per question +1/6: the two views disagree in sign.
- mme (MME, an image at f16): one image per subtask, both questions right, except ft's code_reasoning
  image (second question wrong: acc 50 + acc+ 0 = 50 instead of 200).
  perception 2000 vs 2000: delta 0 (on the full scale 0 / 2000 = 0); cognition 650 vs 800: delta -150
  (-150 / 800 = -0.1875). The dataset's official delta: (0 - 0.1875) / 2 = -0.09375.
  Per question: ft 27/28 vs 28/28 -> -1/28.
Official trap of ft: video gain 0, +1, +1/2 at 0, 8, 16 frames; image gain (-1/3 - 0.09375) / 2 =
-41/192: trapped at 8 and 16 frames. Per question the image gain is (1/6 - 1/28) / 2 = 11/168 > 0: not trapped.
"""

from __future__ import annotations

import polars as pl
import pytest
from helpers.checkpoint_rows import official_study_rows as study_rows
from helpers.metric_rows import collect_both, lazy
from polars.testing import assert_frame_equal

from engine.metrics.checkpoint_study import Checkpoint
from engine.metrics.checkpoints import checkpoint_document, checkpoint_tables

STUDY = [Checkpoint("base"), Checkpoint("ft", base="base", train_frames=16, size="7B", architecture="arch")]
def _tables() -> dict[str, pl.DataFrame]:
    return {k: collect_both(v) for k, v in checkpoint_tables(lazy(study_rows()), STUDY, categories=()).items()}


def test_headline_deltas_in_each_benchmarks_own_unit() -> None:
    got = _tables()["headlines"].select("dataset", "kind", "budget_id", "frames", "metric", "subset", "value",
                                        "base_value", "delta", "scale", "delta_scaled")
    want = pl.DataFrame([
        ("mmb", "image", "f16", 16, "mmbench_circular_accuracy", None, 0.0, 1 / 3, -1 / 3, 1.0, -1 / 3),
        ("mme", "image", "f16", 16, "mme_cognition", None, 650.0, 800.0, -150.0, 800.0, -150 / 800),
        ("mme", "image", "f16", 16, "mme_perception", None, 2000.0, 2000.0, 0.0, 2000.0, 0.0),
        ("vid", "video", "text", 0, "accuracy", None, 0.0, 0.0, 0.0, 1.0, 0.0),
        ("vid", "video", "f8", 8, "accuracy", None, 1.0, 0.0, 1.0, 1.0, 1.0),
        ("vid", "video", "f16", 16, "accuracy", None, 1.0, 0.5, 0.5, 1.0, 0.5),
    ], schema=["dataset", "kind", "budget_id", "frames", "metric", "subset", "value", "base_value", "delta", "scale",
               "delta_scaled"], orient="row")
    assert_frame_equal(got, want, check_dtypes=False)


def test_the_trap_reads_official_deltas_and_the_per_question_view_stays_beside_it() -> None:
    t = _tables()
    cells = t["cells"].select("dataset", "budget_id", "n_headlines", "gain")
    assert_frame_equal(cells, pl.DataFrame([
        ("mmb", "f16", 1, -1 / 3), ("mme", "f16", 2, (0 - 150 / 800) / 2),
        ("vid", "text", 1, 0.0), ("vid", "f8", 1, 1.0), ("vid", "f16", 1, 0.5),
    ], schema=["dataset", "budget_id", "n_headlines", "gain"], orient="row"), check_dtypes=False)
    image_gain = (-1 / 3 + (0 - 150 / 800) / 2) / 2  # -41/192
    assert image_gain == pytest.approx(-41 / 192)
    trap = t["trap"].select("model_id", "frames", "n_video_datasets", "video_gain", "n_image_datasets",
                            "image_gain", "image_loss", "trapped")
    assert_frame_equal(trap, pl.DataFrame([
        ("ft", 0, 1, 0.0, 2, image_gain, -image_gain, False),
        ("ft", 8, 1, 1.0, 2, image_gain, -image_gain, True),
        ("ft", 16, 1, 0.5, 2, image_gain, -image_gain, True),
    ], schema=trap.columns, orient="row"), check_dtypes=False)
    view = t["train_frames"].select("model_id", "train_frames", "n_video_datasets", "video_gain",
                                    "n_image_datasets", "image_gain", "image_loss", "trapped")
    assert view.rows() == [("ft", "16", 1, 0.5, 2, pytest.approx(image_gain), pytest.approx(-image_gain), True)]
    # per question: mmb +1/6, mme -1/28 -> image gain 11/168 > 0, not trapped
    pq = t["pq:trap"].filter(pl.col("model_id") == "ft").select("frames", "video_gain", "image_gain", "trapped")
    assert_frame_equal(pq, pl.DataFrame([(0, 0.0, 11 / 168, False), (8, 1.0, 11 / 168, False),
                                         (16, 0.5, 11 / 168, False)], schema=pq.columns, orient="row"),
                       check_dtypes=False)
    pq_view = t["pq:train_frames"].select("model_id", "video_gain", "image_gain", "image_rescue", "image_harm",
                                          "trapped")
    # image rescue/harm at f16 against the base: mmb rescues q1 and q2's rotation 0 (2) and harms q0's
    # rotation 1 (1); mme harms code_reasoning's second question (1)
    assert pq_view.rows() == [("ft", 0.5, pytest.approx(11 / 168), 2, 2, False)]


def test_document_official_first_per_question_labelled() -> None:
    doc = checkpoint_document(_tables(), STUDY)
    assert set(doc) == {"models", "base", "bases", "checkpoints", "dataset_kinds", "image_datasets", "video_datasets",
                        "headlines", "datasets", "temporal_trap", "train_frames", "benchmark_scores", "score_deltas",
                        "per_question"}
    assert set(doc["per_question"]) == {"table", "datasets", "temporal_trap", "train_frames", "categories"}
    assert [(r["dataset"], r["budget_id"], r["gain"]) for r in doc["datasets"] if r["model_id"] == "ft"] == [
        ("mmb", "f16", pytest.approx(-1 / 3)), ("mme", "f16", pytest.approx(-0.09375)), ("vid", "f16", 0.5)]
    assert [r["trapped"] for r in doc["temporal_trap"]] == [False, True, True]
    assert [r["trapped"] for r in doc["per_question"]["temporal_trap"] if r["model_id"] == "ft"] == [False] * 3


def test_a_null_total_leaves_its_dataset_out_of_the_trap() -> None:
    """Without the OCR rows the MME perception total is null for both models, so MME has no official delta
    (null) and the image side is MMBench alone: -1/3."""
    rows = [r for r in study_rows() if r.category != "OCR"]
    t = {k: collect_both(v) for k, v in checkpoint_tables(lazy(rows), STUDY, categories=()).items()}
    mme = t["headlines"].filter(pl.col("dataset") == "mme").select("metric", "value", "delta", "missing",
                                                                  "base_missing")
    assert mme.rows() == [("mme_cognition", 650.0, -150.0, None, None),
                          ("mme_perception", None, None, ["OCR"], ["OCR"])]
    assert t["cells"].filter(pl.col("dataset") == "mme")["gain"].to_list() == [None]
    trap = t["trap"].select("frames", "n_image_datasets", "image_gain", "trapped").rows()
    assert trap == [(0, 1, pytest.approx(-1 / 3), False), (8, 1, pytest.approx(-1 / 3), True),
                    (16, 1, pytest.approx(-1 / 3), True)]
