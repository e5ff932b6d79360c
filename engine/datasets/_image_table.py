"""Image benchmarks stored as one parquet table: each item is one image (an item with one frame)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, model_validator

from engine.datasets._base import BaseAdapter
from engine.datasets._images import image_cache_dir, image_media
from engine.datasets._paths import check_root
from engine.datasets._tables import Kind, collect_rows, need, read_parquet
from engine.datasets.errors import Problems
from engine.datasets.spec import FileDatasetSpec
from engine.items import Item

__all__ = ["ImageTableAdapter", "ImageTableSpec"]


class ImageTableSpec(FileDatasetSpec):
    """An image benchmark in one parquet table; each item is one image.

    It runs its image budgets (`IMAGE_BUDGETS`: the image at its stored size, which the model's processor
    brings within its own limits, unless `max_pixels` / `short_side` / `min_pixels` set one) unless `budgets`
    names others; a video budget named there sends the one image at that budget's size.
    """

    asks_images: ClassVar[bool] = True

    max_pixels: int | None = Field(
        default=None, gt=0, description="Upper bound on width*height of each image at the image budgets (aspect "
        "kept); null: the stored image, so the model's processor applies its own limits (its native resolution).")
    short_side: int | None = Field(
        default=None, gt=0, description="Resize each image at the image budgets so its short side has this many "
        "pixels (aspect kept; never enlarges).")
    min_pixels: int | None = Field(
        default=None, gt=0, description="Lower bound on width*height of each image at the image budgets (smaller "
        "ones are enlarged to it, aspect kept).")
    annotations: Path = Field(description="The parquet file (or a folder of parquet shards).")
    media_root: Path | None = Field(
        default=None, description="Folder the `image` column's paths are under, when it holds paths, not bytes."
    )
    image_cache: Path | None = Field(
        default=None,
        description="Where embedded image bytes are written once (by content hash); null: the framesweep cache.",
    )

    @model_validator(mode="after")
    def _one_size(self) -> ImageTableSpec:
        if self.max_pixels is not None and self.short_side is not None:
            raise ValueError("set at most one of max_pixels and short_side")
        if self.min_pixels is not None and self.max_pixels is not None and self.min_pixels > self.max_pixels:
            raise ValueError(f"min_pixels ({self.min_pixels}) is above max_pixels ({self.max_pixels})")
        return self


class ImageTableAdapter(BaseAdapter):
    """Reads `spec.annotations` (checked against `COLUMNS`); subclasses turn one row into an item."""

    COLUMNS: ClassVar[dict[str, Kind]]
    OPTIONAL_COLUMNS: ClassVar[dict[str, Kind]] = {}

    def _load(self, problems: Problems) -> list[Item]:
        problems.extend(check_root(self.spec.media_root, "media_root"))
        if problems.fatal:
            return []
        items: list[Item] = []
        self._reset()
        for source, df in read_parquet(self.spec.annotations, self.COLUMNS, problems, self.OPTIONAL_COLUMNS):
            items += collect_rows(source, enumerate(df.iter_rows(named=True)), partial(self._row, source), problems)
        return items

    def _reset(self) -> None:
        """Hook called at the start of each load (per-load counters)."""

    def _row(self, source: Path, i: int, rec: dict[str, Any]) -> Item | list[Item] | None:
        """One row's item, its items (MMBench's rotations), or None (a row deliberately left out)."""
        raise NotImplementedError

    def _image(self, rec: dict[str, Any], source: Path, i: int, item_id: str) -> tuple[str, Path]:
        """(media id, image file) of the row's `image` cell."""
        return image_media(need(rec, "image", "image"), media_root=self.spec.media_root,
                           cache=image_cache_dir(self.spec.image_cache, self.name), source=source, row=i,
                           item_id=item_id)

    def _item(self, **fields: Any) -> Item:
        return Item(dataset=self.name, dataset_version=self.version, media_kind="image", **fields)
