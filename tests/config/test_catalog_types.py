"""`framesweep datasets` names each field's type in words a TOML user reads, not Python's typing."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import pytest
from pydantic import Field

from engine.config.catalog import _type_name, describe_adapters


@pytest.mark.parametrize(("annotation", "words"), [
    (int, "integer"),
    (int | None, "integer or null"),
    (float, "number"),
    (bool, "boolean"),
    (Path | None, "path or null"),
    (list[str], "list of strings"),
    (list[Annotated[str, Field(pattern="^x")]] | None, "list of strings, or null"),
    (Literal["first", "joined"], '"first" or "joined"'),
    (list[Literal["a", "b", "c"]], 'list of "a", "b" or "c"'),
    (list[list[int]], "list of lists of integers"),
    (dict[str, float], "table of numbers"),
])
def test_types_are_named_in_words(annotation: object, words: str) -> None:
    assert _type_name(annotation) == words


def test_no_adapter_field_shows_typing_internals() -> None:
    shown = [f.type for info in describe_adapters() for f in info.fields]
    assert shown and not [t for t in shown if "[" in t or "Annotated" in t or "|" in t or "NoneType" in t]
