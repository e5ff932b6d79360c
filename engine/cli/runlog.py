"""A run's log file, `OUT/logs/run-<time>.log`.

While a run is inside `run_log`, every log record of the driver at INFO and above goes to the file
(the terminal keeps showing warnings only, or INFO with `-v`), and so does every line the
cluster's workers print: the engine actors' vLLM lines, forwarded by Ray to the driver
(`engine.runtime.cluster`, logger `engine.runtime.workers`). Every line passes secret redaction
(`engine.runtime.secrets.RedactingFilter`) before it is written, and shows control characters as escapes
(`engine.cli._console.VisibleFormatter`: an item id holding ESC or an OSC sequence is written `\x1b...`). A run
that cannot create the file says so once and runs on without it; so does one whose file stops taking lines (a
full disk): one sentence on the terminal, where logging would print a traceback for every record.

`run` opens its log only once it holds OUT (`RunLog.hold`: its plan is recorded), with the records of
its start written first: a run refused before (a folder of another sweep, a driver already there, a
wrong `--data`) writes no log into OUT.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import TracebackType
from typing import Self

from engine.cli._console import VisibleFormatter, warn
from engine.runtime.secrets import RedactingFilter

__all__ = ["RunLog", "run_log"]

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_EARLY_KEPT = 10_000
"""Records of a run's start kept for its log (the first ones; a start that logs more keeps those)."""


class _LogFile(logging.FileHandler):
    """The run log's handler: a line it cannot write (no space left) is said once, and the file takes no more."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, encoding="utf-8", delay=False)
        self.broken = False

    def emit(self, record: logging.LogRecord) -> None:
        if not self.broken:
            super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:
        err = sys.exc_info()[1]
        if self.broken:
            return
        self.broken = True
        why = err.strerror if isinstance(err, OSError) and err.strerror else f"{type(err).__name__}: {err}"
        warn(f"the run log {self.baseFilename} takes no more lines: {why} (the run goes on without it)")

    def close(self) -> None:
        with contextlib.suppress(OSError):  # the lines a full disk refused are still buffered: they stay unwritten
            super().close()


def _new_path(out_dir: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = out_dir / "logs" / f"run-{stamp}.log"
    n = 1
    while path.exists():  # two runs within a second (a refused second driver, a quick rerun)
        path = out_dir / "logs" / f"run-{stamp}-{n}.log"
        n += 1
    return path


@contextmanager
def _at_info(handler: logging.Handler) -> Iterator[None]:
    """`handler` on the root logger, which passes INFO records while inside."""
    root = logging.getLogger()
    before = root.level
    root.addHandler(handler)
    root.setLevel(min(before, logging.INFO) if before else logging.INFO)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(before)


class _Early(logging.Handler):
    """Keeps the INFO-and-up records of a run's start until its log file exists."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.records) < _EARLY_KEPT:
            self.records.append(record)


class RunLog:
    """A run's log, opened once the run holds OUT (a context manager).

    Inside, the records of the run's start are kept; `hold()` makes `OUT/logs/run-<time>.log`, writes them to
    it first and logs there from then on. A run that never holds OUT writes nothing there (its records are
    dropped: what ended it is printed).
    """

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self.path: Path | None = None
        self.held = False
        self._early = _Early()
        self._stack = ExitStack()

    def __enter__(self) -> Self:
        self._stack.enter_context(_at_info(self._early))
        return self

    def hold(self) -> Path | None:
        """The run holds OUT: open its log (once), the start's records first; its path, None when it cannot be
        made (said once)."""
        if not self.held:
            self.held = True
            self.path = self._stack.enter_context(run_log(self.out_dir, early=self._early.records))
            logging.getLogger().removeHandler(self._early)
        return self.path

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        self._stack.close()


@contextmanager
def run_log(out_dir: Path, early: Sequence[logging.LogRecord] = ()) -> Iterator[Path | None]:
    """Log to a new `OUT/logs/run-<time>.log` while inside, the `early` records first; yields its path (None when
    it cannot be made)."""
    try:
        path = _new_path(out_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = _LogFile(path)
    except (OSError, ValueError) as err:  # ValueError: a NUL byte in the path
        warn(f"no run log: cannot create {out_dir / 'logs'} ({getattr(err, 'strerror', None) or err})")
        yield None
        return
    handler.setLevel(logging.INFO)
    handler.setFormatter(VisibleFormatter(_FORMAT))
    handler.addFilter(RedactingFilter())
    for record in early:
        handler.handle(record)
    try:
        with _at_info(handler):
            yield path
    finally:
        handler.close()
