"""Look at a sweep's dataset before anything runs: items, media found / missing, jobs implied.

Reads only annotations and the file system: no engine, no Ray, no decoding. (Image
benchmarks with embedded images write each image once to the image cache, as a run would.)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.config import SweepSpec
from engine.datasets.errors import Problem
from engine.datasets.registry import DatasetAdapter, build_adapter
from engine.items import Item

__all__ = ["DatasetSurvey", "survey"]


@dataclass
class DatasetSurvey:
    """What `framesweep inspect` shows."""

    dataset: str
    version: str
    n_items: int
    by_task: dict[str, int]
    by_kind: dict[str, int]
    media_kind: dict[str, int]
    media_total: int
    media_found: int
    media_missing: dict[str, list[str]]
    """Missing media file -> the ids of the items that use it (their jobs become error rows)."""
    subtitles_total: int = 0
    subtitles_found: int = 0
    problems: list[Problem] = field(default_factory=list)
    jobs_by_model: dict[str, int] = field(default_factory=dict)
    budgets_by_model: dict[str, list[str]] = field(default_factory=dict)
    media_written_by_run: bool = False
    """The adapter writes its media on the first run (synthetic): missing media are expected."""

    @property
    def jobs_total(self) -> int:
        return sum(self.jobs_by_model.values())


def _items(adapter: DatasetAdapter) -> list[Item]:
    # The synthetic adapter writes its videos in items(); inspect must not, so it lists them
    # without writing (its missing videos are made on the first run).
    listing = getattr(adapter, "_items", None) if hasattr(adapter, "ensure_videos") else None
    return list(listing() if listing is not None else adapter.items())


def _exists(path: Path, kind: str) -> bool:
    return path.is_dir() if kind == "frames" else path.is_file()


def survey(spec: SweepSpec) -> list[DatasetSurvey]:
    """Load each of the spec's datasets (raising `DatasetError` as a run would) and count what a run would do."""
    return [_survey(spec, ds) for ds in spec.dataset_specs()]


def _survey(spec: SweepSpec, ds: Any) -> DatasetSurvey:
    adapter = build_adapter(ds)
    items = _items(adapter)
    media = {(it.video_path, it.media_kind) for it in items if it.video_path is not None}
    absent = {p for p, kind in media if not _exists(p, kind)}
    missing: dict[str, list[str]] = {}
    for it in items:
        if it.video_path in absent:
            missing.setdefault(str(it.video_path), []).append(it.item_id)
    subs = {it.subtitle_path for it in items if it.subtitle_path is not None}
    name = getattr(ds, "id", None) or adapter.name
    budgets = {m.id: spec.budgets_for(m, name) for m in spec.models}  # this dataset's (an image benchmark's own)
    return DatasetSurvey(
        dataset=name,
        version=adapter.version,
        n_items=len(items),
        by_task=dict(sorted(Counter(it.task_type or "-" for it in items).items())),
        by_kind=dict(sorted(Counter(it.kind for it in items).items())),
        media_kind=dict(sorted(Counter(kind for _, kind in media).items())),
        media_total=len(media),
        media_found=len(media) - len(missing),
        media_missing=dict(sorted(missing.items())),
        subtitles_total=len(subs),
        subtitles_found=sum(1 for p in subs if p.is_file()),
        problems=list(getattr(adapter, "problems", [])),
        jobs_by_model={m: len(items) * len(bs) for m, bs in budgets.items()},
        budgets_by_model={m: [b.budget_id for b in bs] for m, bs in budgets.items()},
        media_written_by_run=hasattr(adapter, "ensure_videos"),
    )
