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


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v))


def write_toml(path: Path, data: dict) -> Path:
    """A minimal TOML writer for test specs (scalars, inline tables, arrays of tables)."""
    lines: list[str] = []
    tables: list[str] = []
    for k, v in data.items():
        if isinstance(v, dict):
            tables.append(f"\n[{k}]\n" + "\n".join(f"{a} = {_toml_value(b)}" for a, b in v.items()))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for x in v:
                tables.append(f"\n[[{k}]]\n" + "\n".join(f"{a} = {_toml_value(b)}" for a, b in x.items()))
        else:
            lines.append(f"{k} = {_toml_value(v)}")
    path.write_text("\n".join(lines) + "\n" + "\n".join(tables) + "\n")
    return path
