"""The hybrid-frame predictor with the real vLLM CPU engine: predictions, online run, manifest."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import polars as pl
import pytest
from helpers.specs import small_spec_dict

from engine.adaptive.predictions import evaluate_predictor, export_manifest, scan_predictions
from engine.adaptive.predictor import predict_frames, predicted_budget_id, run_predicted
from engine.config import parse_spec
from engine.results import ResultsDir
from engine.results.store import latest_rows
from engine.sweep import Sweep, start_backends

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)


def test_predict_run_evaluate_export(tmp_path: Path, warm_engine: Path) -> None:
    import ray

    spec = parse_spec(small_spec_dict(tmp_path / "out"))

    async def go():
        backends = await start_backends(spec)
        try:
            await Sweep(spec, backends=backends).run()  # the fixed grid, for the offline evaluation
            preds = await predict_frames(spec, "tiny", backends)
            again = await predict_frames(spec, "tiny", backends)
            summary = await run_predicted(spec, "tiny", preds, backends)
            glimpsed = await predict_frames(spec.with_out_dir(tmp_path / "g"), "tiny", backends, glimpse_frames=2)
            return preds, again, summary, glimpsed
        finally:
            await asyncio.gather(*(b.close() for b in backends.values()))
            ray.shutdown()

    preds, again, summary, glimpsed = asyncio.run(go())
    assert preds.height == 9 and set(preds["parse_status"]) == {"letter"}
    assert set(preds["predicted_frames"]) <= {0, 2, 4, 8}
    assert preds["raw_answer"].str.len_chars().min() >= 1  # the model's own answer is kept
    assert preds["predicted_frames"].to_list() == again["predicted_frames"].to_list()  # deterministic
    assert glimpsed.height == 9
    # committed, and readable as the predictions table
    assert scan_predictions(tmp_path / "out").collect().height == 18
    # every item answered online at its predicted budget
    assert summary.jobs_ok == 9 and summary.jobs_failed == 0
    rows = ResultsDir.open(tmp_path / "out").scan().filter(pl.col("budget_id") == predicted_budget_id("tiny")).collect()
    got = rows.select("item_id", pl.col("frames").cast(pl.Int32)).sort("item_id")
    want = preds.select("item_id", pl.col("predicted_frames").cast(pl.Int32).alias("frames")).sort("item_id")
    assert got.equals(want)
    # offline evaluation against the fixed grid of the same sweep
    results = latest_rows(ResultsDir.open(tmp_path / "out").scan()).filter(pl.col("budget_id") != predicted_budget_id("tiny"))
    ev = evaluate_predictor(results, pl.LazyFrame(preds))
    s = ev["summary"].collect().row(0, named=True)
    assert s["n_items"] == 9 and s["n_unparsed"] == 0
    # the predicted budgets' answers offline equal the online run's (same frames, same engine)
    online_acc = rows["correct"].mean()
    assert abs(s["accuracy"] - online_acc) < 1e-9
    # the manifest for fine-tuning data
    path = tmp_path / "manifest.jsonl"
    assert export_manifest(preds, None, path, predictor_id="tiny") == 9
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert set(lines[0]) == {"id", "video", "instruction", "frames"}
    assert sorted(x["frames"] for x in lines) == sorted(preds["predicted_frames"].to_list())
