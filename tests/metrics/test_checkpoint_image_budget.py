"""The checkpoint study reads an image benchmark's score from its image budget, and says which.

An image benchmark asked once as one image ("image", frames 1) may also have rows at other budgets: a
cached copy ("image-cached"), a text-only baseline, or a video budget of an older sweep that sent the
same image capped at its max_pixels ("f16-px200704", frames 16, one frame sent). Its score is the
"image" budget's; a video benchmark's stays at its dearest budget. By hand:

- vid (video), items a, b at text / f8 / f16: base a 000 b 001, ft a 011 b 011 -> ft gains 0, +1, +1/2.
- img (image), items p, q, r:      text  image  image-cached  f16-px200704
      base                          000   110    100           111
      ft                            000   100    110           111
  ft's gain at "image" is 1/3 - 2/3 = -1/3 (at the dearest budget, f16-px200704, it would be 0, and at
  image-cached +1/3): trapped at 8 and 16 frames (video gains +1 and +1/2).
"""

from __future__ import annotations

import polars as pl
import pytest
from helpers.metric_rows import collect_both, lazy, row

from engine.metrics.checkpoint_study import Checkpoint
from engine.metrics.checkpoints import checkpoint_document, checkpoint_tables
from engine.results.schema import ResultRow

STUDY = [Checkpoint("base"), Checkpoint("ft", base="base", train_frames=16)]
IMAGE = {"text": (0, {}), "image": (1, {}), "image-cached": (1, {"pipeline": "cached"}),
         "f16-px200704": (16, {"max_pixels": 200704})}


def _rows() -> list[ResultRow]:
    out = []
    for model, marks in (("base", {"a": "000", "b": "001"}), ("ft", {"a": "011", "b": "011"})):
        for item, ms in marks.items():
            out += [row(model, "vid", item, b, f, m, media_kind="video")
                    for (b, f), m in zip({"text": 0, "f8": 8, "f16": 16}.items(), ms, strict=True)]
    for model, marks in (("base", {"p": "0111", "q": "0101", "r": "0001"}),
                         ("ft", {"p": "0111", "q": "0011", "r": "0001"})):
        for item, ms in marks.items():
            for (b, (f, extra)), m in zip(IMAGE.items(), ms, strict=True):
                out.append(row(model, "img", item, b, f, m, media_kind="image", frames_sent=min(f, 1),
                               frame_indices=[0] if f else [], **extra))
    return out


def _tables() -> dict[str, pl.DataFrame]:
    return {k: collect_both(v) for k, v in checkpoint_tables(lazy(_rows()), STUDY, categories=()).items()}


def test_the_image_score_comes_from_the_image_budget() -> None:
    t = _tables()
    ft = t["datasets"].filter(pl.col("model_id") == "ft")
    assert ft.select("dataset", "kind", "budget_id", "gain").rows() == [
        ("img", "image", "image", pytest.approx(-1 / 3)), ("vid", "video", "f16", 0.5)]
    trap = t["trap"].select("frames", "video_gain", "n_image_datasets", "image_gain", "image_budgets", "trapped")
    assert trap.rows() == [(0, 0.0, 1, pytest.approx(-1 / 3), ["img:image"], False),
                           (8, 1.0, 1, pytest.approx(-1 / 3), ["img:image"], True),
                           (16, 0.5, 1, pytest.approx(-1 / 3), ["img:image"], True)]
    view = t["train_frames"].select("model_id", "video_gain", "image_gain", "trapped")
    assert view.rows() == [("ft", 0.5, pytest.approx(-1 / 3), True)]


def test_the_per_question_view_reads_the_same_budget() -> None:
    t = _tables()
    ft = t["pq:datasets"].filter(pl.col("model_id") == "ft")
    assert ft.select("dataset", "budget_id", "accuracy", "base_accuracy").rows() == [
        ("img", "image", pytest.approx(1 / 3), pytest.approx(2 / 3)), ("vid", "f16", 1.0, 0.5)]
    pq = t["pq:trap"].filter(pl.col("model_id") == "ft").select("frames", "image_gain", "image_budgets", "trapped")
    assert pq.rows() == [(0, pytest.approx(-1 / 3), ["img:image"], False),
                         (8, pytest.approx(-1 / 3), ["img:image"], True),
                         (16, pytest.approx(-1 / 3), ["img:image"], True)]
    assert t["pq:train_frames"].select("image_gain", "image_harm", "image_rescue").rows() == [
        (pytest.approx(-1 / 3), 1, 0)]  # q right at base's image budget, wrong at ft's
    doc = checkpoint_document(t, STUDY)
    assert [r["image_budgets"] for r in doc["temporal_trap"]] == [["img:image"]] * 3


@pytest.mark.parametrize(("drop", "budget", "gain"), [
    ({"image"}, "image-cached", 1 / 3),  # every visual budget cached: its image budget
    ({"image", "image-cached"}, "f16-px200704", 0.0),  # an older sweep: the dearest budget, as before
    ({"image", "image-cached", "f16-px200704"}, "text", 0.0),  # text-only rows alone
])
def test_without_the_image_budget(drop: set[str], budget: str, gain: float) -> None:
    rows = [r for r in _rows() if r.budget_id not in drop]
    t = {k: collect_both(v) for k, v in checkpoint_tables(lazy(rows), STUDY, categories=()).items()}
    ft = t["datasets"].filter((pl.col("model_id") == "ft") & (pl.col("dataset") == "img"))
    assert ft.select("budget_id", "gain").rows() == [(budget, pytest.approx(gain))]


def test_tables_mark_the_score_budget_and_the_report_reads_categories_there() -> None:
    from engine.report.checkpoint_section import _category_rows

    rows = [r.__class__(**{**r.__dict__, "task_type": "t"}) if r.dataset == "img" else r for r in _rows()]
    tables = {k: collect_both(v) for k, v in checkpoint_tables(lazy(rows), STUDY, categories=("task_type",)).items()}
    marked = tables["pq:table"].filter((pl.col("model_id") == "ft") & pl.col("score_budget"))
    assert marked.select("dataset", "budget_id").rows() == [("img", "image"), ("vid", "f16")]
    doc = checkpoint_document(tables, STUDY)
    per_question = [r for r in _category_rows(doc) if "per question" in r[3]]
    assert [(r[1], r[2], r[4]) for r in per_question] == [("img", "image", "t")]  # at its image budget, not f16-px


def test_the_cli_names_the_budget_each_image_score_comes_from(tmp_path) -> None:
    from helpers.metric_rows import write_sweep
    from typer.testing import CliRunner

    from engine.cli import app

    write_sweep(tmp_path / "sweep", _rows())
    res = CliRunner().invoke(app, ["checkpoints", str(tmp_path / "sweep"), "--models", "base,ft"],
                             env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "image scores from (dataset:budget): img:image" in res.output
