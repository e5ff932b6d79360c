"""The dataset adapter protocol and its registry (name -> factory called with the validated spec)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

from engine.items import Item

__all__ = ["DatasetAdapter", "build_adapter", "get_adapter", "register_adapter", "registered_adapters"]


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
