"""A run's log file, `OUT/logs/run-<time>.log`.

While a run is inside `run_log`, every log record of the driver at INFO and above goes to the file
(the terminal keeps showing warnings only, or INFO with `-v`), and so does every line the
cluster's workers print: the engine actors' vLLM lines, forwarded by Ray to the driver
(`engine.runtime.cluster`, logger `engine.runtime.workers`). Every line passes secret redaction
(`engine.runtime.secrets.RedactingFilter`) before it is written, and shows control characters as escapes
(`engine.cli._console.VisibleFormatter`: an item id holding ESC or an OSC sequence is written `\x1b...`). A run
that cannot create the file says so once and runs on without it; so does one whose file stops taking lines (a
full disk): one sentence on the terminal, where logging would print a traceback for every record.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from engine.cli._console import VisibleFormatter, warn
from engine.runtime.secrets import RedactingFilter

__all__ = ["run_log"]

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


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
def run_log(out_dir: Path) -> Iterator[Path | None]:
    """Log to a new `OUT/logs/run-<time>.log` while inside; yields its path (None when it cannot be made)."""
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
    root = logging.getLogger()
    before = root.level
    root.addHandler(handler)
    root.setLevel(min(before, logging.INFO) if before else logging.INFO)
    try:
        yield path
    finally:
        root.removeHandler(handler)
        root.setLevel(before)
        handler.close()
