"""The export carries each benchmark's official scores (`scores.parquet`) and every item's scoring group, with
the Video-MME v2 group score at each budget: values by hand."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from helpers.metric_rows import row
from typer.testing import CliRunner

from engine.cli import app
from engine.results.schema import ResultRow
from engine.results.store import ResultStore

GROUPS = {  # video: (type, structure, marks at text, marks at f8)
    "001": ("relevance", "[1,2,3,4]", "0000", "1011"),  # f8: 3 right -> 900/16 = 56.25
    "002": ("logic", "[1,[2,3],4]", "1000", "1101"),  # text: run 1 -> 100/12; f8: run 2 -> 400/12
}


def _rows() -> list[ResultRow]:
    out = []
    for video, (gtype, structure, *marks) in GROUPS.items():
        for (budget, frames), ms in zip({"text": 0, "f8": 8}.items(), marks, strict=True):
            out += [row("m", "videomme_v2", f"{video}-{q}", budget, frames, m, dataset_version="videomme-v2.fs1",
                        group_id=video, group_size=4, group_type=gtype, group_structure=structure)
                    for q, m in enumerate(ms, 1)]
    # MMBench at f8: q0 (2 options) right twice, q1 (2 options) one rotation an error row -> official 1/2
    out += [row("m", "mmb", str(q + r * 1_000_000), b, f, m, dataset_version="mmbench-dev.fs1", group_id=str(q),
                group_size=2) for b, f in (("text", 0), ("f8", 8)) for q, ms in ((0, "11"), (1, "1e"))
            for r, m in enumerate(ms)]
    return out


def _export(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    with ResultStore(out) as store:
        store.add(_rows())
        store.commit()
        store.write_manifest({"sweep_id": "t", "spec": {"sweep_id": "t", "models": [{"id": "m", "family": "f",
                                                                                     "path": "nowhere"}]}})
    res = CliRunner().invoke(app, ["export", str(out), "--to", str(tmp_path / "art")])
    assert res.exit_code == 0, res.output
    return tmp_path / "art"


def test_export_carries_official_scores_and_v2_group_scores(tmp_path: Path) -> None:
    art = _export(tmp_path)
    assert sorted(p.name for p in art.iterdir()) == ["README.md", "items.parquet", "provenance.json",
                                                     "scores.parquet", "videos.parquet"]
    items = pl.read_parquet(art / "items.parquet")
    v2 = items.filter(pl.col("dataset") == "videomme_v2").group_by("group_id", "budget_id").agg(
        pl.col("group_score").unique()).sort("group_id", "budget_id")
    assert v2.rows() == [("001", "f8", [56.25]), ("001", "text", [0.0]), ("002", "f8", [pytest.approx(400 / 12)]),
                         ("002", "text", [pytest.approx(100 / 12)])]
    one = items.filter(pl.col("item_id") == "002-3").row(0, named=True)
    assert (one["group_id"], one["group_size"], one["group_type"], one["group_structure"]) == (
        "002", 4, "logic", "[1,[2,3],4]")
    assert items.filter(pl.col("dataset") == "mmb")["group_score"].is_null().all()
    scores = pl.read_parquet(art / "scores.parquet")
    assert scores.columns == ["model_id", "dataset", "protocol_id", "budget_id", "metric", "subset", "value",
                              "headline", "missing"]
    got = {(d, b, m): v for d, b, m, v in scores.filter(pl.col("subset").is_null()).select(
        "dataset", "budget_id", "metric", "value").rows()}
    assert got[("videomme_v2", "f8", "videomme_v2_score")] == pytest.approx((56.25 + 400 / 12) / 2)
    assert got[("videomme_v2", "text", "videomme_v2_score")] == pytest.approx((0 + 100 / 12) / 2)
    assert got[("mmb", "f8", "mmbench_circular_accuracy")] == 0.5  # q1 has an error row: wrong
    assert got[("mmb", "f8", "mmbench_n_incomplete")] == 1.0
    assert scores.filter(pl.col("headline"))["metric"].unique().sort().to_list() == [
        "mmbench_circular_accuracy", "videomme_v2_score"]
    card = (art / "README.md").read_text()
    assert "## Official scores (`scores.parquet`)" in card and "`group_score`" in card
