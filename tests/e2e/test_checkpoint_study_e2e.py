"""The checkpoint study end to end on the real CPU engine: two tiny checkpoints (the base, and a second one
built with another seed standing in for a 16-frame fine-tune) over the synthetic video benchmark and small
MME, POPE and MMBench files in one spec with several datasets; `framesweep checkpoints` reads the study from
the manifest, classifies every dataset from its items' media (the image sets asked once each, as one image, at
their `image` budget beside the video set's text-only and 8-frame budgets), and
its official image scores equal a plain-Python computation from the committed rows; the JSON and the report
carry the train-frames view.

Random weights answer near-uniformly: the assertions are pipeline facts and equalities with an independent
computation, never particular accuracies.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest
from helpers.specs import small_spec_dict
from helpers.study_files import write_mmbench, write_mme, write_pope
from typer.testing import CliRunner

from engine.cli import app
from engine.config import parse_spec
from engine.datasets.mme import COGNITION, PERCEPTION
from engine.demo.tiny import build_tiny_checkpoint
from engine.results import ResultsDir
from engine.sweep import Sweep

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)


def _spec(tmp_path: Path) -> dict:
    d = small_spec_dict(tmp_path / "out")
    ft_path = str(build_tiny_checkpoint("qwen2_5_vl", seed=1))
    engine = d["models"][0]["engine"]
    d["models"] = [
        {"id": "base", "family": "qwen2_5_vl", "path": "tiny:qwen2_5_vl", "engine": engine,
         "checkpoint": {"size": "tiny", "label": "base"}},
        {"id": "ft16", "family": "qwen2_5_vl", "path": ft_path, "engine": engine,
         "checkpoint": {"base": "base", "train_frames": 16, "size": "tiny", "label": "FT-16"}},
    ]
    pope, coco = write_pope(tmp_path / "data")
    cache = tmp_path / "image-cache"
    d.pop("dataset")
    d["datasets"] = [
        {"name": "synthetic", "n_videos": 2, "seconds": 4.0, "fps": 8, "width": 96, "height": 64},
        {"name": "mme", "annotations": str(write_mme(tmp_path / "data")), "image_cache": str(cache)},
        {"name": "pope", "id": "pope_val", "annotations": str(pope), "media_root": str(coco)},
        {"name": "mmbench", "annotations": str(write_mmbench(tmp_path / "data")), "image_cache": str(cache)},
    ]
    d["budgets"] = [{"frames": 0}, {"frames": 8}]
    d["prompt"] = {"max_new_tokens": 4}  # letters for the MCQ sets; yes/no answers are generated
    return d


def _by_hand(rows: pl.DataFrame) -> dict[tuple[str, str, str, str, str | None], float | None]:
    """The official scores recomputed in plain Python from the committed rows (no Polars expressions)."""
    out: dict[tuple[str, str, str, str, str | None], float | None] = {}
    cells: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for r in rows.filter(pl.col("status") == "ok").to_dicts():
        cells[(r["model_id"], r["dataset"], r["budget_id"])].append(r)
    for (m, ds, b), rs in cells.items():
        judged = [r["correct"] for r in rs if r["correct"] is not None]
        if judged:
            out[(m, ds, b, "accuracy", None)] = sum(judged) / len(judged)
        if ds == "mme":
            per_cat: dict[str, list[dict]] = defaultdict(list)
            for r in rs:
                per_cat[r["category"]].append(r)
            scores: dict[str, float] = {}
            for cat, crs in per_cat.items():
                acc = 100 * sum(bool(r["correct"]) for r in crs) / len(crs)
                images: dict[str, list[bool]] = defaultdict(list)
                for r in crs:
                    images[r["item_id"].rsplit("#", 1)[0]].append(bool(r["correct"]))
                complete = [all(v) for v in images.values() if len(v) == 2]  # both questions answered
                if complete:
                    scores[cat] = acc + 100 * sum(complete) / len(complete)
                    out[(m, ds, b, "mme_score", cat)] = scores[cat]
                assert cat in PERCEPTION or cat in COGNITION
            for k, half in (("mme_perception", PERCEPTION), ("mme_cognition", COGNITION)):
                # a total needs every subtask of its half (the fixture has two subtasks: both are null)
                out[(m, ds, b, k, None)] = sum(scores[c] for c in half) if all(c in scores for c in half) else None
        if ds == "pope_val":
            for split in (None, "adversarial", "random"):
                srs = [r for r in rs if split is None or r["category"] == split]
                said = [(r["pred"] or "").strip().lower() == "yes" for r in srs]
                gold = [r["answer"] == "yes" for r in srs]
                tp = sum(s and g for s, g in zip(said, gold, strict=True))
                fp = sum(s and not g for s, g in zip(said, gold, strict=True))
                tn = sum((r["pred"] or "").strip().lower() == "no" and not g for r, g in zip(srs, gold, strict=True))
                fn = sum(not s and g for s, g in zip(said, gold, strict=True))
                out[(m, ds, b, "pope_accuracy", split)] = (tp + tn) / len(srs)
                out[(m, ds, b, "pope_yes_ratio", split)] = (tp + fp) / len(srs)
                p = tp / (tp + fp) if tp + fp else None
                rec = tp / (tp + fn) if tp + fn else None
                if p is not None and rec is not None:
                    out[(m, ds, b, "pope_f1", split)] = 2 * p * rec / (p + rec) if p + rec else 0.0
        if ds == "mmbench":
            questions: dict[int, list[bool]] = defaultdict(list)
            for r in rs:
                questions[int(r["item_id"]) % 1_000_000].append(bool(r["correct"]))
            every = {int(r["item_id"]) % 1_000_000 for r in rows.filter(pl.col("dataset") == ds).to_dicts()}
            right = [len(questions.get(q, [])) == 4 and all(questions[q]) for q in every]  # 4 options, 4 rotations
            out[(m, ds, b, "mmbench_circular_accuracy", None)] = sum(right) / len(right)  # incomplete = wrong
    return out


def test_checkpoint_study_end_to_end(tmp_path: Path, warm_engine: Path) -> None:
    import ray

    spec = parse_spec(_spec(tmp_path))
    try:
        summary = asyncio.run(Sweep(spec).run())
    finally:
        ray.shutdown()
    rows = ResultsDir.open(tmp_path / "out").scan().collect()
    # 6 synthetic items at 2 budgets + 4 MME + 4 POPE + 8 MMBench (2 questions x 4 rotations) items once, 2 models
    assert summary.jobs_failed == 0 and rows.height == (6 * 2 + 4 + 4 + 8) * 2
    kinds = dict(rows.group_by("dataset").agg(pl.col("media_kind").unique()).iter_rows())
    assert {ds: sorted(v) for ds, v in kinds.items()} == {"synthetic": ["video"], "mme": ["image"],
                                                         "pope_val": ["image"], "mmbench": ["image"]}
    images = rows.filter(pl.col("dataset") != "synthetic")
    assert set(images["budget_id"]) == {"image"}  # no text-only run, no re-ask per frame count
    assert set(images["frames"]) == {1} and set(images["frames_sent"]) == {1}  # one image, as one image
    assert rows.filter(pl.col("dataset") == "mme")["group_id"].n_unique() == 2

    out = tmp_path / "checkpoints.json"
    res = CliRunner().invoke(app, ["checkpoints", str(tmp_path / "out"), "--json", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["bases"] == ["base"] and [c["model_id"] for c in doc["checkpoints"]] == ["base", "ft16"]
    assert doc["dataset_kinds"] == {"mmbench": "image", "mme": "image", "pope_val": "image", "synthetic": "video"}

    got = {(s["model_id"], s["dataset"], s["budget_id"], s["metric"], s["subset"]): s["value"]
           for s in doc["benchmark_scores"]}
    want = _by_hand(rows)
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=1e-9), key
    for m in ("base", "ft16"):
        for metric in ("mme_perception", "mme_cognition", "pope_accuracy", "pope_yes_ratio",
                       "mmbench_circular_accuracy"):
            assert (m, "mme" if metric.startswith("mme") else "pope_val" if metric.startswith("pope") else
                    "mmbench", "image", metric, None) in got
    # the train-frames view on official scores: the video set and the image sets with an official delta (MME's
    # totals are null, two of its subtasks only: left out); per question all three image sets
    (tf,) = doc["train_frames"]
    assert {b for r in doc["temporal_trap"] for b in r["image_budgets"]} == {"mmbench:image", "pope_val:image"}
    assert (tf["model_id"], tf["train_frames"], tf["size"], tf["label"]) == ("ft16", "16", "tiny", "FT-16")
    assert (tf["n_video_datasets"], tf["n_image_datasets"]) == (1, 2)
    video = next(r for r in doc["datasets"] if (r["model_id"], r["dataset"]) == ("ft16", "synthetic"))
    assert tf["video_gain"] == pytest.approx(video["gain"])
    assert video["gain"] == pytest.approx(got[("ft16", "synthetic", "f8", "accuracy", None)]
                                          - got[("base", "synthetic", "f8", "accuracy", None)])
    (pq_tf,) = doc["per_question"]["train_frames"]
    assert (pq_tf["n_video_datasets"], pq_tf["n_image_datasets"]) == (1, 3)
    pq_video = next(r for r in doc["per_question"]["datasets"] if (r["model_id"], r["dataset"]) == ("ft16",
                                                                                                     "synthetic"))
    assert pq_video["rescue"] - pq_video["harm"] == pytest.approx(pq_video["gain"] * pq_video["n_items"])
    deltas = {(d["dataset"], d["metric"], d["subset"]): d["delta"] for d in doc["score_deltas"]
              if d["budget_id"] == "image"}
    assert deltas[("mme", "mme_perception", None)] is None  # no total, so no delta
    assert deltas[("mme", "mme_score", "celebrity")] == pytest.approx(
        got[("ft16", "mme", "image", "mme_score", "celebrity")] - got[("base", "mme", "image", "mme_score",
                                                                         "celebrity")])

    report = tmp_path / "report.html"
    res = CliRunner().invoke(app, ["report", str(tmp_path / "out"), "-o", str(report), "--n-boot", "0"])
    assert res.exit_code == 0, res.output
    html = report.read_text()
    for fig in ("table-train-frames", "fig-train-frames", "table-benchmark-scores", "table-category-deltas",
                "table-checkpoint-datasets", "table-headlines", "table-temporal-trap-per-question"):
        assert f'id="{fig}"' in html
    assert "FT-16" in html and "mme_perception" in html
