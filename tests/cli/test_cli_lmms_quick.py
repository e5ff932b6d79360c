"""`framesweep run --lmms-eval-task NAME`: the spec it builds (the spec file's `lmms_eval` dataset, written to
OUT/spec.toml), its one-sentence mistakes, and one run end to end on the tiny model over lmms-eval's own Video-MME
task (its YAML and utils unmodified, a local copy of its dataset in its real schema, real videos) that ends with
the task's official score per budget and the audit.

The tests that load lmms-eval's tasks skip, saying so, where it is not installed (`framesweep[lmms]`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from helpers.lmms import empty_hf_home, needs_lmms
from helpers.specs import small_spec_dict, write_toml
from typer.testing import CliRunner

from engine.cli import app
from engine.cli.quick import lmms_quick_spec
from engine.config import load_spec
from engine.config.toml_out import write_spec_toml
from engine.datasets import _lmms_tasks
from engine.results import ResultsDir

runner = CliRunner()
ASSETS = Path(__file__).resolve().parents[1] / "assets"
DOCS = [
    {"video_id": "001", "duration": "short", "domain": "Knowledge", "sub_category": "Humanity & History", "url": "u1",
     "videoID": "fFjv93ACGo8", "question_id": "001-1", "task_type": "Counting Problem",
     "question": "How many cats are in the video?", "options": ["A. One.", "B. Two.", "C. Three.", "D. Four."],
     "answer": "B"},
    {"video_id": "002", "duration": "medium", "domain": "Sports Competition", "sub_category": "Football", "url": "u2",
     "videoID": "aBcD1234xyz", "question_id": "002-1", "task_type": "Action Reasoning",
     "question": "Why does the player fall?", "options": ["A. He trips.", "B. He is pushed.", "C. He slips.",
                                                          "D. He dives."], "answer": "A"},
]


@pytest.fixture
def videomme(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Video-MME's dataset in its real schema (a local copy) and its videos where lmms-eval unpacks them
    (``$HF_HOME/videomme/data``); returns the dataset folder."""
    home = empty_hf_home(tmp_path / "hf", monkeypatch)
    release = tmp_path / "videomme_release"
    (release / "data").mkdir(parents=True)
    pl.DataFrame(DOCS).write_parquet(release / "data" / "test-00000-of-00001.parquet")
    (home / "videomme" / "data").mkdir(parents=True)
    for doc in DOCS:
        shutil.copy(ASSETS / "tiny.mp4", home / "videomme" / "data" / f"{doc['videoID']}.mp4")
    return release


@needs_lmms
def test_the_task_flag_builds_the_spec_a_file_would(videomme: Path, tmp_path: Path) -> None:
    spec, doc = lmms_quick_spec(task="videomme", model="tiny:qwen2_5_vl", family=None, frames="32,0,8", limit=5,
                                out=tmp_path / "out", dataset_path=videomme)
    ds = spec.dataset_specs()[0]
    assert (ds.name, ds.task, ds.dataset_id, ds.limit) == ("lmms_eval", "videomme", "videomme", 5)
    assert ds.dataset_path == videomme.resolve() and ds.media_root is None and ds.include_path is None
    assert [b.budget_id for b in spec.budgets] == ["text", "f8", "f32"]
    assert spec.models[0].family == "qwen2_5_vl" and spec.sweep_id == "qwen2_5_vl-videomme"
    # OUT/spec.toml holds the same spec: `framesweep run OUT/spec.toml` repeats or resumes the run
    again = load_spec(write_spec_toml(doc, tmp_path / "spec.toml"))
    assert again.dataset_specs() == spec.dataset_specs() and again.budgets == spec.budgets


@needs_lmms
def test_an_unknown_task_names_the_close_ones(videomme: Path) -> None:
    res = runner.invoke(app, ["run", "--lmms-eval-task", "videome", "--model", "tiny:qwen2_5_vl", "--out", "o"])
    assert res.exit_code == 2, res.output
    assert "--lmms-eval-task: lmms-eval task 'videome': unknown task" in res.output and "videomme" in res.output


def test_without_lmms_eval_the_task_flag_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """lmms-eval missing (where it is installed, faked by its version check: the one fault an installed package
    cannot show)."""
    monkeypatch.setattr(_lmms_tasks, "installed_version", lambda: None)
    res = runner.invoke(app, ["run", "--lmms-eval-task", "videomme", "--model", "tiny:qwen2_5_vl", "--out", "o"])
    assert res.exit_code == 2 and "lmms-eval is not installed" in res.output, res.output
    assert "framesweep[lmms]" in res.output


@pytest.mark.parametrize(("args", "said"), [
    (["--lmms-eval-task", "videomme", "--dataset", "videomme", "--model", "m", "--out", "o"],
     "--dataset: --lmms-eval-task names the dataset"),
    (["--lmms-eval-task", "videomme", "--out", "o"], "--lmms-eval-task also needs --model"),
    (["--model", "tiny:qwen2_5_vl", "--dataset", "synthetic", "--media-root", "m", "--out", "o"],
     "--media-root go with --lmms-eval-task"),
])
def test_lmms_quick_path_mistakes_are_one_sentence(args: list[str], said: str) -> None:
    res = runner.invoke(app, ["run", *args])
    assert res.exit_code == 2 and said in res.output, res.output


def test_the_task_flag_does_not_go_with_a_spec_file(tmp_path: Path) -> None:
    path = write_toml(tmp_path / "s.toml", small_spec_dict(tmp_path / "out"))
    res = runner.invoke(app, ["run", str(path), "--lmms-eval-task", "videomme"])
    assert res.exit_code == 2 and "--lmms-eval-task builds a spec without a file" in res.output, res.output


def _videomme_utils() -> Any:
    import lmms_eval

    spec = importlib.util.spec_from_file_location(
        "utils", Path(lmms_eval.__file__).parent / "tasks" / "videomme" / "utils.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.engine  # a `framesweep run` process: Ray and the engine
@needs_lmms
def test_a_task_swept_from_the_command_line_ends_with_its_official_score_and_the_audit(
        videomme: Path, tmp_path: Path, tiny_qwen25: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "RAY_ADDRESS")}
    res = subprocess.run(
        [sys.executable, "-m", "engine", "run", "--lmms-eval-task", "videomme", "--frames", "0,4", "--model",
         "tiny:qwen2_5_vl", "--out", "out", "--dataset-path", str(videomme)],
        check=False, capture_output=True, text=True, timeout=900, cwd=tmp_path, env=env, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    out = tmp_path / "out"
    assert load_spec(out / "spec.toml").dataset_specs()[0].task == "videomme"  # a rerun of OUT uses it
    assert "Official score per budget: videomme" in res.stdout and "The audit of out" in res.stdout, res.stdout
    rows = ResultsDir.open(out).scan().collect().filter(pl.col("status") == "ok")
    assert rows.height == 4, rows.select("item_id", "budget_id", "error").to_dicts()
    # the official score per budget is the task's own aggregation of its own process_results of each row's answer
    utils = _videomme_utils()
    by_id = {d["question_id"]: d for d in DOCS}
    metrics = subprocess.run([sys.executable, "-m", "engine", "metrics", "out", "--n-boot", "0", "--json", "-"],
                             check=True, capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    doc = json.loads(metrics.stdout)
    scores = next(g for g in doc["groups"] if g["dataset"] == "videomme")["official_scores"]
    official = {r["budget_id"]: r["value"] for r in scores if r["metric"] == "lmms_eval_score"}
    by_hand = {}
    for budget, part in rows.sort("item_id").group_by("budget_id", maintain_order=True):
        results = [utils.videomme_process_results(by_id[r["item_id"]], [r["pred"] or ""])["videomme_perception_score"]
                   for r in part.iter_rows(named=True)]
        by_hand[budget[0]] = utils.videomme_aggregate_results(results)
    assert official == pytest.approx(by_hand) and set(official) == {"text", "f4"}
