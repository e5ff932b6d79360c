"""The CLI's consoles: no rich markup is read from any text they print.

Messages carry user text (paths, ids, error messages, server replies) that may hold
`[brackets]`; with markup off they print as written, and styling is given explicitly
(`style=`). Error messages also pass through `redact`, so no registered secret is printed.
"""

from __future__ import annotations

from rich.console import Console

from engine.runtime.secrets import redact

__all__ = ["console", "err_console", "fail", "warn"]

console = Console(markup=False)
err_console = Console(stderr=True, markup=False)


def fail(message: object) -> None:
    """An error message on stderr, in red, printed literally and unwrapped (secrets redacted)."""
    err_console.print(redact(str(message)), style="red", soft_wrap=True)


def warn(message: object) -> None:
    """A warning on stderr, in yellow, printed literally (secrets redacted)."""
    err_console.print(redact(str(message)), style="yellow", soft_wrap=True)
