"""Importing lmms-eval per-sample logs (one run per budget) round-trips into a framesweep dataset."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from engine.cli import app
from engine.metrics.basic import fixed_accuracy, transitions
from engine.metrics.grid import matched
from engine.metrics.oracle import oracle
from engine.results.lmms_eval import find_runs, import_lmms_eval, run_rows
from engine.results.schema import RESULT_SCHEMA
from engine.results.store import latest_rows, scan_results

MODEL_DIR = "lmms-lab__LLaVA-Video-7B"
QUESTIONS = [("001-1", "fFjv93ACGo8", "short", "Counting Problem", "C"),
             ("001-2", "fFjv93ACGo8", "short", "OCR Problems", "A"),
             ("002-1", "abcDEF12345", "medium", "Action Recognition", "D")]
# predicted letters per run; trajectories (text, f8, f32): 001-1 110, 001-2 101, 002-1 011
PREDS = {"20250101_120000": (8, ["C", "B", "D"]), "20250102_090000": (32, ["A", "A", "D"]),
         "20250103_080000": (None, ["C", "A", "B"])}


def _sample(doc_id: int, pred: str, run: str) -> dict:
    qid, vid, duration, task, answer = QUESTIONS[doc_id]
    info = {"question_id": qid, "duration": duration, "category": "Knowledge", "sub_category": "Humanity",
            "task_category": task, "pred_answer": pred, "answer": answer, "videoID": vid}
    if run == "20250102_090000":
        info["score"] = int(pred == answer)
    sample = {"doc_id": doc_id, "target": answer, "filtered_resps": [pred], "doc_hash": f"h{doc_id}",
              "input": f"Select the best answer ... {qid}", "videomme_perception_score": info}
    if run == "20250102_090000":
        sample["resps"] = [[f"The answer is {pred}."]]
    return sample


def _write_logs(root: Path) -> Path:
    model_dir = root / MODEL_DIR
    model_dir.mkdir(parents=True)
    for run, (frames, preds) in PREDS.items():
        args = "pretrained=lmms-lab/LLaVA-Video-7B,conv_template=qwen_1_5"
        if frames is not None:
            args += f",max_frames_num={frames}"
        (model_dir / f"{run}_results.json").write_text(json.dumps({
            "results": {"videomme": {"videomme_perception_score,none": 66.7}},
            "versions": {"videomme": "Yaml"}, "model_name": "lmms-lab/LLaVA-Video-7B",
            "config": {"model": "llava_vid", "model_args": args, "batch_size": "1"},
        }))
        lines = [json.dumps(_sample(i, p, run)) for i, p in enumerate(preds)]
        (model_dir / f"{run}_samples_videomme.jsonl").write_text("\n".join(lines) + "\n")
    return model_dir


def test_round_trip(tmp_path: Path) -> None:
    logs, out = _write_logs(tmp_path / "logs"), tmp_path / "out"
    runs = find_runs([logs])
    assert [r.task for r in runs] == ["videomme"] * 3
    with pytest.raises(ValueError, match="no frame count in model_args in .*20250103_080000_results.json; pass "
                                         "--frames"):
        import_lmms_eval([runs[2].samples], out)
    first = import_lmms_eval([runs[0].samples, runs[1].samples], out)
    assert (first.runs, first.rows, first.skipped) == (2, 6, 0)
    text = import_lmms_eval([runs[2].samples], out, frames=0)
    assert text.budgets == {f"{MODEL_DIR}/{runs[2].samples.name}": "text"}
    with pytest.raises(ValueError, match=r"20250101_120000_samples_videomme.jsonl: its run records max_frames_num=8 "
                                         r"\(model_args in .*\); --frames 0 contradicts it"):
        import_lmms_eval([logs], out, frames=0)  # a run is never forced onto another's budget
    again = import_lmms_eval([runs[0].samples, runs[1].samples], out)
    assert (again.rows, again.skipped) == (0, 6)

    df = scan_results(out).collect()
    assert df.schema == pl.Schema(RESULT_SCHEMA)
    rows = latest_rows(scan_results(out)).collect().sort("budget_id", "item_id")
    assert rows.height == 9 and df.height == 9
    one = rows.filter((pl.col("item_id") == "001-1") & (pl.col("budget_id") == "f32")).to_dicts()[0]
    assert {k: one[k] for k in ("model_id", "model_family", "dataset", "dataset_version", "video_id", "task_type",
                                "category", "duration", "frames", "task_kind", "answer", "pred", "correct",
                                "score", "response", "status")} == {
        "model_id": "lmms-lab/LLaVA-Video-7B", "model_family": "llava_vid", "dataset": "videomme",
        "dataset_version": "Yaml", "video_id": "fFjv93ACGo8", "task_type": "Counting Problem",
        "category": "Knowledge", "duration": "short", "frames": 32, "task_kind": "mcq", "answer": "C",
        "pred": "A", "correct": False, "score": 0.0, "response": "The answer is A.", "status": "ok"}


def test_imported_runs_give_paired_metrics(tmp_path: Path) -> None:
    logs, out = _write_logs(tmp_path / "logs"), tmp_path / "out"
    runs = find_runs([logs])
    import_lmms_eval([runs[0].samples, runs[1].samples], out)
    import_lmms_eval([runs[2].samples], out, frames=0)
    rows = latest_rows(scan_results(out))
    acc = fixed_accuracy(rows).collect()
    assert acc.select("budget_id", "accuracy").rows() == [("text", 2 / 3), ("f8", 2 / 3), ("f32", 2 / 3)]
    flows = transitions(rows).collect()
    assert flows.select("from", "to", "rescue", "harm").rows() == [("text", "f8", 1, 1), ("f8", "f32", 1, 1)]
    assert oracle(matched(rows)).collect().select("oracle_accuracy", "oracle_headroom").row(0) == (
        1.0, pytest.approx(1 / 3))


def test_numeric_metrics_and_old_format(tmp_path: Path) -> None:
    d = tmp_path / "model"
    d.mkdir()
    lines = [{"doc_id": 0, "target": "a dog", "filtered_resps": ["a dog runs"], "doc": {"question_id": "q0",
              "video_id": "v0"}, "arguments": [], "token_f1": 0.8},
             {"doc_id": 1, "target": "red", "filtered_resps": ["blue"], "token_f1": 0.0}]
    path = d / "20240101_samples_activitynetqa.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines))
    rows = list(run_rows(find_runs([path])[0], frames=16, model_id="m"))
    assert [(r.item_id, r.video_id, r.task_kind, r.correct, r.score, r.budget_id) for r in rows] == [
        ("q0", "v0", "open", None, 0.8, "f16"), ("1", "", "open", None, 0.0, "f16")]
    binary = [{"doc_id": i, "target": "x", "filtered_resps": ["x"], "exact_match": v} for i, v in enumerate([1, 0])]
    path = d / "20240102_samples_mme.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in binary))
    rows = list(run_rows(find_runs([path])[0], frames=1))
    assert [(r.task_kind, r.correct, r.model_id) for r in rows] == [("mcq", True, "model"), ("mcq", False, "model")]


def test_import_command(tmp_path: Path) -> None:
    logs, out = _write_logs(tmp_path / "logs"), tmp_path / "out"
    runs = find_runs([logs])
    runner = CliRunner()
    res = runner.invoke(app, ["import-lmms-eval", str(runs[0].samples), str(runs[1].samples), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "dataset videomme, budget f8" in res.output and "6 rows written" in res.output
    res = runner.invoke(app, ["import-lmms-eval", str(runs[2].samples), "--out", str(out)])
    assert res.exit_code == 2 and "--frames" in res.output
    res = runner.invoke(app, ["import-lmms-eval", str(runs[2].samples), "--out", str(out), "--frames", "0"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["metrics", str(out), "--n-boot", "0"])
    assert res.exit_code == 0 and "3 matched items" in " ".join(res.output.split())  # a narrow terminal wraps
