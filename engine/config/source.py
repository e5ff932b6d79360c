"""Reading a spec file: its bytes, as UTF-8, as TOML, into a mapping of bounded depth.

Each way a file can be unusable (missing, a directory, a named pipe or other special file (looked at before
it is opened: a FIFO with no writer would block for ever), unreadable, a name the system refuses, bytes that
are not UTF-8, TOML that does not parse or nests without end) becomes one sentence
naming the file (`SpecFileError`); `engine.config.load_spec` turns it into a `SpecError`.
"""

from __future__ import annotations

import errno
import stat
import tomllib
from pathlib import Path
from typing import Any

__all__ = ["MAX_DEPTH", "SpecError", "SpecFileError", "read_spec_file"]

MAX_DEPTH = 32
"""Tables and arrays inside each other a spec may hold (a real one needs about five)."""


class SpecError(ValueError):
    """A sweep spec that cannot be used; the message names the file and field paths."""


class SpecFileError(ValueError):
    """A spec file that cannot be read as TOML; the message names the file."""


def _shown(path: Path) -> str:
    """The path as written, with control characters (a NUL byte) escaped."""
    text = str(path)
    return text if text.isprintable() else repr(text)[1:-1]


_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"))


def _read_bytes(path: Path) -> bytes:
    name = _shown(path)
    if "\x00" in str(path):
        raise SpecFileError(f"{name}: a spec path cannot hold a NUL byte")
    try:
        mode = path.stat().st_mode  # before opening: a FIFO without a writer would block the open for ever
        if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
            kind = next((what for test, what in _KINDS if test(mode)), "not a regular file")
            raise SpecFileError(f"{name}: is {kind}, not a spec file (write the spec to a file and give that)")
        return path.read_bytes()
    except FileNotFoundError:
        raise SpecFileError(f"{name}: spec file not found") from None
    except IsADirectoryError:
        raise SpecFileError(f"{name}: is a directory, not a spec file") from None
    except OSError as err:
        if err.errno == errno.ENAMETOOLONG:
            raise SpecFileError(f"{name}: the file name is too long for the file system") from None
        raise SpecFileError(f"{name}: cannot read the spec file ({err.strerror or err})") from None


def _decode(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise SpecFileError(f"{_shown(path)}: not UTF-8 text: byte 0x{data[err.start]:02x} at offset {err.start} "
                            f"(line {line}, column {column})") from None


def _depth(value: Any) -> int:
    """How many tables and arrays sit inside each other in `value` (iteratively: no recursion limit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        children = v.values() if isinstance(v, dict) else v if isinstance(v, list) else None
        if children is None:
            continue
        deepest = max(deepest, d)
        if d <= MAX_DEPTH:
            stack.extend((c, d + 1) for c in children)
    return deepest


def read_spec_file(path: str | Path) -> dict[str, Any]:
    """The TOML mapping in `path`; raise `SpecFileError` naming the file when it cannot be one."""
    p = Path(path)
    text = _decode(p, _read_bytes(p))
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise SpecFileError(f"{_shown(p)}: not valid TOML: {err}") from None
    except RecursionError:
        raise SpecFileError(f"{_shown(p)}: tables or arrays nested too deeply to read (a spec needs a few "
                            f"levels, at most {MAX_DEPTH})") from None
    if _depth(data) > MAX_DEPTH:
        raise SpecFileError(f"{_shown(p)}: tables or arrays nested more than {MAX_DEPTH} levels deep (a spec "
                            "needs a few)")
    return data
