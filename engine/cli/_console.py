"""The CLI's consoles: no rich markup is read from any text they print.

Messages carry user text (paths, ids, error messages, server replies) that may hold
`[brackets]`; with markup off they print as written, and styling is given explicitly
(`style=`). Error messages also pass through `redact`, so no registered secret is printed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console
from rich.logging import RichHandler

from engine.runtime.secrets import RedactingFilter, redact

__all__ = ["console", "err_console", "fail", "heading", "setup_logging", "shards_named", "warn"]

console = Console(markup=False, emoji=False)
err_console = Console(stderr=True, markup=False, emoji=False)


def heading(text: str) -> None:
    """A table's subject as a bold line of its own, unwrapped (as a rich table title it would wrap to the
    table's width, which in an 80-column terminal splits it over several lines)."""
    console.print(text, style="bold", soft_wrap=True)


def fail(message: object) -> None:
    """An error message on stderr, in red, printed literally and unwrapped (secrets redacted)."""
    err_console.print(redact(str(message)), style="red", soft_wrap=True)


@contextmanager
def shards_named(out_dir: Path) -> Iterator[None]:
    """Inside: reading the results of DIR. An unreadable shard (a bad footer, or corrupt data pages that fail
    a collect: `engine.results.store.naming_corrupt_shards`) is named and the command exits 2, instead of a
    Polars traceback naming no file."""
    from engine.results.store import CorruptShardError, naming_corrupt_shards

    try:
        with naming_corrupt_shards(out_dir):
            yield
    except CorruptShardError as err:
        fail(err)
        raise typer.Exit(2) from None


def warn(message: object) -> None:
    """A warning on stderr, in yellow, printed literally (secrets redacted)."""
    err_console.print(redact(str(message)), style="yellow", soft_wrap=True)


def setup_logging(verbose: bool) -> None:
    """Log records to stderr through rich, secrets redacted; INFO with `verbose`, else WARNING."""
    handler = RichHandler(console=err_console, show_path=False, markup=False)
    handler.addFilter(RedactingFilter())
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(message)s",
                        handlers=[handler], force=True)
