"""A run's log file, `OUT/logs/run-<time>.log`.

While a run is inside `run_log`, every log record of the driver at INFO and above goes to the file
(the terminal keeps showing warnings only, or INFO with `-v`), and so does every line the
cluster's workers print: the engine actors' vLLM lines, forwarded by Ray to the driver
(`engine.runtime.cluster`, logger `engine.runtime.workers`). Every line passes secret redaction
(`engine.runtime.secrets.RedactingFilter`) before it is written, and shows control characters as escapes
(`engine.cli._console.VisibleFormatter`: an item id holding ESC or an OSC sequence is written `\x1b...`). A run
that cannot create the file says so once and runs on without it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from engine.cli._console import VisibleFormatter, warn
from engine.runtime.secrets import RedactingFilter

__all__ = ["run_log"]

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


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
        handler = logging.FileHandler(path, encoding="utf-8", delay=False)
    except OSError as err:
        warn(f"no run log: cannot create {out_dir / 'logs'} ({err.strerror or err})")
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
