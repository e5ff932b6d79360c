"""The sweep vocabulary: items, jobs and their keys."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, NamedTuple, Protocol, TypeVar

from engine.frames.base import BudgetLike

__all__ = ["Generation", "Item", "Job", "JobBudget", "JobKey", "MediaKind", "TaskKind", "option_letters"]

TaskKind = Literal["mcq", "open", "yesno", "dialog"]
MediaKind = Literal["video", "image", "frames", "none"]


def option_letters(n: int) -> list[str]:
    """The letters naming `n` options: A, B, C, ..."""
    return [chr(ord("A") + i) for i in range(n)]


@dataclass(frozen=True)
class Generation:
    """How a benchmark has its generated answers made, where it says so (an lmms-eval task's
    ``generation_kwargs``): applied to the item's generated requests, never to letter scoring's one token."""

    max_new_tokens: int | None = None
    """Token limit in place of the spec's ``[prompt] max_new_tokens``; None: the spec's."""
    stop: tuple[str, ...] = ()
    """Strings that end the answer (left out of it), as lmms-eval's ``until``."""
    temperature: float = 0.0
    """Sampling temperature; 0: greedy, framesweep's default."""


@dataclass(frozen=True)
class Item:
    """One benchmark question over one video (or one image, or none)."""

    dataset: str
    dataset_version: str
    item_id: str
    video_id: str
    video_path: Path | None
    question: str
    options: tuple[str, ...] = ()
    answer: str | None = None
    references: tuple[str, ...] = ()
    kind: TaskKind = "mcq"
    task_type: str | None = None
    category: str | None = None
    duration: str | None = None
    prompt: str | None = field(default=None, compare=False)
    """The benchmark's official prompt text (question + options); built by the adapter."""
    media_kind: MediaKind = "video"
    """What `video_path` points at: a video file, one image (an item with one frame), a folder of
    frame images (MVBench's episodic reasoning), or nothing."""
    subtitle_path: Path | None = None
    """Subtitle file (.srt) when the spec asks for subtitles; the prompt then depends on the frames sent."""
    group_id: str | None = None
    """Items scored together (Video-MME v2 groups of 4, the two MME questions of one image)."""
    system_prompt: str | None = field(default=None, compare=False)
    """The benchmark's official system message, if it has one (null: the model family's default)."""
    response_prefix: str | None = field(default=None, compare=False)
    """Text the official evaluation puts at the start of the assistant turn (e.g. MLVU's "Best Option: (")."""
    clip: tuple[float, float] | None = None
    """(start, end) seconds of the video the question is about (MVBench tasks with bounds); null: all of it."""
    generation: Generation | None = field(default=None, compare=False)
    """The benchmark's own generation settings for this item's generated answers (null: the spec's)."""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    """Benchmark-specific fields (sub-category, scoring points, group structure, ...), JSON-serialisable."""

    @property
    def media_key(self) -> str:
        """The item's media within a sweep (``dataset/video_id``): jobs are grouped and media named by it,
        so two datasets of one sweep that reuse a video id never share frames or a media uuid."""
        return f"{self.dataset}/{self.video_id}"

    @property
    def letters(self) -> list[str]:
        return option_letters(len(self.options))


class JobKey(NamedTuple):
    """The result key: one row per (model, dataset, item, budget)."""

    model_id: str
    dataset: str
    item_id: str
    budget_id: str


class JobBudget(BudgetLike, Protocol):
    """What a job reads of its budget: what the media plane reads (`BudgetLike`) and its id. The spec's
    `BudgetPoint` is one (items sit below the spec, so they never import it)."""

    @property
    def budget_id(self) -> str: ...


BudgetT = TypeVar("BudgetT", bound=JobBudget)


@dataclass(frozen=True)
class Job(Generic[BudgetT]):
    """One model answering one item at one budget (in a sweep, the spec's `BudgetPoint`)."""

    model_id: str
    item: Item
    budget: BudgetT

    @property
    def key(self) -> JobKey:
        return JobKey(self.model_id, self.item.dataset, self.item.item_id, self.budget.budget_id)
