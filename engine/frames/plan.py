"""Frame planning: which frame indices each budget sends, as pure functions.

A policy maps (frame count T, fps, budget N, seed) to N frame indices in [0, T).
Indices are sorted; they may repeat when the video has fewer frames than the
budget (the policy declares it and the row records it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from engine.spec import BudgetPoint

__all__ = ["POLICIES", "FramePlan", "get_policy", "plan_budget", "register_policy", "union_indices"]

Policy = Callable[[int, float, int, int], np.ndarray]
POLICIES: dict[str, Policy] = {}


def register_policy(name: str) -> Callable[[Policy], Policy]:
    def deco(fn: Policy) -> Policy:
        if name in POLICIES:
            raise ValueError(f"sampling policy {name!r} registered twice")
        POLICIES[name] = fn
        return fn

    return deco


def get_policy(name: str) -> Policy:
    try:
        return POLICIES[name]
    except KeyError:
        raise KeyError(f"unknown sampling policy {name!r}; known: {', '.join(sorted(POLICIES))}") from None


@register_policy("uniform")
def uniform(n_frames: int, fps: float, budget: int, seed: int) -> np.ndarray:
    """lmms-eval's uniform sampling: `linspace(0, T-1, N)` rounded (repeats when N > T)."""
    return np.rint(np.linspace(0, n_frames - 1, budget)).astype(np.int64)


@register_policy("segment_centre")
def segment_centre(n_frames: int, fps: float, budget: int, seed: int) -> np.ndarray:
    """One frame at the centre of each of N equal segments."""
    edges = np.linspace(0, n_frames, budget + 1)
    return np.minimum(np.floor((edges[:-1] + edges[1:]) / 2), n_frames - 1).astype(np.int64)


@register_policy("random")
def random(n_frames: int, fps: float, budget: int, seed: int) -> np.ndarray:
    """N distinct frames drawn with the seed, sorted (with replacement only if N > T)."""
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_frames, size=budget, replace=budget > n_frames)).astype(np.int64)


@dataclass(frozen=True)
class FramePlan:
    """The frames one budget sends from one video."""

    indices: np.ndarray
    n_video_frames: int
    repeated: bool

    @property
    def unique(self) -> np.ndarray:
        return np.unique(self.indices)


def plan_budget(budget: BudgetPoint, n_frames: int, fps: float) -> FramePlan:
    """Plan a budget's indices over a video of `n_frames` frames (text-only: none)."""
    if budget.is_text_only:
        return FramePlan(np.empty(0, dtype=np.int64), n_frames, False)
    if n_frames < 1:
        raise ValueError("video has no frames")
    idx = get_policy(budget.policy)(n_frames, fps, budget.frames, budget.seed)
    if idx.size and (idx.min() < 0 or idx.max() >= n_frames):
        raise ValueError(f"policy {budget.policy!r} planned indices outside [0, {n_frames})")
    return FramePlan(idx, n_frames, bool(np.unique(idx).size < idx.size))


def union_indices(plans: Iterable[FramePlan]) -> np.ndarray:
    """Sorted unique indices of several plans: what one decode pass must produce."""
    arrays = [p.indices for p in plans if p.indices.size]
    return np.unique(np.concatenate(arrays)) if arrays else np.empty(0, dtype=np.int64)
