"""The checkpoint study: kinds from the items' media, families per base, the train-frames view, official
score deltas, and `framesweep checkpoints` reading the study from the run's manifest. Values by hand."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from helpers.benchmark_rows import mme_rows
from helpers.metric_rows import collect_both, frame, lazy
from typer.testing import CliRunner

from engine.cli import app
from engine.metrics.benchmark_scores import benchmark_scores
from engine.metrics.checkpoint_study import (
    Checkpoint,
    families,
    resolve_study,
    score_deltas,
    study_from_spec,
    train_frames_view,
)
from engine.metrics.checkpoints import checkpoint_table, checkpoint_tables, dataset_kinds, temporal_trap
from engine.results.schema import ResultRow

VIDEO = {"text": 0, "f16": 16}


def _rows(model: str, dataset: str, traj: dict[str, str], media: str | None, sent: int | None = None) -> list[ResultRow]:
    """Rows at text and f16; an image item sends its one picture at f16 (`sent`), never 16 frames."""
    rows = frame(traj, model=model, dataset=dataset, budgets=VIDEO)
    out = []
    for r in rows:
        n = r.frames if sent is None or r.frames == 0 else sent
        out.append(ResultRow(**{**r.__dict__, "media_kind": media, "frames_sent": n, "frame_indices": list(range(n)),
                                "pixels_total": n * 64}))
    return out


def trap_rows(media: bool = True) -> list[ResultRow]:
    """vid: base a 00 b 01, ft a 01 b 11; img (the image at f16): base p 11 q 11, ft p 01 q 10."""
    vid, img = ("video", "image") if media else (None, None)
    return [*_rows("base", "vid", {"a": "00", "b": "01"}, vid), *_rows("ft", "vid", {"a": "01", "b": "11"}, vid),
            *_rows("base", "img", {"p": "11", "q": "11"}, img, sent=1),
            *_rows("ft", "img", {"p": "01", "q": "10"}, img, sent=1)]


STUDY = [Checkpoint("base"), Checkpoint("ft", base="base", train_frames=16, size="7B", architecture="arch")]


@pytest.mark.parametrize("media", [True, False])
def test_an_image_set_at_a_16_frame_budget_stays_an_image_set_and_the_trap_stays_visible(media: bool) -> None:
    rows = lazy(trap_rows(media))  # media False: rows from before media_kind, read by frames_sent
    assert collect_both(dataset_kinds(rows)).rows() == [("img", "image"), ("vid", "video")]
    table = checkpoint_table(rows, STUDY)
    trap = collect_both(temporal_trap(table)).filter(pl.col("model_id") == "ft")
    assert trap.select("frames", "video_gain", "image_gain", "trapped").rows() == [(0, 0.5, -0.5, True),
                                                                                   (16, 0.5, -0.5, True)]
    view = collect_both(train_frames_view(table, STUDY))
    assert view.select("model_id", "train_frames", "video_gain", "image_loss", "video_rescue", "video_harm",
                       "image_rescue", "image_harm", "trapped").rows() == [("ft", "16", 0.5, 0.5, 1, 0, 0, 1, True)]


def test_kind_text_and_the_budget_never_decides() -> None:
    text_only = _rows("base", "txt", {"x": "10"}, "none", sent=0)
    # media_kind wins over what was sent; a null-media dataset that sent 16 frames is video
    legacy = _rows("base", "old", {"y": "10"}, None)
    assert collect_both(dataset_kinds(lazy([*text_only, *legacy, *trap_rows()]))).rows() == [
        ("img", "image"), ("old", "video"), ("txt", "text"), ("vid", "video")]
    assert collect_both(dataset_kinds(lazy(trap_rows()), ["vid"])).rows() == [("img", "video"), ("vid", "image")]


# two families: A (7B, family qwen2_5_vl) base a8 a16 ahyb; B (2B, architecture llava) base b16, at f16 only
CELLS = {"video": {"baseA": "00", "a8": "10", "a16": "11", "ahyb": "10", "baseB": "10", "b16": "11"},
         "image": {"baseA": "11", "a8": "10", "a16": "00", "ahyb": "11", "baseB": "10", "b16": "10"}}
SPEC = {"models": [
    {"id": "baseA", "family": "qwen2_5_vl", "checkpoint": {"size": "7B"}},
    {"id": "a8", "family": "qwen2_5_vl", "checkpoint": {"base": "baseA", "train_frames": 8, "size": "7B"}},
    {"id": "a16", "family": "qwen2_5_vl", "checkpoint": {"base": "baseA", "train_frames": 16, "size": "7B",
                                                         "label": "A-16"}},
    {"id": "ahyb", "family": "qwen2_5_vl", "checkpoint": {"base": "baseA", "train_frames": "hybrid", "size": "7B"}},
    {"id": "other", "family": "qwen2_5_vl"},
    {"id": "baseB", "family": "llava_onevision"},
    {"id": "b16", "family": "llava_onevision", "checkpoint": {"base": "baseB", "train_frames": 16, "size": "2B",
                                                              "architecture": "llava"}},
]}


def family_rows() -> list[ResultRow]:
    out = []
    for kind, per_model in CELLS.items():
        ds, media, sent = ("vid", "video", 16) if kind == "video" else ("img", "image", 1)
        for model, marks in per_model.items():
            for item, mark in zip("ab" if kind == "video" else "pq", marks, strict=True):
                out += _rows(model, ds, {item: "0" + mark}, media, sent=sent)
    return [*out, *_rows("other", "vid", {"a": "11", "b": "11"}, "video")]


def test_study_from_spec_and_families() -> None:
    study = study_from_spec(SPEC)
    assert [c.model_id for c in study] == ["baseA", "a8", "a16", "ahyb", "baseB", "b16"]  # "other": no study
    assert study[5] == Checkpoint("b16", base="baseB", train_frames=16, size="2B", architecture="llava")
    assert study[4].architecture == "llava_onevision" and study[1].architecture == "qwen2_5_vl"
    assert families(study) == [["baseA", "a8", "a16", "ahyb"], ["baseB", "b16"]]
    with pytest.raises(ValueError, match="bases not in the study: zz"):
        resolve_study([Checkpoint("x", base="zz")])
    with pytest.raises(ValueError, match="no checkpoint names a base"):
        resolve_study([Checkpoint("x")])


def test_train_frames_view_per_architecture_and_size_hybrid_beside_fixed() -> None:
    study = study_from_spec(SPEC)
    table = checkpoint_table(lazy(family_rows()), study)
    t = collect_both(table).filter(pl.col("budget_id") == "f16")
    assert t.select("model_id", "base_id", "dataset", "accuracy", "base_accuracy", "gain").filter(
        pl.col("model_id") == "b16").rows() == [("b16", "baseB", "img", 0.5, 0.5, 0.0), ("b16", "baseB", "vid", 1.0,
                                                                                          0.5, 0.5)]
    view = collect_both(train_frames_view(table, study))
    assert view.select("architecture", "size", "train_frames", "model_id", "label", "base_id", "video_gain",
                       "image_loss", "trapped").rows() == [
        ("llava", "2B", "16", "b16", "b16", "baseB", 0.5, 0.0, False),
        ("qwen2_5_vl", "7B", "8", "a8", "a8", "baseA", 0.5, 0.5, True),
        ("qwen2_5_vl", "7B", "16", "a16", "A-16", "baseA", 1.0, 1.0, True),
        ("qwen2_5_vl", "7B", "hybrid", "ahyb", "ahyb", "baseA", 0.5, 0.0, False),
    ]
    assert view.select("video_rescue", "video_harm", "image_rescue", "image_harm").rows() == [
        (1, 0, 0, 0), (1, 0, 0, 1), (2, 0, 0, 2), (1, 0, 0, 0)]


def test_official_score_deltas_against_the_base() -> None:
    base = [ResultRow(**{**r.__dict__, "model_id": "base"}) for r in mme_rows()]
    ft = [ResultRow(**{**r.__dict__, "model_id": "ft", "correct": True, "pred": "yes", "score": 1.0}) for r in base]
    scores = benchmark_scores(lazy([*base, *ft]))
    got = collect_both(score_deltas(scores, STUDY))
    d = {(m, s): (v, b, x) for m, s, v, b, x in got.select("metric", "subset", "value", "base_value", "delta").rows()}
    # 2 of the 10 perception and 1 of the 4 cognition subtasks ran: no totals, so no delta (the sums read
    # 400 - 125 = 275 and 200 - 125 = 75)
    assert d[("mme_perception", None)] == (None, None, None)
    assert d[("mme_cognition", None)] == (None, None, None)
    assert d[("mme_score", "celebrity")] == pytest.approx((200.0, 125.0, 75.0))
    assert d[("mme_score", "OCR")] == pytest.approx((200.0, 0.0, 200.0))
    assert d[("accuracy", None)] == pytest.approx((1.0, 0.6, 0.4))
    assert set(got["model_id"]) == {"ft"} and set(got["base_id"]) == {"base"}


def _sweep(tmp_path: Path, rows: list[ResultRow], spec: dict) -> Path:
    from engine.results.store import ResultStore

    out = tmp_path / "sweep"
    with ResultStore(out) as store:
        store.add(rows)
        store.commit()
        store.write_manifest({"sweep_id": "t", "spec": spec})
    return out


def test_checkpoints_command_reads_the_study_from_the_manifest(tmp_path: Path) -> None:
    out = _sweep(tmp_path, family_rows(), {**SPEC, "datasets": [{"name": "synthetic", "id": "vid"}]})
    path = tmp_path / "c.json"
    res = CliRunner().invoke(app, ["checkpoints", str(out), "--json", str(path)])
    assert res.exit_code == 0, res.output
    assert "against train frames" in res.output and "hybrid" in res.output
    doc = json.loads(path.read_text())
    assert doc["schema"] == "framesweep.checkpoints/3" and doc["bases"] == ["baseA", "baseB"]
    assert doc["dataset_kinds"] == {"img": "image", "vid": "video"}
    assert [r["model_id"] for r in doc["train_frames"]] == ["b16", "a8", "a16", "ahyb"]
    acc = {(r["model_id"], r["dataset"], r["budget_id"]): r["value"] for r in doc["benchmark_scores"]
           if r["metric"] == "accuracy"}
    assert acc[("a16", "vid", "f16")] == 1.0 and acc[("a16", "img", "f16")] == 0.0 and ("other", "vid", "f16") not in acc
    assert set(doc["benchmark_scores"][0]) == {"model_id", "dataset", "budget_id", "metric", "subset", "value",
                                               "headline", "missing"}
    # --models overrides the study (first the base) and keeps the spec's train frames
    res = CliRunner().invoke(app, ["checkpoints", str(out), "--models", "baseA,a16", "--json", str(path)])
    assert res.exit_code == 0, res.output
    doc = json.loads(path.read_text())
    assert [(r["model_id"], r["train_frames"]) for r in doc["train_frames"]] == [("a16", "16")]


def test_checkpoints_command_without_a_study_names_the_fix(tmp_path: Path) -> None:
    out = _sweep(tmp_path, trap_rows(), {"models": [{"id": "base", "family": "f"}, {"id": "ft", "family": "f"}]})
    res = CliRunner().invoke(app, ["checkpoints", str(out)])
    assert res.exit_code == 2 and "--models" in res.output
    res = CliRunner().invoke(app, ["checkpoints", str(out), "--models", "base,ft"])
    assert res.exit_code == 0, res.output


def test_tables_collect_together() -> None:
    tables = checkpoint_tables(lazy(family_rows()), study_from_spec(SPEC), categories=("task_type",))
    got = {k: collect_both(v) for k, v in tables.items()}
    assert got["datasets"].filter(pl.col("model_id") == "a16").select("dataset", "budget_id", "gain").rows() == [
        ("img", "f16", -1.0), ("vid", "f16", 1.0)]
