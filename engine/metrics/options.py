"""What `engine.metrics.summary.summary_tables` computes beyond the defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from engine.metrics.grid import CATEGORY_COLUMNS

__all__ = ["DEFAULT_EPS", "DEFAULT_FOLDS", "DEFAULT_TAUS", "PolarsEngine", "SummaryOptions"]

PolarsEngine = Literal["auto", "streaming", "in-memory"]
"""How Polars collects (the CLI's `--engine`; no vLLM setting)."""

DEFAULT_TAUS: tuple[float, ...] = tuple(round(0.05 * i, 2) for i in range(21))
"""The cascade's confidence thresholds (`engine.metrics.cascade`)."""
DEFAULT_FOLDS = 5
"""Folds of the cascade's cross-fitted tau."""
DEFAULT_EPS = 1e-9
"""Tolerance below which a score drop is not a regression (guards float noise only; `engine.metrics.generation`)."""


@dataclass(frozen=True)
class SummaryOptions:
    """What `summary_tables` computes beyond the defaults."""

    n_boot: int = 1000
    """Bootstrap replicates for the confidence intervals (0: none)."""
    seed: int = 0
    """Bootstrap seed."""
    level: float = 0.95
    """Confidence level of the intervals."""
    pairs: tuple[tuple[str, str], ...] | None = None
    """Transitions to report besides the consecutive ones (None: every pair g < h)."""
    cascade_stages: tuple[str, ...] | None = None
    """Cascade stages (None: each group's visual budgets)."""
    cascade_match: str | None = None
    """Fixed budget the cascade must match (None: each group's dearest visual budget)."""
    taus: tuple[float, ...] = DEFAULT_TAUS
    """Cascade confidence thresholds."""
    cascade_folds: int = DEFAULT_FOLDS
    """Folds of the cascade's cross-fitted (out-of-sample) tau; the folds are seeded by `seed`."""
    eps: float = DEFAULT_EPS
    """Score-regression tolerance for open tasks."""
    categories: tuple[str, ...] = CATEGORY_COLUMNS
    """Category columns to split by."""
    compare: tuple[str, str] | None = None
    """(base, other) models for checkpoint flows at each shared budget."""
    engine: PolarsEngine = "auto"
    """Polars engine for every collect ("auto", "streaming", "in-memory")."""
    protocols: tuple[str, ...] | None = None
    """Restrict every table to these chains (protocol ids; None: every chain)."""
    primary_protocol: str | None = None
    """The chain the report leads with (None, or absent from a model and dataset: the protocol with the
    most budgets; ties: ``default``, then the one with fewest options)."""
    iso_tolerance: float = 0.03
    """Relative tolerance of an iso-compute set: each budget's cost within this of the set's median."""
