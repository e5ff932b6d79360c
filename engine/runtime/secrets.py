"""Secrets (API keys, cluster tokens, credentials in a URL) kept out of every stored or printed text.

A component that reads a secret registers it here; `redact` replaces every registered
secret in a text with `***`, `redact_columns` does the same to the text columns of a Polars
frame. The columns of a result row that carry a server's, an engine's or an error's text
(`engine.results.schema.REDACTED_COLUMNS`, as they are committed and as they are exported),
every file framesweep writes, log records and CLI messages pass through them, so a server that
echoes the Authorization header back in an error body or in its answer cannot put the key into
a result row, a file or onto the terminal. Key columns and what came from the dataset are never
rewritten: a secret there would make the row's key another one.

A secret is found in any of the spellings a server or a library may give it back in
(`engine.runtime.secret_spellings`): raw or case-changed, JSON-escaped, URL-encoded once or
twice, HTML character references, hex, base64 (standard or URL-safe, any alignment), and split
across lines.

Redaction is only safe for a value that cannot be ordinary text: `secret_problem` says why a
value is not one (shorter than `MIN_SECRET_LEN` characters, a word, a number, a few characters
repeated), and the spec's checks refuse such a key by the variable or field that holds it.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Collection
from typing import TYPE_CHECKING, TypeVar, overload
from urllib.parse import parse_qsl, unquote, urlsplit

from engine.runtime.secret_spellings import secret_pattern

if TYPE_CHECKING:
    import polars as pl

__all__ = ["MIN_SECRET_LEN", "REDACTED", "RedactingFilter", "redact", "redact_columns", "register_secret",
           "register_secret_env", "secret_pattern", "secret_problem", "url_credentials"]

REDACTED = "***"
MIN_SECRET_LEN = 16
"""The shortest value a spec may use as a key. Every key a provider issues is longer (OpenAI's and Anthropic's
`sk-...` 51 to 108 characters, Hugging Face's `hf_...` 37, Google's `AIza...` 39, 32 and more elsewhere); a key
chosen for `vllm serve --api-key` must be too (vLLM's docs' `token-abc123` is not)."""
_MIN_LEN = 4  # shorter values are never registered (they would redact ordinary words wherever they are)
_MIN_DISTINCT = 6  # fewer different characters: a few repeated (`abababab...`, `1111...`)
_SEPARATORS = re.compile(r"[\s._\-/:]")
_WORDS = re.compile(r"(?:[A-Z]?[a-z]+)+|[A-Z]+")  # lower-case, upper-case or CamelCase words, run together
_CREDENTIAL_NAME = re.compile(r"key|token|secret|pass|pwd|auth|sig|credential|session", re.IGNORECASE)

_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: str | None = None  # every registered secret in every spelling, longest secret first
_regex: re.Pattern[str] | None = None


def secret_problem(value: str) -> str | None:
    """Why `value` could also be ordinary text (so redacting it could rewrite other text, and other text could
    hide it), or None for a value safe to treat as a secret. Never names the value itself."""
    if len(value) < MIN_SECRET_LEN:
        return f"it is {len(value)} character(s) long, fewer than {MIN_SECRET_LEN}"
    if len(set(value)) < _MIN_DISTINCT:
        return f"it repeats {len(set(value))} different character(s)"
    plain = _SEPARATORS.sub("", value)
    if plain.isdigit():
        return "it is a number"
    if _WORDS.fullmatch(plain):
        return "it is made of words (letters only)"
    return None


def url_credentials(url: str) -> list[tuple[str, str]]:
    """The credentials written into `url`, each with where it sits: the password of `user:password@` (the user
    when no password is given: a token), and the value of each query or fragment parameter whose name says
    key, token, secret, password, auth, signature or session (decoded, as the server reads it)."""
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:  # not a URL: the spec's own check says so
        return []
    found = []
    if password:
        found.append(("the password in the URL's user:password@", unquote(password)))
    elif user:
        found.append(("the user name in the URL's user@ (a token)", unquote(user)))
    for part, what in ((parts.query, "query"), (parts.fragment, "fragment")):
        found += [(f"the URL's {what} parameter {name!r}", value)
                  for name, value in parse_qsl(part) if _CREDENTIAL_NAME.search(name) and value]
    return found


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


def redact_columns(frame: Frame, columns: Collection[str] | None = None) -> Frame:
    """`frame` with every registered secret redacted from each string and list-of-string column, or from only
    those of them named in `columns` (the others, key columns above all, are kept as they are)."""
    import polars as pl

    pattern = _pattern
    if pattern is None:
        return frame
    schema = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
    names = [c for c in schema if columns is None or c in columns]
    exprs = [pl.col(c).str.replace_all(pattern, REDACTED) for c in names if schema[c] == pl.String]
    exprs += [pl.col(c).list.eval(pl.element().str.replace_all(pattern, REDACTED))
              for c in names if schema[c] == pl.List(pl.String)]
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
