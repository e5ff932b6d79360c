"""Reading annotation files (Parquet tables, JSON lists) with typed, located checks.

File-level problems (missing file, unreadable file, missing column, wrong column type)
are fatal; value-level problems (a null, a wrong JSON type) are row problems. Every
problem names the file and the 0-based row.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import polars as pl

from engine.datasets.errors import DatasetError, Problems, RowError

__all__ = ["Kind", "collect_rows", "json_list", "need", "optional", "parquet_files", "read_json", "read_parquet",
           "read_tsv"]

Kind = Literal["str", "int", "num", "list[str]", "image", "int|str", "any"]

_LABEL = {
    "str": "a string",
    "int": "an integer",
    "num": "a number",
    "list[str]": "a list of strings",
    "image": "an image (path string, bytes, or {bytes, path})",
    "int|str": "an integer or a string",
    "any": "a value",
}


def _dtype_ok(dtype: pl.DataType, kind: Kind) -> bool:
    is_str = dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum)
    if kind == "str":
        return is_str
    if kind == "int":
        return dtype.is_integer()
    if kind == "num":
        return dtype.is_numeric()
    if kind == "int|str":
        return is_str or dtype.is_integer()
    if kind == "list[str]":
        return isinstance(dtype, pl.List | pl.Array) and dtype.inner in (pl.String, pl.Categorical)
    if kind == "image":
        return is_str or dtype == pl.Binary or (isinstance(dtype, pl.Struct) and
                                                 any(f.name == "bytes" for f in dtype.fields))
    return True


def _value_ok(value: Any, kind: Kind) -> bool:
    if kind == "str":
        return isinstance(value, str)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "num":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "int|str":
        return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
    if kind == "list[str]":
        return isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
    if kind == "image":
        return isinstance(value, str | bytes) or (isinstance(value, Mapping) and "bytes" in value)
    return True


def need(rec: Mapping[str, Any], key: str, kind: Kind = "str") -> Any:
    """`rec[key]`, checked: raise `RowError` naming the field when it is missing, null or mistyped."""
    if key not in rec:
        raise RowError(f"missing field {key!r}")
    value = rec[key]
    if value is None:
        raise RowError(f"field {key!r} is null")
    if not _value_ok(value, kind):
        raise RowError(f"field {key!r}: expected {_LABEL[kind]}, got {type(value).__name__} {str(value)[:60]!r}")
    return value


def optional(rec: Mapping[str, Any], key: str, kind: Kind = "str", default: Any = None) -> Any:
    """`rec[key]` checked like `need`, or `default` when missing or null."""
    if rec.get(key) is None:
        return default
    return need(rec, key, kind)


def parquet_files(path: Path) -> list[Path]:
    """A Parquet file, or every ``*.parquet`` under a folder (sorted; Hugging Face shards)."""
    return sorted(Path(path).rglob("*.parquet")) if Path(path).is_dir() else [Path(path)]


def read_parquet(path: Path, columns: Mapping[str, Kind], problems: Problems,
                 optional_columns: Mapping[str, Kind] | None = None) -> list[tuple[Path, pl.DataFrame]]:
    """Each Parquet shard under `path` as a frame, after checking column names and types.

    A missing or unreadable file, a missing required column, or a column of the wrong
    type is a fatal problem (recorded in `problems`); that shard is left out.
    """
    files = parquet_files(path)
    if not files or not files[0].exists():
        problems.add(path, None, "annotation file not found (or no .parquet files under it)", fatal=True)
        return []
    out = []
    for f in files:
        try:
            schema = pl.scan_parquet(f).collect_schema()
        except Exception as err:  # noqa: BLE001 - polars raises several error types for a bad file
            problems.add(f, None, f"not a readable Parquet file: {err}", fatal=True)
            continue
        bad = [f"missing column {c!r}" for c in columns if c not in schema]
        for c, kind in {**(optional_columns or {}), **columns}.items():
            if c in schema and not _dtype_ok(schema[c], kind):
                bad.append(f"column {c!r} has type {schema[c]}, expected {_LABEL[kind]}")
        for reason in bad:
            problems.add(f, None, reason, fatal=True)
        if not bad:
            try:
                out.append((f, pl.read_parquet(f)))
            except Exception as err:  # noqa: BLE001 - a valid footer over corrupt data pages: polars raises several types
                problems.add(f, None, f"not a readable Parquet file: {err}", fatal=True)
    return out


def read_tsv(path: Path, columns: Mapping[str, Kind], problems: Problems) -> pl.DataFrame | None:
    """A tab-separated table (VLMEvalKit's benchmark files) with every cell read as a string.

    Empty cells are null. A missing or unreadable file, or a missing required column,
    is a fatal problem (recorded in `problems`) and gives None.
    """
    if not Path(path).is_file():
        problems.add(path, None, "annotation file not found", fatal=True)
        return None
    try:
        df = pl.read_csv(path, separator="\t", infer_schema=False, quote_char='"')
    except Exception as err:  # noqa: BLE001 - polars raises several error types for a malformed file
        problems.add(path, None, f"not a readable TSV file: {err}", fatal=True)
        return None
    missing = [c for c in columns if c not in df.columns]
    for c in missing:
        problems.add(path, None, f"missing column {c!r}", fatal=True)
    return None if missing else df


def read_json(path: Path, problems: Problems) -> Any:
    """The parsed JSON document at `path`, or None (a fatal problem recorded) when missing or invalid."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        problems.add(path, None, "annotation file not found", fatal=True)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        problems.add(path, None, f"not valid JSON: {err}", fatal=True)
    except RecursionError:
        problems.add(path, None, "not readable JSON: arrays or objects nested too deeply", fatal=True)
    except OSError as err:
        problems.add(path, None, f"cannot read: {err}", fatal=True)
    return None


def collect_rows(source: Path, rows: Iterable[tuple[int, Any]], parse: Callable[[int, Any], Any],
                 problems: Problems) -> list[Any]:
    """`parse(row_index, row)` for every row; a `RowError` or `DatasetError` becomes a located problem.

    `parse` returns one item, a list of items, or None (row deliberately left out).
    """
    out: list[Any] = []
    for i, rec in rows:
        if not isinstance(rec, Mapping):
            problems.add(source, i, f"expected an object, got {type(rec).__name__}")
            continue
        try:
            got = parse(i, rec)
        except RowError as err:
            problems.add(source, i, err.reason, fatal=err.fatal)
            continue
        except DatasetError as err:
            problems.extend(err.problems)
            continue
        if isinstance(got, list):
            out.extend(got)
        elif got is not None:
            out.append(got)
    return out


def json_list(path: Path, problems: Problems) -> list[tuple[int, Any]]:
    """Rows of a JSON file holding a list (a fatal problem when it holds something else)."""
    data = read_json(path, problems)
    if data is None:
        return []
    if not isinstance(data, list):
        problems.add(path, None, f"expected a JSON list of entries, got {type(data).__name__}", fatal=True)
        return []
    return list(enumerate(data))
