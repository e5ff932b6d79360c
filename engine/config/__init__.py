"""Sweep specifications: the TOML a user writes, loaded into pydantic models.

Every model forbids unknown fields and describes every field, so a typo fails
before any work starts, with the field's dotted path in the message. One module
per concern: `budgets` (the grid), `models` (engines, servers, models),
`options` (prompt, predictor, decode, store), `datasets` (one spec class per
adapter), `sweep` (the whole sweep, loading and the dataset spec registry),
`source` (reading a file), `grid` (allocation arithmetic), `reference` and
`toml_out` (writing specs and their reference back out).
"""

from __future__ import annotations

from engine.config.budgets import MAX_SEED, BudgetPoint, GridSpec, IsoComputeSpec
from engine.config.checkpoint import CheckpointSpec
from engine.config.datasets import SyntheticDatasetSpec
from engine.config.models import EngineSpec, HTTPSpec, ModelSpec
from engine.config.options import DecodeSpec, PredictorSpec, PromptSpec, StoreSpec
from engine.config.source import SpecError
from engine.config.sweep import (
    SweepSpec,
    dataset_id,
    dataset_spec_classes,
    load_spec,
    parse_spec,
    register_dataset_spec,
    unregister_dataset_spec,
)

__all__ = [
    "MAX_SEED",
    "BudgetPoint",
    "CheckpointSpec",
    "DecodeSpec",
    "EngineSpec",
    "GridSpec",
    "HTTPSpec",
    "IsoComputeSpec",
    "ModelSpec",
    "PredictorSpec",
    "PromptSpec",
    "SpecError",
    "StoreSpec",
    "SweepSpec",
    "SyntheticDatasetSpec",
    "dataset_id",
    "dataset_spec_classes",
    "load_spec",
    "parse_spec",
    "register_dataset_spec",
    "unregister_dataset_spec",
]
