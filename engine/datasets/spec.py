"""What every dataset spec class shares: the fields of any `[dataset]` table, those of a benchmark read from
files, and the image budgets of an image benchmark.

Each adapter module defines its own spec class (beside the adapter that reads it); `engine.datasets` joins the
built-in ones in `DatasetSpec`, the `[dataset]` union of `engine.config.SweepSpec`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, ClassVar

from pydantic import Field

from engine.strict import StrictModel

__all__ = ["IMAGE_BUDGETS", "VIDEO_EXTS", "DatasetBase", "FileDatasetSpec"]

IMAGE_BUDGETS = {"raw": "image", "cached": "image-cached"}
"""An image benchmark's image budget id per pipeline: one image, sent as one image, at the dataset's own size."""

VIDEO_EXTS = [".mp4", ".MP4", ".mkv", ".webm"]
"""The video extensions a benchmark tries by default, in order."""


class DatasetBase(StrictModel):
    """What every dataset table may carry besides its adapter's settings."""

    if TYPE_CHECKING:
        name: str  # every dataset table's `name` field, a Literal of its adapter's name (declared by each subclass)

    asks_images: ClassVar[bool] = False
    """An image benchmark: its items are images, asked at its own image budgets (`IMAGE_BUDGETS`)."""

    id: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9_.@+-]+$",
        description="Name of this dataset in the results (default: the adapter's name); two datasets of one "
        "sweep that use the same adapter (e.g. Video-MME short and long) need distinct ids.",
    )
    budgets: list[Annotated[str, Field(min_length=1)]] | None = Field(
        default=None, min_length=1,
        description="Budget ids this dataset runs (of the sweep's budgets, e.g. [\"text\", \"f16\"]; an image "
        "benchmark also has `image`, and `image-cached` when a budget is cached). null: every budget of the "
        "sweep for a video benchmark; for an image benchmark its image budgets only: the image asked once as one "
        "image per pipeline the sweep's visual budgets use, never a text-only (blind) run unless listed here. "
        "Only chooses jobs: answers already made are kept.",
    )

    @property
    def dataset_id(self) -> str:
        """The `dataset` column of this dataset's rows."""
        return self.id or str(self.name)


class FileDatasetSpec(DatasetBase):
    """Settings every benchmark read from files shares. Relative paths are taken from the working directory."""

    strict: bool = Field(
        default=True,
        description="true: any malformed row fails the load, listing every problem at once; "
        "false: malformed rows are skipped and reported (escaping paths and unreadable files always fail).",
    )
    limit: int | None = Field(
        default=None, ge=1, description="Keep only the first N questions (smoke runs); null: all. A benchmark "
        "scored in groups keeps each group whole: MMBench counts questions, not rotations; MME and Video-MME v2 "
        "complete a pair or group the cut falls in.")
