"""The CLI's consoles: no rich markup is read from any text they print.

Messages carry user text (paths, ids, error messages, server replies) that may hold
`[brackets]`; with markup off they print as written, and styling is given explicitly
(`style=`). Error messages also pass through `redact`, so no registered secret is printed. Control
characters in that text (an item id holding ESC, a CSI colour or an OSC title sequence, BEL, a carriage
return: dataset ids are the user's data) are written as escapes (`\x1b`, `visible`) by the consoles
themselves, and by the log formatters of the terminal and the run log (`VisibleFormatter`), so none reaches
a terminal or a log raw; newlines and tabs stay.
Nothing is recoloured by rich's highlighter (an id like `f16-px200704` keeps one colour), and
output that goes to a file or a pipe is neither coloured (rich's own rule) nor wrapped at 80
columns (`COLUMNS` still sets a width). The same holds for `-h`: help to a file or a pipe is plain text with one
line per option (`plain_help`), where rich's help panels would be drawn at 80 columns.
"""

from __future__ import annotations

import errno
import logging
import os
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.console import Console, ConsoleDimensions
from rich.highlighter import NullHighlighter
from rich.logging import RichHandler
from rich.segment import Segment
from rich.text import Text

from engine.runtime.secrets import RedactingFilter, redact

__all__ = ["EXIT_NOT_WRITTEN", "EXIT_NO_SPACE", "UNWRAPPED", "VisibleFormatter", "console", "err_console", "fail",
           "heading", "plain_help", "setup_logging", "shards_named", "visible", "warn", "writing"]

UNWRAPPED = 100_000
"""The width of a console that writes to a file or a pipe: lines and tables are as long as they need."""
EXIT_NO_SPACE = 5
"""A command's output (a report, a JSON document, an export, figures) could not be written for lack of disk space."""
EXIT_NOT_WRITTEN = 1
"""A command's output could not be written for another reason of the system's (named: permission, a read-only file
system, ...)."""


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""C0 controls but tab and newline, DEL, C1 controls (0x9b is a CSI), and the bidirectional overrides that reorder
what a terminal shows."""


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with every control character but newline and tab written as its escape (ESC as `\\x1b`, BEL as
    `\\x07`, a carriage return as `\\x0d`), so that printed it shows what it holds instead of acting on the
    terminal."""
    return _CONTROL.sub(_escape, text)


class VisibleFormatter(logging.Formatter):
    """A log formatter whose lines show control characters as escapes (`visible`): a record naming an item id or a
    path from a dataset cannot colour, retitle or rewrite the terminal or the run log."""

    def format(self, record: logging.LogRecord) -> str:
        return visible(super().format(record))


class _Console(Console):
    """A rich console that does not wrap what goes to a file or a pipe (rich would wrap it at 80 columns), reads
    `COLUMNS` when it prints (rich reads it once, when the console is made: at import), and writes control
    characters in what it prints as escapes (`visible`): in every string it is given (a table's cells too) before
    rich drops some of them, and in every segment of text it renders (rich's own cursor controls, which a live
    progress display uses, are segments of another kind and pass)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        if kwargs.get("width") is None:
            self._width = None
        if kwargs.get("height") is None:
            self._height = None

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        if self._width is None and not self.is_terminal and not self._environ.get("COLUMNS", "").isdigit():
            return ConsoleDimensions(UNWRAPPED, size.height)
        return size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:  # rich's own setter (a property overrides both halves)
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(visible(text), **kwargs)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(seg if seg.control else Segment(visible(seg.text), seg.style, seg.control)
                                      for seg in buffer)


console = _Console(markup=False, emoji=False, highlight=False)
err_console = _Console(stderr=True, markup=False, emoji=False, highlight=False)


def plain_help() -> bool:
    """Whether `-h` should print plain, unwrapped help: stdout is not a terminal (nor forced to act as one) and
    `COLUMNS` sets no width. Rich's help panels fill the console's width, so they cannot be left unwrapped."""
    return not console.is_terminal and not os.environ.get("COLUMNS", "").isdigit()


def heading(text: str) -> None:
    """A table's subject as a bold line of its own, unwrapped (as a rich table title it would wrap to the
    table's width, which in an 80-column terminal splits it over several lines)."""
    console.print(text, style="bold", soft_wrap=True)


def fail(message: object) -> None:
    """An error message on stderr, in red, printed literally and unwrapped (secrets redacted)."""
    err_console.print(redact(str(message)), style="red", soft_wrap=True)


@contextmanager
def shards_named(out_dir: Path) -> Iterator[None]:
    """Inside: reading the results of OUT. An unreadable shard (a bad footer, or corrupt data pages that fail
    a collect: `engine.results.store.naming_corrupt_shards`) is named and the command exits 2, instead of a
    Polars traceback naming no file."""
    from engine.results.errors import ResultsDirError
    from engine.results.store import naming_corrupt_shards

    try:
        with naming_corrupt_shards(out_dir):
            yield
    except ResultsDirError as err:  # an unreadable shard, a damaged manifest, no results directory
        fail(err)
        raise typer.Exit(2) from None


@contextmanager
def writing(what: str, path: Path) -> Iterator[None]:
    """Inside: writing `what` to `path`. An OS error ends the command with one sentence naming the file and the
    system's reason: exit 5 (`EXIT_NO_SPACE`) when the disk or quota is full, else 1 (`EXIT_NOT_WRITTEN`), instead
    of a traceback."""
    try:
        yield
    except OSError as err:
        where = err.filename or path
        if err.errno in (errno.ENOSPC, errno.EDQUOT):
            fail(f"could not write {what} to {where}: no space left on device (free space and rerun)")
            raise typer.Exit(EXIT_NO_SPACE) from None
        fail(f"could not write {what} to {where}: {err.strerror or err}")
        raise typer.Exit(EXIT_NOT_WRITTEN) from None


def warn(message: object) -> None:
    """A warning on stderr, in yellow, printed literally (secrets redacted)."""
    err_console.print(redact(str(message)), style="yellow", soft_wrap=True)


PLAIN_LOG_FORMAT = "%(asctime)s %(levelname)s %(message)s"
"""A log record on stderr when it is not a terminal (nohup, a batch scheduler, a pipe): one plain line."""


def setup_logging(verbose: bool) -> None:
    """Log records to stderr, secrets redacted: through rich on a terminal, as plain lines elsewhere (rich's log
    layout fills the console's width, which for a file or a pipe is `UNWRAPPED`: every record would be padded
    to 100,000 characters); INFO with `verbose`, else WARNING (the level is the handler's too, so a run log that
    takes INFO records leaves the terminal as it was)."""
    level = logging.INFO if verbose else logging.WARNING
    handler: logging.Handler
    if err_console.is_terminal:
        handler = RichHandler(console=err_console, show_path=False, markup=False, highlighter=NullHighlighter(),
                              keywords=[])
    else:
        handler = logging.StreamHandler(err_console.file)
        handler.setFormatter(VisibleFormatter(PLAIN_LOG_FORMAT, datefmt="%Y-%m-%d %H:%M:%S"))
    handler.setLevel(level)
    handler.addFilter(RedactingFilter())
    logging.basicConfig(level=level, format="%(message)s", handlers=[handler], force=True)
