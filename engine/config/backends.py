"""The backend registry: the values `ModelSpec.backend` may take, each a `engine.backends.kinds.BackendKind`.

It lives here, below the spec, so that the spec validates a model's `backend` against it; the built-in kinds
are lazy entries (``module:attr``), imported from `engine.backends.kinds` on their first `get`, so reading a
spec imports no backend. A new backend registers its kind with `engine.backends.kinds.register_backend`.
"""

from __future__ import annotations

from typing import Any

from engine.registry import Registry, where

__all__ = ["BACKENDS", "check_backend"]

BACKENDS: Registry[Any] = Registry("backend", describe=lambda kind: where(kind.build))
"""`ModelSpec.backend` -> its `BackendKind` (how such a backend is built and started)."""
BACKENDS.register("vllm", "engine.backends.kinds:VLLM")
BACKENDS.register("openai", "engine.backends.kinds:OPENAI")


def check_backend(name: str) -> str:
    """`name` when a backend of that name is registered.

    Raises:
        ValueError: no backend is called `name` (the message names the field and lists the registered ones).
    """
    if name not in BACKENDS:
        raise ValueError(f"backend {name!r} is not a registered backend; registered: {', '.join(BACKENDS.names())}")
    return name
