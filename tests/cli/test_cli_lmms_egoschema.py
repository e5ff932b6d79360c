"""The issue's "done when" command: a new user sweeps lmms-eval's ``egoschema_subset`` task from the command line
(``framesweep run --lmms-eval-task egoschema_subset --frames 0,8,16,32 --model tiny:qwen2_5_vl_seen --out OUT``,
with ``--dataset-path`` for a local copy of its dataset and HF_HOME where lmms-eval unpacks its videos) and gets the
rows, the task's official score per budget and the audit's flows; the full ``egoschema`` task (its test split is
scored only by a submission to the benchmark's server) is refused at once, in one line.

The task's YAML and utils are the installed lmms-eval's, unmodified; its dataset is a local copy in its real schema
(the ``Subset`` config: ``question_idx``, ``question``, ``video_idx``, five ``option`` lines ``A. ...``, ``answer`` the
option's index as a string), asking the synthetic v2 clips' questions, which the trained tiny model learned, so its
answers vary with the budget.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml
from helpers.lmms import empty_hf_home, needs_lmms
from typer.testing import CliRunner

from engine.cli import app
from engine.cli.quick import lmms_quick_spec
from engine.datasets.synthetic import SyntheticBenchmark, SyntheticDatasetSpec
from engine.results import ResultsDir

FRAMES = (0, 8, 16, 32)
LETTERS = "ABCDE"


@pytest.fixture
def egoschema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """EgoSchema's Subset as a local copy of its hub release (its README configs block), its videos where
    lmms-eval's utils look (``$HF_HOME/egoschema/videos``); returns the release folder."""
    home = empty_hf_home(tmp_path / "hf", monkeypatch)
    bench = SyntheticBenchmark(SyntheticDatasetSpec(name="synthetic", version=2, n_videos=2, seed=77,
                                                    root=tmp_path / "clips"))
    items = [it for it in bench.items() if it.task_type in ("first_colour", "last_colour", "flash_count")]
    docs = [{"question_idx": f"q{i}", "question": it.question, "video_idx": it.video_id,
             "option": [f"{LETTERS[j]}. {o}" for j, o in enumerate((*it.options, "none of them"))],
             "answer": str(LETTERS.index(it.answer))} for i, it in enumerate(items)]
    release = tmp_path / "egoschema_release"
    (release / "Subset").mkdir(parents=True)
    pl.DataFrame(docs).write_parquet(release / "Subset" / "test-00000-of-00001.parquet")
    block = {"configs": [{"config_name": "Subset", "data_files": [{"split": "test", "path": "Subset/test-*"}]}]}
    (release / "README.md").write_text(f"---\n{yaml.safe_dump(block)}---\n")
    (home / "egoschema" / "videos").mkdir(parents=True)
    for it in items:
        shutil.copy(it.video_path, home / "egoschema" / "videos" / f"{it.video_id}.mp4")
    return release


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "RAY_ADDRESS")}


def _framesweep(*args: str, cwd: Path, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", *args], check=False, capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=_env(), stdin=subprocess.DEVNULL)


def _printed_scores(stdout: str, task: str) -> dict[str, str]:
    """The printed table "Official score per budget: <task>": budget -> score cell."""
    table = stdout.split(f"Official score per budget: {task}", 1)[1]
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in table.splitlines() if line.count("│") == 4]
    return {budget: score for budget, metric, score in cells if metric.startswith("lmms_eval_score")}


@pytest.mark.engine  # `framesweep run` processes: Ray and the engine
@needs_lmms
def test_egoschema_subset_swept_from_the_command_line(egoschema: Path, tmp_path: Path) -> None:
    res = _framesweep("run", "--lmms-eval-task", "egoschema_subset", "--frames", ",".join(map(str, FRAMES)),
                      "--model", "tiny:qwen2_5_vl_seen", "--out", "out", "--dataset-path", str(egoschema), cwd=tmp_path)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    docs = pl.read_parquet(egoschema / "Subset")
    rows = ResultsDir.open(tmp_path / "out").scan().collect()
    assert (rows.height, rows.filter(pl.col("status") == "ok").height) == (docs.height * len(FRAMES),) * 2
    assert sorted(rows["frames"].unique()) == list(FRAMES)
    text_only = rows.filter(pl.col("frames") == 0)
    assert text_only.height == docs.height and text_only["frame_indices"].list.len().fill_null(0).max() == 0
    assert rows.filter(pl.col("frames") > 0)["frame_indices"].list.len().to_list() == \
        rows.filter(pl.col("frames") > 0)["frames"].to_list()
    # the printed official score per budget is the metrics document's lmms_eval_score
    metrics = _framesweep("metrics", "out", "--n-boot", "0", "--json", "-", cwd=tmp_path, timeout=600)
    assert metrics.returncode == 0, metrics.stderr[-3000:]
    group: dict[str, Any] = next(g for g in json.loads(metrics.stdout)["groups"] if g["dataset"] == "egoschema_subset")
    official = {r["budget_id"]: r["value"] for r in group["official_scores"] if r["metric"] == "lmms_eval_score"}
    assert set(official) == {"text", "f8", "f16", "f32"}, official
    # (to 4 places, as lmms-eval's own results table prints it: a fraction's 0.1667, not 0.2)
    printed = _printed_scores(res.stdout, "egoschema_subset")
    assert printed == {b: f"{v:.4f}" for b, v in official.items()}, res.stdout
    # ... after the audit, with its rescue / harm flow at each step of the budgets
    audit = res.stdout.split("The audit of out", 1)[1]
    assert "rescue / harm per transition" in audit, res.stdout
    steps = {tuple(c.strip() for c in line.split("│")[1:3]) for line in audit.splitlines() if line.count("│") == 7}
    assert {("text", "f8"), ("f8", "f16"), ("f16", "f32")} <= steps, audit


@needs_lmms
def test_the_trained_tiny_model_is_a_build_of_its_family(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``tiny:qwen2_5_vl_seen`` (the trained tiny build) is of the qwen2_5_vl family, as ``tiny:qwen2_5_vl`` is."""
    empty_hf_home(tmp_path / "hf", monkeypatch)
    spec, _ = lmms_quick_spec(task="egoschema_subset", model="tiny:qwen2_5_vl_seen", family=None,
                              frames="0,8,16,32", limit=None, out=tmp_path / "out")
    assert (spec.models[0].family, spec.models[0].path) == ("qwen2_5_vl", "tiny:qwen2_5_vl_seen")
    assert [b.frames for b in spec.budgets] == list(FRAMES)


@needs_lmms
def test_the_full_egoschema_task_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``egoschema`` (the full test split, scored by a submission to EgoSchema's server) is refused before anything
    starts: exit 2, one line naming the task and why, nothing made in OUT."""
    empty_hf_home(tmp_path / "hf", monkeypatch)
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["run", "--lmms-eval-task", "egoschema", "--frames", "0,8,16,32", "--model",
                                   "tiny:qwen2_5_vl_seen", "--out", "out"])
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "'egoschema'" in lines[0] and "submission" in lines[0], lines
    assert not (tmp_path / "out").exists()
