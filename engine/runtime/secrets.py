"""Secrets (API keys, cluster tokens) kept out of every stored or printed text.

A component that reads a secret registers it here; `redact` replaces every registered
secret in a text with `***`, `redact_columns` does the same to every text column of a
Polars frame. Result rows (every string column, as they are committed and as they are
exported), log records and CLI messages pass through them, so a server that echoes the
Authorization header back in an error body or in its answer cannot put the key into a
result row or onto the terminal.

A secret is found in any of the spellings a server or a library may give it back in:
raw; JSON-escaped (`\\/` for `/`, `\\uXXXX` for any character, `\\"`, `\\\\`); URL-encoded
(`%XX` in upper or lower case hex, `+` for a space); or any mixture of them (each character
may come in any of its spellings).
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from typing import TYPE_CHECKING, TypeVar, overload

if TYPE_CHECKING:
    import polars as pl

__all__ = ["REDACTED", "RedactingFilter", "redact", "redact_columns", "register_secret", "register_secret_env",
           "secret_pattern"]

REDACTED = "***"
_MIN_LEN = 4  # shorter values would redact ordinary words

_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: str | None = None  # every registered secret in every spelling, longest secret first
_regex: re.Pattern[str] | None = None


def _escape(c: str) -> str:
    """`c` as a regular expression both Python's `re` and Polars' (Rust) regex read the same way."""
    if c.isascii() and c.isalnum():
        return c
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x80 else f"\\u{n:04x}" if n <= 0xFFFF else f"\\U{n:08x}"


def _hex(text: str) -> str:
    """Hex digits as a pattern matching them in either case (`2f` and `2F`)."""
    return "".join(f"[{h.lower()}{h.upper()}]" if h.isalpha() else h for h in text)


def _json_u(c: str) -> str:
    """The `\\uXXXX` escape(s) of `c` (a surrogate pair beyond the BMP), hex in either case."""
    units = c.encode("utf-16-be")
    return "".join("\\x5cu" + _hex(units[i:i + 2].hex()) for i in range(0, len(units), 2))


def _char_pattern(c: str) -> str:
    """Every spelling of one character: raw, JSON escapes, URL encoding, Python's repr escape."""
    alts = [_json_u(c), "".join("%" + _hex(f"{b:02x}") for b in c.encode())]
    short = json.dumps(c)[1:-1]  # \" \\ \n ... (json.dumps writes non-ASCII as \uXXXX: covered above)
    if short != c and not short.startswith("\\u"):
        alts.append("".join(_escape(x) for x in short))
    if c == "/":
        alts.append("\\x5c\\x2f")  # \/ (JSON may escape a slash)
    if c == "'":
        alts.append("\\x5c\\x27")  # \' (Python's repr)
    if c == " ":
        alts.append("\\x2b")  # + (quote_plus)
    alts.append(_escape(c))  # last: a backslash's escape `\\` begins with the backslash itself
    return "(?:" + "|".join(dict.fromkeys(alts)) + ")"


def secret_pattern(secret: str) -> str:
    """A regular expression matching `secret` in each of its spellings (see the module docstring)."""
    return "".join(_char_pattern(c) for c in secret)


def register_secret(value: str | None) -> None:
    """Remember `value` as a secret (ignored when empty or too short to be one)."""
    global _pattern, _regex
    if value and len(value) >= _MIN_LEN:
        with _lock:
            if value in _secrets:
                return
            _secrets.add(value)
            _pattern = "|".join(secret_pattern(s) for s in sorted(_secrets, key=len, reverse=True))
            _regex = re.compile(_pattern)


def register_secret_env(*names: str) -> None:
    """Register the values of these environment variables (those that are set)."""
    for name in names:
        register_secret(os.environ.get(name))


@overload
def redact(text: str) -> str: ...


@overload
def redact(text: None) -> None: ...


def redact(text: str | None) -> str | None:
    """`text` with every registered secret, in any spelling, replaced by `***` (longest first, so no part
    of one survives).

    Redact a whole text before cutting it short: a secret that straddles the cut would no longer match,
    and its prefix would be kept (`redact(text)[:n]`, never `redact(text[:n])`)."""
    regex = _regex
    if not text or regex is None:
        return text
    return regex.sub(REDACTED, text)


Frame = TypeVar("Frame", "pl.DataFrame", "pl.LazyFrame")


def redact_columns(frame: Frame) -> Frame:
    """`frame` with every registered secret redacted from each string column and list-of-string column."""
    import polars as pl

    pattern = _pattern
    if pattern is None:
        return frame
    schema = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
    exprs = [pl.col(c).str.replace_all(pattern, REDACTED) for c, t in schema.items() if t == pl.String]
    exprs += [pl.col(c).list.eval(pl.element().str.replace_all(pattern, REDACTED))
              for c, t in schema.items() if t == pl.List(pl.String)]
    return frame.with_columns(exprs) if exprs else frame


class RedactingFilter(logging.Filter):
    """A logging filter that redacts secrets from each record's rendered message and its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _regex is None:
            return True
        msg = record.getMessage()
        clean = redact(msg)
        if record.exc_info and record.exc_info[1] is not None:
            # a handler renders the traceback itself (rich from exc_info): one holding a secret is rendered
            # here, redacted, into the message instead
            trace = logging.Formatter().formatException(record.exc_info)
            if redact(trace) != trace:
                clean, record.exc_info, record.exc_text = f"{clean}\n{redact(trace)}", None, None
        if clean != msg:
            record.msg, record.args = clean, None
        return True
