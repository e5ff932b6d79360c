"""Frame planning: which frame indices each budget sends, as pure functions.

A sampling policy maps (frame count T, fps, budget N, seed) to N sorted frame
indices in [0, T). Policies live in a registry (`POLICIES`); a policy that takes
a parameter is named `name@value` in a budget (`fps@2`, `dense_head@0.25`,
`nested@256`), so the parameter is part of the budget id and of every row.

Each policy declares what happens when the video has fewer frames than the
budget (T < N): `repeat` (send N indices, some twice, as lmms-eval does) or
`cap` (send each of the T frames once). `FramePlan` records which happened.

Policies:

- ``uniform``: lmms-eval's `rint(linspace(0, T-1, N))`; repeats on short videos.
- ``segment_centre``: the centre frame of each of N equal segments; repeats.
- ``random``: N distinct frames drawn with the seed, sorted; caps.
- ``dense_head``: the first N consecutive frames; ``dense_head@f``: N frames spread
  evenly over the first fraction f of the video; caps.
- ``fps``/``fps@r``: one frame every 1/r seconds of video (r = 1 by default), from
  the first frame; if that gives more than N frames, N of them evenly spread
  (Qwen-VL style: the budget is a ceiling). Uses the average fps, so on variable
  frame rate video the spacing is even in frames, not in seconds. Caps.
- ``nested``: the first N frames of one fixed order of the video's frames, the
  dyadic (van der Corput) order of positions 0, 1/2, 1/4, 3/4, 1/8, ... mapped to
  `floor(p * T)` with repeats skipped. Because every budget is a prefix of the same
  order, the frames of any smaller budget are a subset of any larger one's, with no
  need to know the largest budget; at powers of two it is exactly the segment-start
  grid `floor(k T / N)`. ``nested@M``: the same prefix order over lmms-eval's
  uniform M frames, so budget M is exactly ``uniform`` and every N <= M a subset of
  it (N > M is an error). Caps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from engine.frames.base import BudgetLike
from engine.registry import Registry, where

__all__ = [
    "POLICIES",
    "FramePlan",
    "SamplingPolicy",
    "get_policy",
    "plan_budget",
    "register_policy",
    "union_indices",
]

ShortVideo = Literal["repeat", "cap"]
PolicyFn = Callable[[int, float, int, int, float | None], np.ndarray]
CheckFn = Callable[[float | None, int], None]
"""`check(param, budget_frames)`: raise ValueError when the policy cannot plan that budget with that parameter."""


def _no_check(param: float | None, frames: int) -> None:
    return None


@dataclass(frozen=True)
class SamplingPolicy:
    """A registered sampling policy; calling it plans `budget` indices over `n_frames` frames.

    Attributes:
        name: Registry name (without the `@param` suffix).
        fn: `(n_frames, fps, budget, seed, param) -> indices`.
        short_video: What the policy does when the video has fewer frames than the budget.
        takes_param: Whether `name@value` is accepted.
        param: The bound parameter (None: the policy's default).
        check: Validates the parameter against a budget before any video is seen (`validate`).
    """

    name: str
    fn: PolicyFn
    short_video: ShortVideo
    takes_param: bool = False
    param: float | None = None
    check: CheckFn = _no_check

    def __call__(self, n_frames: int, fps: float, budget: int, seed: int) -> np.ndarray:
        return np.asarray(self.fn(n_frames, fps, budget, seed, self.param), dtype=np.int64)

    def validate(self, frames: int) -> None:
        """Raise ValueError if this policy (with its parameter) cannot plan a budget of `frames` frames.

        Spec validation calls it, so a bad parameter fails before any work starts."""
        self.check(self.param, frames)

    def with_param(self, param: float) -> SamplingPolicy:
        if not self.takes_param:
            raise KeyError(f"sampling policy {self.name!r} takes no parameter")
        return replace(self, param=param)


POLICIES: Registry[SamplingPolicy] = Registry("sampling policy", describe=lambda p: where(p.fn))
"""Policy name (without a `@param`) -> the policy."""


def register_policy(name: str, short_video: ShortVideo = "repeat", takes_param: bool = False,
                    check: CheckFn = _no_check) -> Callable[[PolicyFn], PolicyFn]:
    """Register `fn(n_frames, fps, budget, seed, param)` as policy `name` (`check` validates its parameter)."""

    def deco(fn: PolicyFn) -> PolicyFn:
        if "@" in name:
            raise ValueError(f"sampling policy {name!r}: a name has no '@' (it starts a budget's parameter)")
        POLICIES.register(name, SamplingPolicy(name, fn, short_video, takes_param, check=check))
        return fn

    return deco


def get_policy(name: str) -> SamplingPolicy:
    """The policy called `name` or `name@param`; an unknown name fails listing the known ones."""
    base, _, arg = name.partition("@")
    if base not in POLICIES:
        raise KeyError(f"unknown sampling policy {name!r}; known: {', '.join(POLICIES.names())}")
    policy = POLICIES.get(base)
    if not arg:
        return policy
    try:
        value = float(arg)
    except ValueError:
        raise KeyError(f"sampling policy {name!r}: parameter {arg!r} is not a number") from None
    if not np.isfinite(value):
        raise KeyError(f"sampling policy {name!r}: parameter {arg!r} is not a finite number")
    return policy.with_param(value)


def _spread(n_items: int, budget: int) -> np.ndarray:
    """The uniform pick of `budget` positions out of `n_items` (`linspace` rounded)."""
    return np.rint(np.linspace(0, n_items - 1, budget)).astype(np.int64)


@register_policy("uniform", "repeat")
def uniform(n_frames: int, fps: float, budget: int, seed: int, param: float | None = None) -> np.ndarray:
    """Uniform sampling: `linspace(0, T-1, N)` rounded (repeats when N > T)."""
    return _spread(n_frames, budget)


@register_policy("uniform_floor", "repeat")
def uniform_floor(n_frames: int, fps: float, budget: int, seed: int, param: float | None = None) -> np.ndarray:
    """`linspace(0, T-1, N)` truncated (repeats when N > T): the frames lmms-eval's ``vllm`` model wrapper and its
    Video-MME subtitle rule pick (``np.linspace(0, T - 1, N, dtype=int)``), for a run whose frames must be an
    lmms-eval run's where `uniform`'s rounding differs (64 frames at 3: 0, 31, 63, not 0, 32, 63). That wrapper
    also sends the last frame where its linspace lacks it (at N = 1 only): no budget of N frames does."""
    return np.linspace(0, n_frames - 1, budget).astype(np.int64)


@register_policy("segment_centre", "repeat")
def segment_centre(n_frames: int, fps: float, budget: int, seed: int, param: float | None = None) -> np.ndarray:
    """One frame at the centre of each of N equal segments."""
    edges = np.linspace(0, n_frames, budget + 1)
    return np.minimum(np.floor((edges[:-1] + edges[1:]) / 2), n_frames - 1).astype(np.int64)


@register_policy("random", "cap")
def random(n_frames: int, fps: float, budget: int, seed: int, param: float | None = None) -> np.ndarray:
    """N distinct frames drawn with the seed, sorted."""
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_frames, size=min(budget, n_frames), replace=False)).astype(np.int64)


def _check_dense_head(param: float | None, frames: int) -> None:
    if param is not None and not 0 < param <= 1:
        raise ValueError(f"dense_head@{param:g}: the head fraction must be in (0, 1]")


@register_policy("dense_head", "cap", takes_param=True, check=_check_dense_head)
def dense_head(n_frames: int, fps: float, budget: int, seed: int, param: float | None = None) -> np.ndarray:
    """The first N frames (no parameter), or N frames over the first fraction `param` of the video."""
    _check_dense_head(param, budget)
    head = min(budget, n_frames) if param is None else max(1, round(param * n_frames))
    return _spread(head, budget) if budget <= head else np.arange(head, dtype=np.int64)


def _check_fps(param: float | None, frames: int) -> None:
    if param is not None and not (np.isfinite(param) and param > 0):
        raise ValueError(f"fps@{param:g}: the rate must be a positive finite number of frames per second")


@register_policy("fps", "cap", takes_param=True, check=_check_fps)
def fixed_fps(n_frames: int, fps: float, budget: int, seed: int, param: float | None = None) -> np.ndarray:
    """One frame every 1/r seconds (r = `param`, default 1), at most N of them spread evenly."""
    _check_fps(param, budget)
    rate = 1.0 if param is None else param
    step = max(1.0, (fps or rate) / rate)  # frames between samples; faster than the video's rate: every frame
    grid = np.unique(np.minimum(np.floor(np.arange(0, n_frames, step)), n_frames - 1).astype(np.int64))
    return grid if grid.size <= budget else grid[_spread(grid.size, budget)]


def dyadic_order(n_items: int) -> np.ndarray:
    """A permutation of range(n_items): positions in van der Corput order, first visits only."""
    if n_items <= 0:
        return np.empty(0, dtype=np.int64)
    bits = max(1, int(np.ceil(np.log2(n_items))))
    j = np.arange(1 << bits, dtype=np.int64)
    rev = np.zeros_like(j)
    for b in range(bits):  # bit-reverse j in `bits` bits: the radical inverse times 2**bits
        rev |= ((j >> b) & 1) << (bits - 1 - b)
    idx = (rev * n_items) >> bits  # floor(vdc(j) * n_items); step <= 1 so every item appears
    _, first = np.unique(idx, return_index=True)
    return idx[np.sort(first)]


def _check_nested(param: float | None, frames: int) -> None:
    if param is None:
        return
    if param != int(param) or param < 1:
        raise ValueError(f"nested@{param:g}: the largest budget must be a positive integer")
    if frames > param:
        raise ValueError(f"nested@{int(param)}: budget {frames} exceeds the largest budget {int(param)}")


@register_policy("nested", "cap", takes_param=True, check=_check_nested)
def nested(n_frames: int, fps: float, budget: int, seed: int, param: float | None = None) -> np.ndarray:
    """The first N frames of the fixed dyadic order (a prefix, so smaller budgets are subsets)."""
    if param is None:
        return np.sort(dyadic_order(n_frames)[:budget])
    _check_nested(param, budget)
    top = int(param)
    base = np.unique(_spread(n_frames, top))
    return np.sort(base[dyadic_order(base.size)[:budget]])


@dataclass(frozen=True)
class FramePlan:
    """The frames one budget sends from one video.

    Attributes:
        indices: Sorted frame indices sent (may repeat when `repeated`).
        n_video_frames: Real frames in the video.
        repeated: Some index is sent more than once (short video under a `repeat` policy).
        requested: Frames the budget asked for (0: text-only).
        short_video: What the policy does when the video is shorter than the budget.
    """

    indices: np.ndarray
    n_video_frames: int
    repeated: bool
    requested: int = 0
    short_video: str = "repeat"

    @property
    def unique(self) -> np.ndarray:
        return np.unique(self.indices)

    @property
    def capped(self) -> bool:
        """Fewer frames are sent than the budget asked for."""
        return int(self.indices.size) < self.requested

    @property
    def short(self) -> bool:
        """The video has fewer frames than the budget asked for."""
        return self.n_video_frames < self.requested


def plan_budget(budget: BudgetLike, n_frames: int, fps: float) -> FramePlan:
    """Plan a budget's indices over a video of `n_frames` real frames (text-only: none)."""
    if budget.is_text_only:
        return FramePlan(np.empty(0, dtype=np.int64), n_frames, False)
    if n_frames < 1:
        raise ValueError("video has no frames")
    policy = get_policy(budget.policy)
    n = budget.frames if policy.short_video == "repeat" else min(budget.frames, n_frames)
    idx = policy(n_frames, fps, n, budget.seed)
    if idx.size and (idx.min() < 0 or idx.max() >= n_frames):
        raise ValueError(f"policy {budget.policy!r} planned indices outside [0, {n_frames})")
    if idx.size > 1 and np.any(np.diff(idx) < 0):
        raise ValueError(f"policy {budget.policy!r} planned unsorted indices")
    return FramePlan(idx, n_frames, bool(np.unique(idx).size < idx.size), budget.frames, policy.short_video)


def union_indices(plans: Iterable[FramePlan]) -> np.ndarray:
    """Sorted unique indices of several plans: what one decode pass must produce."""
    arrays = [p.indices for p in plans if p.indices.size]
    return np.unique(np.concatenate(arrays)) if arrays else np.empty(0, dtype=np.int64)
