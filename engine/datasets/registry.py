"""The dataset adapter protocol and its registry (name -> factory called with the validated spec)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, Protocol

import numpy as np

from engine.items import Item
from engine.registry import Registry

__all__ = ["ADAPTERS", "DatasetAdapter", "JobPrompt", "build_adapter", "get_adapter", "load_items", "register_adapter",
           "registered_adapters"]


JobPrompt = Callable[[Item, np.ndarray, "float | None"], "str | None"]
"""An adapter's prompt for one job, given the frame indices it sends and the video's fps (none for a text-only
job): the prompt text, or None for the item's own `prompt`. An adapter whose prompt depends on the frames sent
(Video-MME's subtitles at those frames) has one as its `job_prompt` method; the request step calls it."""


class DatasetAdapter(Protocol):
    """What the scheduler needs from a benchmark (and, optionally, a `job_prompt` method: `JobPrompt`)."""

    name: str
    version: str

    def items(self) -> Iterator[Item]:
        """Yield the benchmark's items; media paths resolved under the declared root."""
        ...

    def score(self, item: Item, response: str) -> Any:
        """Score one generated response with the benchmark's official rule -> `ItemScore(pred, correct, score)`."""
        ...


ADAPTERS: Registry[Callable[[Any], DatasetAdapter]] = Registry("dataset")
"""Adapter name -> its factory (called with the validated dataset spec)."""


def register_adapter(name: str) -> Callable[[Callable[[Any], DatasetAdapter]], Callable[[Any], DatasetAdapter]]:
    """Register an adapter factory (called with the validated dataset spec); a name registered twice is an error."""
    return ADAPTERS.decorator(name)


def get_adapter(name: str) -> Callable[[Any], DatasetAdapter]:
    """The adapter factory for `name`; an unknown name lists the known ones."""
    return ADAPTERS.get(name)


def registered_adapters() -> list[str]:
    """Every adapter's name, sorted."""
    return ADAPTERS.names()


def build_adapter(spec: Any) -> DatasetAdapter:
    """Instantiate the adapter a dataset spec names."""
    return get_adapter(spec.name)(spec)


def load_items(spec: Any) -> tuple[DatasetAdapter, list[Item]]:
    """A dataset spec's adapter and its items, named by the spec's `id` when it has one.

    Two datasets of one sweep may use the same adapter (Video-MME short and long): their
    rows are told apart by the `dataset` column, which is the spec's `id`.
    """
    adapter = build_adapter(spec)
    items = list(adapter.items())
    label = getattr(spec, "id", None)
    if label:
        items = [replace(it, dataset=label) for it in items]
    return adapter, items
