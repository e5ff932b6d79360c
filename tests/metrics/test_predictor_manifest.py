"""Predictions on disk, the frame-count manifest, and the predictor-eval / export-manifest commands."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from helpers.metric_rows import write_sweep
from helpers.predictor_rows import T0, all_predictions, predictions, predictor_rows
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

from engine.adaptive.predictions import PREDICTION_SCHEMA, export_manifest, scan_predictions, write_predictions
from engine.cli import app
from engine.results.schema import rows_to_frame


def test_write_and_scan_predictions(tmp_path: Path) -> None:
    assert scan_predictions(tmp_path).collect().is_empty()
    assert write_predictions(tmp_path, pl.DataFrame(schema=PREDICTION_SCHEMA)) is None
    first = write_predictions(tmp_path, predictions({"a": ("16", [16])}, at=T0))
    write_predictions(tmp_path, predictions().drop("video_id"))  # a missing column is written as null
    assert first is not None and first.parent == tmp_path / "predictions"
    assert sorted(p.name.startswith("part-") for p in (tmp_path / "predictions").iterdir()) == [True, True]
    got = scan_predictions(tmp_path).collect()
    assert got.schema == pl.Schema(PREDICTION_SCHEMA) and got.height == 7
    assert_frame_equal(scan_predictions(tmp_path / "predictions").collect(), got)


def _manifest(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_manifest_lines(tmp_path: Path) -> None:
    preds = pl.concat([all_predictions(), predictions({"z": ("thirty-two", [0, 32])}, dataset="d0")])
    out = tmp_path / "m" / "manifest.jsonl"
    assert export_manifest(preds.lazy(), None, out) == 6
    assert _manifest(out) == [
        '{"id": "d/a", "video": "v-a", "instruction": "What happens in a?", "frames": 4}',
        '{"id": "d/b", "video": "v-b", "instruction": "What happens in b?", "frames": 8}',
        '{"id": "d/e", "video": "v-e", "instruction": "What happens in e?", "frames": 32}',
        '{"id": "d/g", "video": "v-g", "instruction": "What happens in g?", "frames": 0}',
        '{"id": "d/h", "video": "v-h", "instruction": "What happens in h?", "frames": 8}',
        '{"id": "d0/z", "video": "v-z", "instruction": "What happens in z?", "frames": 32}',
    ]
    assert [p.name for p in out.parent.iterdir()] == ["manifest.jsonl"]  # no temp file left behind


def test_manifest_with_items_and_fallback(tmp_path: Path) -> None:
    items = pl.DataFrame({"dataset": ["d", "d", "d"], "item_id": ["a", "c", "q"],
                          "video": ["/media/a.mp4", "/media/c ü.mp4", "/media/q.mp4"]})
    out = tmp_path / "manifest.jsonl"
    out.write_text("old\n")
    assert export_manifest(all_predictions(), items.lazy(), out, fallback_frames=16) == 2
    assert _manifest(out) == [
        '{"id": "d/a", "video": "/media/a.mp4", "instruction": "What happens in a?", "frames": 4}',
        '{"id": "d/c", "video": "/media/c ü.mp4", "instruction": "What happens in c?", "frames": 16}',
    ]
    results = rows_to_frame(predictor_rows())  # one row per budget; video ids only
    assert export_manifest(all_predictions(), results, out) == 5  # c is unparsed, k has no prediction
    assert json.loads(_manifest(out)[0]) == {"id": "d/a", "video": "v-a", "instruction": "What happens in a?",
                                             "frames": 4}


def test_manifest_from_a_plain_frame(tmp_path: Path) -> None:
    """As the online run builds it: plain Python values, an all-null frame count column."""
    preds = pl.DataFrame([{"predictor_id": "p", "dataset": "d", "item_id": "x", "video_id": "v", "instruction": "?",
                           "raw_answer": "hm", "predicted_frames": None, "parse_status": "unparsed: no letter"}])
    assert export_manifest(preds, None, tmp_path / "m.jsonl") == 0 and _manifest(tmp_path / "m.jsonl") == []
    assert export_manifest(preds, None, tmp_path / "m.jsonl", fallback_frames=8) == 1
    assert export_manifest(pl.DataFrame(), None, tmp_path / "m.jsonl") == 0


def test_manifest_needs_one_predictor(tmp_path: Path) -> None:
    preds = pl.concat([predictions(), predictions(predictor="q")])
    with pytest.raises(ValueError, match="several predictors"):
        export_manifest(preds, None, tmp_path / "m.jsonl")
    assert export_manifest(preds, None, tmp_path / "m.jsonl", predictor_id="q") == 5


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run")
    write_sweep(out, predictor_rows())
    write_predictions(out, all_predictions().head(1))
    write_predictions(out, all_predictions().tail(-1))
    return out


def test_predictor_eval_command(run_dir: Path, tmp_path: Path) -> None:
    doc_path = tmp_path / "p.json"
    res = CliRunner().invoke(app, ["predictor-eval", str(run_dir), "--json", str(doc_path), "--engine", "streaming"])
    assert res.exit_code == 0, res.output
    assert "predictor p for m on d" in res.output and "cheapest sufficient" in res.output
    doc = json.loads(doc_path.read_text())
    assert doc["schema"] == "framesweep.predictor/1" and len(doc["groups"]) == 1
    g = doc["groups"][0]
    assert (g["accuracy"], g["mean_frames"], g["agreement"], g["n_unparsed"]) == (0.4, 8.8, 0.25, 1)
    res = CliRunner().invoke(app, ["predictor-eval", str(run_dir), "--predictions", str(run_dir / "predictions"),
                                   "--fallback", "f4"])
    assert res.exit_code == 0 and "predictor p for m on d" in res.output
    res = CliRunner().invoke(app, ["predictor-eval", str(run_dir), "--model-id", "nobody"])
    assert res.exit_code == 2 and "--model-id: 'nobody' is no model of these results; known: m" in res.output
    res = CliRunner().invoke(app, ["predictor-eval", str(tmp_path)])
    assert res.exit_code == 2


def test_export_manifest_command(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "manifest.jsonl"
    res = CliRunner().invoke(app, ["export-manifest", str(run_dir), "--out", str(out), "--fallback-frames", "64"])
    assert res.exit_code == 0, res.output
    assert "wrote 6 lines" in res.output
    assert json.loads(_manifest(out)[2]) == {"id": "d/c", "video": "v-c", "instruction": "What happens in c?",
                                             "frames": 64}
    items = tmp_path / "items.jsonl"
    items.write_text('{"dataset": "d", "item_id": "b", "video": "/m/b.mp4"}\n')
    res = CliRunner().invoke(app, ["export-manifest", str(run_dir), "--out", str(out), "--items", str(items)])
    assert res.exit_code == 0, res.output
    assert _manifest(out) == ['{"id": "d/b", "video": "/m/b.mp4", "instruction": "What happens in b?", "frames": 8}']
    res = CliRunner().invoke(app, ["export-manifest", str(run_dir), "--out", str(out), "--items", str(tmp_path)])
    assert res.exit_code == 2
