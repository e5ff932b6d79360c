"""tools/setup.sh's extras (FRAMESWEEP_EXTRA), the `lmms` extra's pin, and what `datasets --lmms-eval` says without
lmms-eval.

setup.sh runs for real, in a copy of the repository's tools/ beside a stub `.venv/bin/python` that records its
arguments instead of installing (an install cannot be run offline in a test): what it would install is its
arguments."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.cli import app
from engine.datasets import _lmms_tasks

ROOT = Path(__file__).resolve().parents[2]


def _pip_install(tmp_path: Path, extra: str | None) -> str:
    """The `pip install` line setup.sh runs with FRAMESWEEP_EXTRA=`extra` (unset: None)."""
    (tmp_path / "tools").mkdir()
    shutil.copy(ROOT / "tools" / "setup.sh", tmp_path / "tools" / "setup.sh")
    stub = tmp_path / ".venv" / "bin" / "python"
    stub.parent.mkdir(parents=True)
    stub.write_text(f'#!/usr/bin/env bash\necho "$*" >> {tmp_path / "calls"}\n')
    stub.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "FRAMESWEEP_EXTRA"}
    if extra is not None:
        env["FRAMESWEEP_EXTRA"] = extra
    subprocess.run(["bash", str(tmp_path / "tools" / "setup.sh")], check=True, env=env, capture_output=True,
                   timeout=60)
    return next(line for line in (tmp_path / "calls").read_text().splitlines() if "pip install" in line)


@pytest.mark.engine
@pytest.mark.parametrize(("extra", "extras"), [(None, "cpu,test"), ("lmms", "cpu,lmms,test"),
                                               ("gpu,lmms", "gpu,lmms,test"), ("gpu", "gpu,test")])
def test_setup_installs_lmms_eval_beside_a_vllm_build(tmp_path: Path, extra: str | None, extras: str) -> None:
    assert _pip_install(tmp_path, extra).endswith(f'-e .[{extras}]')


def test_the_lmms_extra_pins_the_tested_lmms_eval() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["lmms"] == [f"lmms-eval=={_lmms_tasks.LMMS_EVAL_PIN}"]


def test_datasets_lmms_eval_without_lmms_eval_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """lmms-eval may be installed here: `installed_version` is replaced to answer as where it is not."""
    monkeypatch.setattr(_lmms_tasks, "installed_version", lambda: None)
    result = CliRunner().invoke(app, ["datasets", "--lmms-eval"], env={"COLUMNS": "250"})
    assert result.exit_code == 2
    out = result.output
    with contextlib.suppress(ValueError):  # older click: stderr not captured separately
        out += result.stderr or ""
    out = " ".join(out.split())
    assert "lmms-eval is not installed: install it with `pip install 'framesweep[lmms]'` (lmms-eval==0.7.3)" in out
    assert "FRAMESWEEP_EXTRA=lmms bash tools/setup.sh" in out


def test_an_lmms_eval_dataset_without_lmms_eval_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """As above: `installed_version` answers as where lmms-eval is not installed."""
    from engine.datasets import build_adapter
    from engine.datasets.errors import DatasetError
    from engine.datasets.lmms_eval import LmmsEvalSpec

    monkeypatch.setattr(_lmms_tasks, "installed_version", lambda: None)
    with pytest.raises(DatasetError, match=r"lmms-eval task 'videomme': lmms-eval is not installed: install it with "
                                           r"`pip install 'framesweep\[lmms\]'`"):
        list(build_adapter(LmmsEvalSpec(name="lmms_eval", task="videomme")).items())
