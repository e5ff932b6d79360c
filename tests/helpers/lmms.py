"""What the tests of the lmms-eval bridge share: the marks of a test that needs lmms-eval (installed by
`FRAMESWEEP_EXTRA=lmms bash tools/setup.sh`: without it the test skips, saying so; CI installs it and names the
part `lmms`, so there such a skip fails) and an empty Hugging Face home."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

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
