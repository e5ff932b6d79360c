"""`StrictModel`: the pydantic base of every table a user writes.

Below both the spec (`engine.config`) and the dataset adapters (`engine.datasets`, each with
its spec class), so the two share it without importing each other.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["StrictModel"]


class StrictModel(BaseModel):
    """Base of every user-written model: unknown fields are errors; values are frozen; a number is finite
    (TOML's inf and nan fail where they are written, not in an engine that turns them into an int)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
