"""The one registry type: a name -> entry table that every extension point of framesweep is an instance of.

Model families, dataset adapters and their spec classes, decoders, sampling policies, metrics, tiny
checkpoint builders and backends are each a `Registry`. Every one behaves the same way:

- a name registered twice is an error naming both entries;
- an unknown name fails listing the known ones (`KeyError`);
- an entry may be given as ``"module:attr"`` (a lazy entry): the module is imported on the first `get`
  of that name, once, and a module that fails to import names the registry, the name and the entry;
- iterating gives the names in registration order (`names()` sorts them), and `unregister` removes one
  (tests that register a temporary entry).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

__all__ = ["Registry", "where"]

T = TypeVar("T")


@dataclass
class _Lazy:
    """An entry not imported yet: ``module:attr``."""

    target: str
    loading: bool = False


def where(obj: Any) -> str:
    """Where a person finds `obj` in the code: ``module:qualname`` (an instance: its class's)."""
    if not hasattr(obj, "__qualname__"):
        obj = type(obj)
    return f"{getattr(obj, '__module__', '?')}:{obj.__qualname__}"


class Registry(Generic[T]):
    """Named entries of one kind (`kind` is how messages call one: "model family", "decoder").

    `T` is never `str`: a string entry is a lazy ``"module:attr"`` reference. `describe` names an entry in
    the duplicate error (default: where it is defined, `where`).
    """

    def __init__(self, kind: str, describe: Callable[[T], str] = where) -> None:
        self.kind = kind
        self._describe = describe
        self._entries: dict[str, T | _Lazy] = {}

    def _name_of(self, entry: T | _Lazy) -> str:
        return entry.target if isinstance(entry, _Lazy) else self._describe(entry)

    def register(self, name: str, entry: T | str) -> T | str:
        """Add `entry` (or the lazy reference ``"module:attr"``) under `name`; returns it.

        Raises:
            ValueError: `name` holds another entry already (the message names both).
        """
        new: T | _Lazy = _Lazy(entry) if isinstance(entry, str) else entry
        if isinstance(new, _Lazy) and ":" not in new.target:
            raise ValueError(f"{self.kind} {name!r}: a lazy entry is 'module:attr', got {new.target!r}")
        if name in self._entries and not (isinstance(old := self._entries[name], _Lazy) and old.loading):
            raise ValueError(f"{self.kind} {name!r} registered twice: {self._name_of(old)} and {self._name_of(new)}")
        self._entries[name] = new
        return entry

    def decorator(self, name: str) -> Callable[[T], T]:
        """`@registry.decorator(name)`: register the decorated object under `name`."""

        def deco(entry: T) -> T:
            self.register(name, entry)
            return entry

        return deco

    def get(self, name: str) -> T:
        """The entry called `name` (a lazy one imported now, once).

        Raises:
            KeyError: no entry is called `name` (the message lists the known names).
            ImportError: a lazy entry's module fails to import or lacks the attribute (the message names the
                entry and the module's own error, which is chained).
        """
        try:
            entry = self._entries[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}") from None
        return self._load(name, entry) if isinstance(entry, _Lazy) else entry

    def _load(self, name: str, lazy: _Lazy) -> T:
        module, _, attr = lazy.target.partition(":")
        lazy.loading = True  # the module may register this very name itself while it imports
        try:
            loaded = getattr(importlib.import_module(module), attr)
        except Exception as err:  # whatever the module raised: name the entry it was loaded for
            raise ImportError(f"{self.kind} {name!r}: cannot load {lazy.target} ({type(err).__name__}: {err})") \
                from err
        finally:
            lazy.loading = False
        current = self._entries.get(name)
        if current is not lazy and current is not loaded and current is not None:
            raise ValueError(f"{self.kind} {name!r} registered twice: {lazy.target} and {self._name_of(current)}")
        self._entries[name] = loaded
        return cast(T, loaded)

    def unregister(self, name: str) -> None:
        """Remove `name` (nothing if it is not there): for tests that register a temporary entry."""
        self._entries.pop(name, None)

    def names(self) -> list[str]:
        """Every name, sorted."""
        return sorted(self._entries)

    def items(self) -> list[tuple[str, T]]:
        """(name, entry) in registration order, every lazy entry loaded."""
        return [(name, self.get(name)) for name in list(self._entries)]

    def values(self) -> list[T]:
        """Every entry in registration order, every lazy entry loaded."""
        return [entry for _, entry in self.items()]

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        """The names in registration order."""
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self._entries)})"
