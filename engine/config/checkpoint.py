"""Checkpoint-study metadata of a model entry (`[models.checkpoint]`), read by `framesweep checkpoints`.

A video fine-tuning study compares checkpoints of one architecture and size against their base:
each fine-tuned entry names its base model and the frame count it was trained on (or
``"hybrid"``: per-sample frame counts from the predictor). The base entry may carry the table
too (no `base`, no `train_frames`) to give its size and label.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from engine.config.datasets import StrictModel

__all__ = ["CheckpointSpec"]


class CheckpointSpec(StrictModel):
    """Where a checkpoint sits in a fine-tuning study."""

    base: str | None = Field(
        default=None, description="Model id (in this spec) of the checkpoint this one was fine-tuned from; null: "
        "this entry is a base.")
    train_frames: int | Literal["hybrid"] | None = Field(
        default=None, description="Frames per video the checkpoint was fine-tuned with (8, 16, 32, 64, ...), or "
        "'hybrid' (per-sample counts from the frame-count predictor); null for a base.")
    size: str | None = Field(default=None, description="Parameter count as the study names it, e.g. '7B'.")
    architecture: str | None = Field(
        default=None, description="Architecture as the study names it; null: the model entry's family.")
    label: str | None = Field(default=None, description="Display name in tables and figures; null: the model id.")

    @model_validator(mode="after")
    def _train_frames(self) -> CheckpointSpec:
        if isinstance(self.train_frames, int) and self.train_frames <= 0:
            raise ValueError(f"train_frames must be a positive frame count or 'hybrid', got {self.train_frames}")
        if self.train_frames is not None and self.base is None:
            raise ValueError("train_frames needs base: a fine-tuned checkpoint names the model it was tuned from")
        return self
