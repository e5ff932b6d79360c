"""A model's `path` from a spec, resolved: `tiny:<family>` is a tiny checkpoint the demo package builds
(`engine.demo.tiny`, built once into the framesweep cache); anything else is a checkpoint folder, or a model
hub id vLLM downloads itself. The one module of the backends that imports the demo package."""

from __future__ import annotations

from pathlib import Path

from engine.demo.tiny import BUILDERS, TRAINED, build_tiny_checkpoint

__all__ = ["model_path_problem", "resolve_model_path"]


def resolve_model_path(path: str) -> Path:
    """A model path from a spec: `tiny:<family>` builds the tiny checkpoint; anything else is a directory."""
    if path.startswith("tiny:"):
        return build_tiny_checkpoint(path.removeprefix("tiny:"))
    return Path(path).expanduser()


def model_path_problem(path: str) -> str | None:
    """Why `path` cannot name a checkpoint here (an unknown tiny family, a local path that is no folder), or
    None."""
    if path.startswith("tiny:"):
        family = path.removeprefix("tiny:")
        if family not in BUILDERS:
            return f"no tiny checkpoint for {family!r}; known: {', '.join('tiny:' + f for f in BUILDERS.names())}"
        weights = TRAINED.get(family)
        if weights is not None and not weights.exists():
            return f"{path}: its trained weights ({weights.name}) are missing: run tools/train_tiny.py"
        return None
    p = Path(path).expanduser()
    if p.exists():
        return None if p.is_dir() else f"{path} is not a checkpoint directory"
    # `org/name` may be a model hub id that vLLM downloads; a path that looks local must exist
    if path.startswith(("/", ".", "~")) or path.count("/") != 1:
        return f"{path}: no such checkpoint directory"
    return None
