"""What adapters exist and what their spec fields are (for `framesweep datasets`)."""

from __future__ import annotations

import json
import sys
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.fields import PydanticUndefined

from engine.config.sweep import dataset_spec_classes
from engine.config.toml_out import toml_value
from engine.datasets.registry import get_adapter, registered_adapters

__all__ = ["AdapterInfo", "FieldInfo", "describe_adapters", "spec_classes"]


@dataclass(frozen=True)
class FieldInfo:
    """One field a user may write under ``[dataset]``."""

    name: str
    type: str
    default: str
    required: bool
    description: str


@dataclass(frozen=True)
class AdapterInfo:
    """One registered adapter: its name, version, one-line summary and spec fields."""

    name: str
    version: str
    summary: str
    fields: list[FieldInfo]


def spec_classes() -> dict[str, type[BaseModel]]:
    """Adapter name -> its spec class (built-in and registered ones)."""
    return dict(dataset_spec_classes())


_WORDS: dict[Any, str] = {bool: "boolean", int: "integer", float: "number", str: "string", Path: "path", type(None): "null"}
"""Plain types in words (`integer or null`, `list of strings`): what a user writes in TOML, not Python's typing."""


def _either(names: list[str]) -> str:
    """`a or b`, `a, b or c`; `list of strings, or null` where a part has words of its own."""
    if len(names) == 1:
        return names[0]
    last = ", or " if any(" " in n for n in names) else " or "
    return f"{', '.join(names[:-1])}{last}{names[-1]}"


def _plural(name: str) -> str:
    """A type's name for several values: `strings`, `lists of integers`, or as it is (a choice of literals)."""
    if name.startswith('"') or " or " in name:
        return name
    head, _, rest = name.partition(" ")
    return f"{head}s {rest}".rstrip()


def _type_name(tp: Any) -> str:
    """A field's type in words: `integer or null`, `list of strings`, `"first" or "joined"`."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is Literal:
        return _either([json.dumps(a) for a in args])
    if origin in (typing.Union, types.UnionType):
        return _either([_type_name(a) for a in args])
    if origin in (list, tuple, set, frozenset) and args:
        return f"list of {_plural(_type_name(args[0]))}"
    if origin is dict and len(args) == 2:
        return f"table of {_plural(_type_name(args[1]))}"
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return "table"
    return _WORDS.get(tp) or ("any value" if tp is Any else str(getattr(tp, "__name__", tp)))


def _toml(value: Any) -> str:
    """A default as the TOML a spec would hold; a None default is a field left out (TOML has no null)."""
    return toml_value(value) or "(unset)"


def _default(field: Any) -> str:
    if field.default_factory is not None:
        return _toml(field.default_factory())
    if field.default is PydanticUndefined:
        return ""
    return _toml(field.default)


def _version(name: str) -> str:
    factory = get_adapter(name)
    version = getattr(factory, "version", None) if isinstance(getattr(factory, "version", None), str) else None
    return version or str(getattr(sys.modules.get(factory.__module__), "VERSION", "?"))


def describe_adapters() -> list[AdapterInfo]:
    """Every registered adapter with its spec fields (`name` first)."""
    classes = spec_classes()
    out = []
    for name in registered_adapters():
        cls = classes.get(name)
        fields = []
        if cls is not None:
            for fname, f in sorted(cls.model_fields.items(), key=lambda kv: kv[0] != "name"):
                fields.append(FieldInfo(fname, _type_name(f.annotation), _default(f), f.is_required(),
                                        f.description or ""))
        summary = (cls.__doc__ or "").strip().split("\n")[0] if cls is not None else ""
        out.append(AdapterInfo(name, _version(name), summary, fields))
    return out
