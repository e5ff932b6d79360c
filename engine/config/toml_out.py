"""Writing TOML: the one writer, over tomli-w (the inverse of `load_spec`).

TOML has no null: a spec field set to None means "the default", so `spec_toml` leaves such keys
out (at any depth, in tables and in arrays of tables) instead of writing an invalid ``null``.
`toml_value` writes one value on one line (inline tables and arrays), for documentation
that shows a field and its default; None gives None there (the caller shows the field unset).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tomli_w

from engine.runtime.atomic import atomic_write
from engine.runtime.secrets import redact

__all__ = ["spec_toml", "toml_key", "toml_value", "write_spec_toml"]


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_without_none(v) for v in value if v is not None]
    if isinstance(value, Path):
        return str(value)
    return value


def spec_toml(data: dict[str, Any]) -> str:
    """`data` (a spec as a mapping, e.g. ``SweepSpec.model_dump(mode="json")``) as TOML text, None values left out.

    Raises:
        TypeError: A value TOML cannot hold (e.g. an object other than str, number, bool, date, list, dict).
    """
    return tomli_w.dumps(_without_none(data))


def write_spec_toml(data: dict[str, Any], path: Path | str) -> Path:
    """Write `spec_toml(data)` to `path` (atomically), every registered secret redacted (a key belongs in the
    environment, not in a file framesweep writes); returns `path`."""
    out = Path(path)
    atomic_write(out, redact(spec_toml(data)).encode("utf-8"))
    return out


def toml_key(key: str) -> str:
    """`key` as a TOML key (bare where it can be, quoted otherwise)."""
    return tomli_w.dumps({key: 0}).rsplit(" = ", 1)[0]


def toml_value(value: Any) -> str | None:
    """One value as TOML on one line (lists and tables inline); None for None (TOML has no null)."""
    if value is None:
        return None
    value = _without_none(value)
    if isinstance(value, list):
        return "[" + ", ".join(v for v in map(toml_value, value) if v is not None) + "]"
    if isinstance(value, dict):
        items = ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    return tomli_w.dumps({"v": value}).removeprefix("v = ").rstrip("\n")
