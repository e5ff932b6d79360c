"""The budget grid: one budget point, the cross products and iso-compute allocations that expand into
budgets, and the order budgets are run and reported in.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

from engine.frames.plan import get_policy
from engine.strict import StrictModel

MAX_SEED = 2**63 - 1
"""The largest seed a result row can hold (its `seed` column is Int64)."""
SEED_DOC = f"from 0 to {MAX_SEED} (numpy's generators take no negative seed)"

def _check_policy(policy: str, frames: Iterable[int]) -> str:
    """`policy` if it is a known policy whose parameter can plan each visual frame count in `frames`."""
    name, at, param = policy.partition("@")
    if at and not param.strip():
        raise ValueError(f"sampling policy {policy!r} has nothing after '@': give {name}@<value>, or {name} for "
                         "its default")
    try:
        known = get_policy(policy)
        for n in frames:
            if n:  # text-only budgets sample nothing
                known.validate(n)
    except KeyError as err:
        raise ValueError(err.args[0]) from None
    return policy


def _grid_policy(policy: str, info: ValidationInfo) -> str:
    return _check_policy(policy, info.data.get("frames") or [])

class BudgetPoint(StrictModel):
    """One visual budget of the grid: how many frames, at what size, sampled how."""

    frames: int = Field(ge=0, le=4096, description="Frames sent to the model; 0 means text-only (no media).")
    max_pixels: int | None = Field(
        default=None, gt=0, description="Upper bound on width*height of each frame (aspect kept); null: decoded size."
    )
    short_side: int | None = Field(
        default=None, gt=0, description="Resize each frame so its short side has this many pixels (aspect kept)."
    )
    min_pixels: int | None = Field(
        default=None, gt=0, description="Lower bound on width*height of each frame (aspect kept): smaller frames "
        "are enlarged to it, as Qwen-VL processors' min_pixels does (match tokens per frame to another harness); "
        "max_pixels and short_side never enlarge. Part of the protocol (`min<N>` in the budget id).",
    )
    exact_pixels: int | None = Field(
        default=None, gt=0, description="Exact width*height of each frame (aspect kept, each side rounded to the "
        "nearest even number): frames are shrunk or enlarged to it, so a budget sends the pixels it names "
        "whatever the video's size (iso-compute allocations). Excludes max_pixels, short_side and min_pixels. "
        "Part of the protocol (`ex<N>` in the budget id).",
    )
    policy: str = Field(
        default="uniform",
        description="Sampling policy: uniform, uniform_floor, segment_centre, random, dense_head@<share>, fps@<rate>, "
        "nested or nested@<largest budget> (see `engine.frames.plan`).",
    )
    seed: int = Field(default=0, ge=0, le=MAX_SEED,
                      description=f"Seed for randomised sampling policies, {SEED_DOC}; recorded on every row.")
    pipeline: Literal["raw", "cached"] | None = Field(
        default=None,
        description="raw: frames decoded from the video; cached: frames from the on-disk frame cache (see "
        "[decode]); null: the [decode] setting. Part of the protocol; a cached budget's id ends in -cached, so "
        "raw and cached budgets run side by side in one sweep. Text-only budgets take none.",
    )
    id: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9_.@+-]+$",
        description="Stable budget id used as a result key; derived from the other fields when omitted.",
    )

    @field_validator("policy")
    @classmethod
    def _known_policy(cls, policy: str, info: ValidationInfo) -> str:
        """A known policy whose parameter can plan this budget (`fps@0`, `nested@2` for 4 frames fail here)."""
        frames = info.data.get("frames")  # none when `frames` failed: it is reported on its own
        return _check_policy(policy, [frames] if frames else [])

    @model_validator(mode="after")
    def _one_size(self) -> BudgetPoint:
        if self.max_pixels is not None and self.short_side is not None:
            raise ValueError("set at most one of max_pixels and short_side")
        if self.min_pixels is not None and self.max_pixels is not None and self.min_pixels > self.max_pixels:
            raise ValueError(f"min_pixels ({self.min_pixels}) is above max_pixels ({self.max_pixels})")
        if self.exact_pixels is not None and (self.max_pixels or self.short_side or self.min_pixels):
            raise ValueError("exact_pixels sets the frame size: give no max_pixels, short_side or min_pixels with it")
        if self.frames == 0 and (self.max_pixels or self.short_side or self.min_pixels or self.exact_pixels):
            raise ValueError("a text-only budget (frames = 0) takes no resolution")
        if self.frames == 0 and self.pipeline == "cached":
            raise ValueError("a text-only budget (frames = 0) decodes nothing: it takes no cached pipeline")
        return self

    @property
    def budget_id(self) -> str:
        """The key of this budget in result rows."""
        if self.id is not None:
            return self.id
        if self.frames == 0:
            return "text"
        return f"f{self.frames}" if self.protocol_id == "default" else f"f{self.frames}-{self.protocol_id}"

    @property
    def protocol_id(self) -> str:
        """Everything but the frame count, named as in the budget id (``default`` when nothing remains).

        `engine.metrics.grid.protocol_id` derives the same from a result row's columns.
        """
        parts = []
        if self.max_pixels is not None:
            parts.append(f"px{self.max_pixels}")
        if self.short_side is not None:
            parts.append(f"s{self.short_side}")
        if self.min_pixels is not None:
            parts.append(f"min{self.min_pixels}")
        if self.exact_pixels is not None:
            parts.append(f"ex{self.exact_pixels}")
        if self.policy != "uniform":
            parts.append(self.policy)
        if self.seed != 0:
            parts.append(f"seed{self.seed}")
        if self.pipeline == "cached":
            parts.append("cached")
        return "-".join(parts) or "default"

    @property
    def is_text_only(self) -> bool:
        return self.frames == 0

class GridSpec(StrictModel):
    """A cross product of budgets, expanded into `budgets` at load (text-only, frames = 0, once)."""

    frames: list[Annotated[int, Field(ge=0, le=4096)]] = Field(min_length=1, description="Frame counts (0: text-only).")
    max_pixels: list[Annotated[int, Field(gt=0)] | None] = Field(
        default=[None], description="Pixel caps per frame (null: stored size).")
    short_sides: list[Annotated[int, Field(gt=0)]] = Field(
        default=[], description="Short-side sizes, crossed after `max_pixels`.")
    policies: list[Annotated[str, AfterValidator(_grid_policy)]] = Field(
        default=["uniform"], description="Sampling policies (each must plan every frame count of `frames`).")
    seeds: list[Annotated[int, Field(ge=0, le=MAX_SEED)]] = Field(
        default=[0], description=f"Seeds of the randomised policies, {SEED_DOC}.")

    def expand(self) -> list[BudgetPoint]:
        """frames x resolutions x policies x seeds, in that order, without repeats."""
        sizes = [(m, None) for m in self.max_pixels] + [(None, s) for s in self.short_sides]
        out: dict[str, BudgetPoint] = {}
        for n in self.frames:
            for mp, ss in sizes:
                for pol in self.policies:
                    for seed in self.seeds:
                        b = (BudgetPoint(frames=0) if n == 0 else
                             BudgetPoint(frames=n, max_pixels=mp, short_side=ss, policy=pol, seed=seed))
                        out.setdefault(b.budget_id, b)
        return list(out.values())

class IsoComputeSpec(StrictModel):
    """Budgets that all spend one pixel budget (frames x pixels per frame) differently, expanded at load.

    Every point has ``frames * max_pixels == total_pixels`` (rounded down per frame), or on the
    `exact_pixels` axis ``frames * exact_pixels == total_pixels`` (frames enlarged or shrunk to it, so
    a video smaller than the cap still sends its pixels), or on the `short_side` axis, for a video of
    aspect `aspect` (long / short side), the even short side whose frame holds ``total_pixels /
    frames`` pixels (rounded down). `engine.config.grid.iso_compute` builds the same points.
    """

    total_pixels: int = Field(gt=0, description="Pixels across all frames of one request (e.g. 9_700_000).")
    frames: list[Annotated[int, Field(gt=0, le=4096)]] = Field(
        default=[32, 64, 128], min_length=1, description="Frame counts to allocate over.")
    axis: Literal["max_pixels", "exact_pixels", "short_side"] = Field(
        default="max_pixels", description="max_pixels: a pixel cap per frame (only shrinks: a smaller video "
        "sends fewer pixels); exact_pixels: every frame shrunk or enlarged to that many pixels, so each "
        "allocation sends its total on any video; short_side: the short side that gives that many pixels for a "
        "video of `aspect`.")
    aspect: float = Field(default=16 / 9, gt=0, description="Long side over short side (short_side axis only).")
    policy: Annotated[str, AfterValidator(_grid_policy)] = Field(
        default="uniform", description="Sampling policy of every point.")
    seed: int = Field(default=0, ge=0, le=MAX_SEED, description=f"Seed of every point, {SEED_DOC}.")
    pipeline: Literal["raw", "cached"] | None = Field(default=None, description="Pipeline of every point.")

    @model_validator(mode="after")
    def _points_plan(self) -> IsoComputeSpec:
        self.expand()  # a frame count that leaves too few pixels fails here, with this table's path
        return self

    def expand(self) -> list[BudgetPoint]:
        """One budget point per frame count, in the order given."""
        points = []
        for n in self.frames:
            if n <= 0:
                raise ValueError(f"frame counts must be positive, got {n}")
            per_frame = self.total_pixels // n
            if per_frame < 4:
                raise ValueError(f"{n} frames leave fewer than 4 pixels per frame of {self.total_pixels}")
            side = per_frame if self.axis != "short_side" else max(2, int(math.sqrt(per_frame / self.aspect)) // 2 * 2)
            points.append(BudgetPoint.model_validate({"frames": n, "policy": self.policy, "seed": self.seed,
                                                      "pipeline": self.pipeline, self.axis: side}))
        return points

def cost_order(budgets: Iterable[BudgetPoint]) -> list[BudgetPoint]:
    """Text-only first, then by frames and pixels."""
    return sorted(budgets, key=lambda b: (b.frames, b.max_pixels or b.exact_pixels or b.short_side or 0, b.budget_id))
