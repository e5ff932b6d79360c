"""Secrets (API keys, cluster tokens) kept out of every stored or printed text.

A component that reads a secret registers it here; `redact` replaces every registered
secret in a text with `***`. Error rows, log records and CLI messages pass through it,
so a server that echoes the Authorization header back in an error body cannot put the
key into a result row or onto the terminal.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import overload

__all__ = ["REDACTED", "RedactingFilter", "redact", "register_secret", "register_secret_env"]

REDACTED = "***"
_MIN_LEN = 4  # shorter values would redact ordinary words

_lock = threading.Lock()
_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember `value` as a secret (ignored when empty or too short to be one)."""
    if value and len(value) >= _MIN_LEN:
        with _lock:
            _secrets.add(value)


def register_secret_env(*names: str) -> None:
    """Register the values of these environment variables (those that are set)."""
    for name in names:
        register_secret(os.environ.get(name))


@overload
def redact(text: str) -> str: ...


@overload
def redact(text: None) -> None: ...


def redact(text: str | None) -> str | None:
    """`text` with every registered secret replaced by `***` (longest first, so no part of one survives).

    Redact a whole text before cutting it short: a secret that straddles the cut would no longer match,
    and its prefix would be kept (`redact(text)[:n]`, never `redact(text[:n])`)."""
    if not text or not _secrets:
        return text
    with _lock:
        known = sorted(_secrets, key=len, reverse=True)
    for s in known:
        if s in text:
            text = text.replace(s, REDACTED)
    return text


class RedactingFilter(logging.Filter):
    """A logging filter that redacts secrets from each record's rendered message."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _secrets:
            msg = record.getMessage()
            clean = redact(msg)
            if clean != msg:
                record.msg, record.args = clean, None
        return True
