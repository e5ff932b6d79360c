"""Shared fixtures: an isolated framesweep cache, the tiny checkpoint, small specs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def fs_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every test builds into its own cache (no state from the user's home)."""
    root = Path(os.environ.get("FRAMESWEEP_TEST_CACHE") or tmp_path_factory.mktemp("fscache"))
    os.environ["FRAMESWEEP_CACHE"] = str(root)
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    return root


@pytest.fixture(scope="session")
def tiny_qwen25(fs_cache: Path) -> Path:
    """The tiny random Qwen2.5-VL checkpoint (built once per session)."""
    from engine.backends.tiny import build_tiny_checkpoint

    return build_tiny_checkpoint("qwen2_5_vl")


def small_spec_dict(out_dir: Path, **over: object) -> dict:
    """A small synthetic sweep on the tiny checkpoint (3 videos x 3 questions x 4 budgets)."""
    spec: dict = {
        "sweep_id": "test",
        "models": [{
            "id": "tiny", "family": "qwen2_5_vl", "path": "tiny:qwen2_5_vl",
            "engine": {"max_model_len": 4096, "dtype": "float32", "max_num_seqs": 16},
        }],
        "dataset": {"name": "synthetic", "n_videos": 3, "seconds": 4.0, "fps": 8, "width": 96, "height": 64},
        "budgets": [{"frames": 0}, {"frames": 2}, {"frames": 4}, {"frames": 8}],
        "decode": {"max_videos_in_flight": 1},
        "store": {"out_dir": str(out_dir), "commit_interval_s": 0.5},
    }
    spec.update(over)
    return spec


def write_toml(path: Path, data: dict) -> Path:
    """A test spec as TOML (the project's own writer)."""
    from engine.spec.toml_out import write_spec_toml

    return write_spec_toml(data, path)
