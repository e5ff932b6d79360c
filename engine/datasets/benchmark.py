"""A benchmark as one registration: its spec class, where it comes from, its official score and its headline.

`register_benchmark(Benchmark(...))` is all a benchmark needs beyond its adapter (`register_adapter`): the
spec's `[dataset]` table accepts its spec class (`engine.config`), `framesweep fetch` and `run --data` read
its `source`, `framesweep metrics` computes its `official` scores beside accuracy and flags its
`headlines`, and every table shows each score in its `units`. The built-in benchmarks are registered in
`engine.datasets.builtin`, one `Benchmark` each.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import polars as pl

from engine.registry import Registry

__all__ = ["BENCHMARKS", "Benchmark", "Official", "OfficialRows", "Source", "Unit", "get_benchmark",
           "on_benchmarks_changed", "register_benchmark", "unregister_benchmark"]

Unit = Literal["fraction", "points", "count"]
"""How a score is published: a fraction (shown as percentage points), points in the benchmark's own unit
(MME's 0-2000, Video-MME v2's 0-100, shown to one place), or a count."""


@dataclass(frozen=True)
class Source:
    """One benchmark's public release and its layout in a data folder (`engine.datasets.sources`)."""

    where: str
    """The release: a Hugging Face dataset id (`org/name`) when `on_hub`, else a page to fetch it from by hand."""
    layout: dict[str, str] = field(default_factory=dict)
    """Spec field -> path relative to the data folder."""
    patterns: tuple[str, ...] = ()
    """The release's files framesweep reads (glob patterns of `snapshot_download`'s `allow_patterns`)."""
    archives: tuple[str, ...] = ()
    """Patterns of the zip archives among them, each unpacked into the folder that holds it."""
    on_hub: bool = True
    note: str = ""

    @property
    def fetchable(self) -> bool:
        return self.on_hub and bool(self.patterns)


@dataclass(frozen=True)
class OfficialRows:
    """What a benchmark's official scorer reads: its datasets' result rows (every status), the judged ok rows
    among them, and their scoring groups (`engine.datasets.scoring_rules.GROUP_TABLE_SCHEMA`)."""

    rows: pl.LazyFrame
    judged: pl.LazyFrame
    groups: pl.LazyFrame


Official = Callable[[OfficialRows], list[pl.LazyFrame]]
"""A benchmark's official scores: frames of (model_id, dataset, budget_id, metric, subset, value[, missing])."""


@dataclass(frozen=True)
class Benchmark:
    """One benchmark: everything framesweep knows of it besides its adapter.

    Attributes:
        name: The adapter's name (the spec class's `name: Literal["..."]`).
        spec: The spec class of its `[dataset]` table.
        source: Its public release and the data folder's layout (`framesweep fetch`, `run --data`); None: none.
        official: Its official scores (`engine.datasets.official`); None: accuracy is its score.
        headlines: The benchmark's own score(s) among `official`'s metrics (with subset null, unless
            `headline_per_subset`); none: ``accuracy`` is the headline.
        headline_per_subset: Each subset's score is a headline (Video-MMMU's tracks).
        units: Metric -> how it is published (`Unit`); a metric not named is a fraction.
        full_scale: A headline's full scale where it is not 1 (MME's 2000 and 800 points).
        versions: The prefixes of the rows' ``dataset_version`` that name this benchmark when the run's spec
            does not (``mme`` of ``mme.fs1``, ``videomme-v2`` of ``videomme-v2.fs1``).
    """

    name: str
    spec: type[Any]
    source: Source | None = None
    official: Official | None = None
    headlines: tuple[str, ...] = ()
    headline_per_subset: bool = False
    units: Mapping[str, Unit] = field(default_factory=dict)
    full_scale: Mapping[str, float] = field(default_factory=dict)
    versions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        tag = get_args(self.spec.model_fields["name"].annotation) if "name" in self.spec.model_fields else ()
        if tag != (self.name,):
            raise ValueError(f"benchmark {self.name!r}: its spec class {self.spec.__qualname__} must have "
                             f"`name: Literal[{self.name!r}]`, has {tag or 'no name field'}")
        if self.headlines and self.official is None:
            raise ValueError(f"benchmark {self.name!r}: headlines {', '.join(self.headlines)} without an official "
                             "scorer")


BENCHMARKS: Registry[Benchmark] = Registry("benchmark", describe=lambda b: f"{b.spec.__module__}:{b.spec.__qualname__}")
"""Adapter name -> its `Benchmark`, in registration order."""

_LISTENERS: list[Callable[[], None]] = []


def on_benchmarks_changed(hook: Callable[[], None]) -> None:
    """Call `hook` after each benchmark registered or removed (the spec's `[dataset]` union is rebuilt so)."""
    _LISTENERS.append(hook)


def _changed() -> None:
    for hook in _LISTENERS:
        hook()


def register_benchmark(benchmark: Benchmark) -> Benchmark:
    """Register `benchmark` under its name (a name registered twice is an error naming both spec classes)."""
    BENCHMARKS.register(benchmark.name, benchmark)
    _changed()
    return benchmark


def unregister_benchmark(name: str) -> None:
    """Forget benchmark `name` (tests that register one for a while)."""
    if name in BENCHMARKS:
        BENCHMARKS.unregister(name)
        _changed()


def get_benchmark(name: str) -> Benchmark:
    """The benchmark called `name`; an unknown name lists the known ones (`KeyError`)."""
    return BENCHMARKS.get(name)
