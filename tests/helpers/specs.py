"""The tests' small spec and its TOML file."""

from __future__ import annotations

from pathlib import Path


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
    from engine.config.toml_out import write_spec_toml

    return write_spec_toml(data, path)
