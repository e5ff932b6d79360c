"""The dataset adapter protocol and its registry (name -> factory called with the validated spec)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, Protocol

from engine.items import Item

__all__ = ["DatasetAdapter", "build_adapter", "get_adapter", "load_items", "register_adapter", "registered_adapters"]


class DatasetAdapter(Protocol):
    """What the scheduler needs from a benchmark."""

    name: str
    version: str

    def items(self) -> Iterator[Item]:
        """Yield the benchmark's items; media paths resolved under the declared root."""
        ...

    def score(self, item: Item, response: str) -> Any:
        """Score one generated response with the benchmark's official rule -> `ItemScore(pred, correct, score)`."""
        ...


_REGISTRY: dict[str, Callable[[Any], DatasetAdapter]] = {}


def register_adapter(name: str) -> Callable[[Callable[[Any], DatasetAdapter]], Callable[[Any], DatasetAdapter]]:
    """Register an adapter factory (called with the validated dataset spec)."""

    def deco(factory: Callable[[Any], DatasetAdapter]) -> Callable[[Any], DatasetAdapter]:
        if name in _REGISTRY:
            raise ValueError(f"dataset adapter {name!r} registered twice")
        _REGISTRY[name] = factory
        return factory

    return deco


def get_adapter(name: str) -> Callable[[Any], DatasetAdapter]:
    """The adapter factory for `name`; an unknown name lists the known ones."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown dataset {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None


def registered_adapters() -> list[str]:
    return sorted(_REGISTRY)


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
