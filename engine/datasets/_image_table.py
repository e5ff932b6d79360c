"""Image benchmarks stored as one parquet table: each item is one image (an item with one frame)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from engine.datasets._base import BaseAdapter
from engine.datasets._images import image_cache_dir, image_media
from engine.datasets._paths import check_root
from engine.datasets._tables import Kind, collect_rows, need, read_parquet
from engine.datasets.errors import Problems
from engine.items import Item

__all__ = ["ImageTableAdapter"]


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

    def _row(self, source: Path, i: int, rec: dict[str, Any]) -> Item | None:
        raise NotImplementedError

    def _image(self, rec: dict[str, Any], source: Path, i: int, item_id: str) -> tuple[str, Path]:
        """(media id, image file) of the row's `image` cell."""
        return image_media(need(rec, "image", "image"), media_root=self.spec.media_root,
                           cache=image_cache_dir(self.spec.image_cache, self.name), source=source, row=i,
                           item_id=item_id)

    def _item(self, **fields: Any) -> Item:
        return Item(dataset=self.name, dataset_version=self.version, media_kind="image", **fields)
