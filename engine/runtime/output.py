"""What framesweep writes for machines: JSON (rates as fractions).

Every JSON file framesweep writes goes through `write_json` (a document: indented) or
`write_json_lines` (one record a line), atomically (`engine.runtime.atomic`), with one set of
options: keys in the order the document builds them, ASCII escapes in a document, UTF-8 in a
line, and no NaN or infinity, which JSON does not have: a document holding one is refused with
`JSONValueError`, naming where it sits (``groups[2].cascade.ratio``), before anything is written.
A producer for which a value can be undefined writes None (null) itself, or passes its
document through `finite` first. Paths and dates are written as their text; any other value
that is not JSON is refused the same way.

A document (the manifest, `summary.json`, `--json` files, the export's provenance) is scrubbed of
every registered secret (`engine.runtime.secrets.redact`, over its whole text) as it is written:
a key the spec holds (a `base_url` with `?api_key=`) or a server echoed reaches no file. Lines
are keyed data (items, caches, predictions: ids that must match their items) and are written as
they are, as a row's key columns are.

Rates in a document are fractions in [0, 1]; numbers for people (points on a terminal or a page) are the
presentation layer's, `engine.report.cells`.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from engine.runtime.atomic import atomic_write
from engine.runtime.secrets import redact

__all__ = ["JSONValueError", "finite", "json_line", "json_text", "write_json", "write_json_lines"]


class JSONValueError(ValueError):
    """A value JSON cannot hold (NaN, an infinity, an object), named by its key path in the document."""


def _text_of(value: object) -> str:
    """Paths and dates as their text; any other non-JSON value is refused (`_located` names where)."""
    if isinstance(value, os.PathLike | dt.date | dt.time):
        return str(value)
    raise TypeError(f"a {type(value).__name__} is not JSON")


def _bad(value: Any, path: str) -> tuple[str, str] | None:
    """The key path of the first value JSON cannot hold, and what it is (None when every value is JSON)."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, repr(value))
    if value is None or isinstance(value, str | int | bool):
        return None
    if isinstance(value, Mapping):
        for k, v in value.items():
            if (hit := _bad(v, f"{path}.{k}" if path else str(k))) is not None:
                return hit
        return None
    if isinstance(value, list | tuple):
        for i, v in enumerate(value):
            if (hit := _bad(v, f"{path}[{i}]")) is not None:
                return hit
        return None
    try:
        _text_of(value)
    except TypeError:
        return path, f"a value of type {type(value).__name__}"
    return None


def _located(doc: Any, err: Exception, what: str) -> JSONValueError:
    hit = _bad(doc, "")
    where, value = hit if hit is not None else ("", str(err))
    return JSONValueError(f"{what}: {value} at {where or 'the top'} cannot be written as JSON"
                          + (" (NaN and infinities have no JSON form: write null where a value is undefined)"
                             if value in ("nan", "inf", "-inf") else ""))


def _dumps(doc: Any, what: str, **options: Any) -> str:
    try:
        return json.dumps(doc, allow_nan=False, default=_text_of, **options)
    except (ValueError, TypeError) as err:
        raise _located(doc, err, what) from None


def json_text(doc: Any, what: str = "JSON document") -> str:
    """`doc` as framesweep writes a JSON document: indented by 2, keys in their order, ASCII escapes; no
    trailing newline. `JSONValueError` (naming `what` and the key path) for NaN, infinities or objects."""
    return _dumps(doc, what, indent=2)


def json_line(record: Any, what: str = "JSON record") -> str:
    """`record` on one line (JSONL, the small caches): keys in their order, UTF-8 text as it is."""
    return _dumps(record, what, ensure_ascii=False)


def write_json(path: Path | str, doc: Any, *, durable: bool = True) -> Path:
    """Write `doc` to `path` atomically as `json_text` gives it, every registered secret redacted
    (`engine.runtime.secrets.redact`); nothing is written when it is refused.

    Args:
        path: The target (its folder is created).
        doc: The document.
        durable: fsync (False only for caches that may be rebuilt).
    """
    return atomic_write(path, redact(json_text(doc, str(path))).encode(), durable=durable)


def write_json_lines(path: Path | str, records: Iterable[Any], *, durable: bool = True) -> int:
    """Write `records` to `path` atomically as JSONL (`json_line`, one a line); returns how many."""
    lines = [json_line(r, f"{path} line {i + 1}") for i, r in enumerate(records)]
    atomic_write(path, "".join(f"{line}\n" for line in lines).encode(), durable=durable)
    return len(lines)


def finite(value: Any) -> Any:
    """`value` with every NaN and infinity replaced by None (JSON null), for a document in which such a value
    means "undefined"."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value
