"""What the tests of the lmms-eval bridge share: the marks of a test that needs lmms-eval (installed by
`FRAMESWEEP_EXTRA=lmms bash tools/setup.sh`: without it the test skips, saying so; CI installs it and names the
part `lmms`, so there such a skip fails) and an empty Hugging Face home."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

HAVE_LMMS = importlib.util.find_spec("lmms_eval") is not None
NO_LMMS = "lmms-eval is not installed (FRAMESWEEP_EXTRA=lmms bash tools/setup.sh installs it)"
NEEDS_LMMS = [pytest.mark.needs("lmms"), pytest.mark.skipif(not HAVE_LMMS, reason=NO_LMMS)]
"""A test module's `pytestmark` (or a test's marks, one after the other) when it calls the installed lmms-eval."""


def needs_lmms(test):
    """One test that calls the installed lmms-eval: skipped, saying so, without it."""
    for mark in reversed(NEEDS_LMMS):
        test = mark(test)
    return test


def empty_hf_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`home` (created) as HF_HOME and its datasets/ as HF_DATASETS_CACHE: lmms-eval's utils read HF_HOME (where
    they look for media) when imported, and nothing of the machine's own cache is read."""
    home.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(home / "datasets"))
    return home


def hub_release(root: Path, config: str | None, split: str, docs: list[dict[str, Any]]) -> Path:
    """A local copy of a task's hub dataset at `root` (a task's ``dataset_path``): ``<config or data>/<split>-00000-
    of-00001.parquet`` and, for a named config, the README configs block the hub repository has (so
    `load_dataset(root, name=config)` reads it)."""
    folder = root / (config or "data")
    folder.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(docs).write_parquet(folder / f"{split}-00000-of-00001.parquet")
    if config:
        block = {"configs": [{"config_name": config, "data_files": [{"split": split,
                                                                     "path": f"{config}/{split}-*.parquet"}]}]}
        (root / "README.md").write_text(f"---\n{yaml.safe_dump(block)}---\n")
    return root
