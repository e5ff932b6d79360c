"""Sweep specifications: the TOML a user writes, loaded into pydantic models.

Every model forbids unknown fields and describes every field, so a typo fails
before any work starts, with the field's dotted path in the message. One module
per concern: `budgets` (the grid), `models` (engines, servers, models),
`options` (prompt, predictor, decode, store), `sweep` (the whole sweep, loading
and the dataset spec registry: the `[dataset]` tables are the spec classes the
adapters of `engine.datasets` define, each beside its adapter),
`source` (reading a file), `grid` (allocation arithmetic), `reference` and
`toml_out` (writing specs and their reference back out), `catalog` (the
adapters and their fields, for `framesweep datasets`).
"""

from __future__ import annotations

from engine.config.budgets import MAX_SEED, BudgetPoint, GridSpec, IsoComputeSpec
from engine.config.checkpoint import CheckpointSpec
from engine.config.models import EngineSpec, HTTPSpec, ModelSpec, register_spec_secrets
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
from engine.datasets import SyntheticDatasetSpec

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
    "register_spec_secrets",
    "unregister_dataset_spec",
]
