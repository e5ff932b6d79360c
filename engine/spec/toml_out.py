"""Write a spec dict as TOML: scalars, tables, arrays of tables; deeper levels inline (the inverse of load_spec)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["write_spec_toml"]


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v))


def write_spec_toml(data: dict[str, Any], path: Path) -> Path:
    """Write `data` to `path` as TOML; returns `path`."""
    head, tables = [], []
    for k, v in data.items():
        if isinstance(v, dict):
            tables.append(f"\n[{k}]\n" + "\n".join(f"{a} = {_value(b)}" for a, b in v.items()))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            tables += [f"\n[[{k}]]\n" + "\n".join(f"{a} = {_value(b)}" for a, b in x.items()) for x in v]
        else:
            head.append(f"{k} = {_value(v)}")
    Path(path).write_text("\n".join(head) + "\n" + "\n".join(tables) + "\n")
    return Path(path)
