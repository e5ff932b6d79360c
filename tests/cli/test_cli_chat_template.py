"""`framesweep run` on a checkpoint whose chat template is not its family's (the tiny Qwen2.5-VL checkpoint with
another default system line, as a fine-tune might ship): the engine start refuses it with one message naming the
model, the family, the folder and both prompts, exit 2, before any result row is written; with `prompt =
"checkpoint_template"` the same checkpoint runs, asked in its own template. Real components throughout (the CLI
process, Ray, the CPU build of vLLM): HEAVY."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.specs import small_spec_dict, write_toml

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)


def _framesweep(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "RAY_ADDRESS")}
    return subprocess.run([sys.executable, "-m", "engine", *args], check=False, capture_output=True, text=True,
                          timeout=900, cwd=cwd, env={**env, "COLUMNS": "400"}, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def tuned(tiny_qwen25: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = Path(shutil.copytree(tiny_qwen25, tmp_path_factory.mktemp("tuned") / "tiny-tuned"))
    template = folder / "chat_template.jinja"
    template.write_text(template.read_text(encoding="utf-8").replace("You are a helpful assistant.",
                                                                     "You watch videos."), encoding="utf-8")
    return folder


def _spec(tmp_path: Path, folder: Path, **model: str) -> Path:
    d = small_spec_dict(tmp_path / "out", budgets=[{"frames": 0}, {"frames": 2}])
    d["dataset"]["n_videos"] = 1
    d["models"][0].update(path=str(folder), **model)
    return write_toml(tmp_path / "spec.toml", d)


def test_a_checkpoint_with_another_template_is_refused_before_any_row(tmp_path: Path, tuned: Path) -> None:
    res = _framesweep("run", str(_spec(tmp_path, tuned)), cwd=tmp_path)
    assert res.returncode == 2, res.stderr[-3000:]
    err = " ".join(res.stderr.split())
    assert f"model tiny: family qwen2_5_vl writes a prompt that the chat template of checkpoint {tuned}" in err
    assert "You are a helpful assistant." in err and "You watch videos." in err
    assert 'prompt = "checkpoint_template"' in err and "Traceback" not in res.stderr
    shards = list((tmp_path / "out").rglob("*.parquet"))  # decoding started beside the engine: its video statistics
    assert [p.name for p in shards if p.parent.name != "video_stats"] == []


def test_checkpoint_template_asks_in_the_checkpoints_own_template(tmp_path: Path, tuned: Path) -> None:
    from engine.metrics.summary import load_rows

    res = _framesweep("run", str(_spec(tmp_path, tuned, prompt="checkpoint_template")), cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    rows = load_rows(tmp_path / "out").collect()
    assert rows.height == 6 and set(rows["status"]) == {"ok"}  # 1 video x 3 questions x 2 budgets
