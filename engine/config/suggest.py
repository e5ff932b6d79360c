"""The closest allowed field of a misspelt spec key ("did you mean ...?").

Pydantic reports a key a `StrictModel` does not have as "Extra inputs are not permitted" at its path
(`models.0.engine.max_model_lenn`). `closest_field` walks that path through the spec's annotations
(lists, optional values, tables, the dataset union's adapter tag) to the table that holds the key and
picks its nearest field name with `difflib`, as the `[models.engine] extra` check does for vLLM's
arguments (`engine.config.vllm_args`).
"""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any, Literal

from pydantic import BaseModel

__all__ = ["closest_field"]

_CUTOFF = 0.7
"""How alike a key and a field must be to be suggested (`difflib`'s ratio; the engine `extra` check's too)."""


def _leaves(tp: Any) -> list[Any]:
    """The types a value of `tp` may have: `Annotated` unwrapped, unions split, `None` left out."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _leaves(typing.get_args(tp)[0])
    if origin in (typing.Union, types.UnionType):
        return [leaf for arg in typing.get_args(tp) for leaf in _leaves(arg)]
    return [] if tp is type(None) else [tp]


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _tagged(model: type[BaseModel], tag: str) -> bool:
    """Whether `tag` is a value of one of `model`'s `Literal` fields (the union's discriminator: an adapter name)."""
    return any(typing.get_origin(f.annotation) is Literal and tag in typing.get_args(f.annotation)
               for f in model.model_fields.values())


def _step(tp: Any, part: str | int) -> list[Any]:
    """The types one step down a validation error's location: a list's items, a table's values, a model's field,
    or the union member a discriminator tag names."""
    out: list[Any] = []
    for leaf in _leaves(tp):
        origin, args = typing.get_origin(leaf), typing.get_args(leaf)
        if isinstance(part, int) and origin in (list, tuple, set, frozenset) and args:
            out.append(args[0])
        elif isinstance(part, str) and origin is dict and len(args) == 2:
            out.append(args[1])
        elif _is_model(leaf) and isinstance(part, str):
            if part in leaf.model_fields:
                out.append(leaf.model_fields[part].annotation)
            elif _tagged(leaf, part):
                out.append(leaf)
    return out


def _field_names(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


def closest_field(root: type[BaseModel], loc: tuple[str | int, ...]) -> str | None:
    """The allowed field nearest the extra key at `loc` (a pydantic error's location under `root`), or None
    when none is close or the path does not lead to a table."""
    if not loc or not isinstance(loc[-1], str):
        return None
    found: list[Any] = [root]
    for part in loc[:-1]:
        found = [t for tp in found for t in _step(tp, part)]
    names = sorted({n for tp in found for leaf in _leaves(tp) if _is_model(leaf) for n in _field_names(leaf)})
    if near := difflib.get_close_matches(loc[-1], names, n=1, cutoff=_CUTOFF):
        return near[0]
    # else a word of one: `sytem` for `system_prompt`
    words = {w: n for n in reversed(names) for w in n.split("_") if len(w) > 2}
    near = difflib.get_close_matches(loc[-1], list(words), n=1, cutoff=_CUTOFF)
    return words[near[0]] if near else None
