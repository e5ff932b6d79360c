"""What `run`, `demo`, `engines up` and `predict` show while they work: the phase and its elapsed time, then jobs.

The pipeline reports through one callback, `progress(event, n)` (`engine.sweep.scheduler.ProgressFn`):

| event | n | said by |
| --- | --- | --- |
| `total` | first-round jobs pending | the sweep, once its plan is recorded |
| `more` | jobs an adaptive policy added | the sweep |
| `done` | jobs answered (rows made) | the sweep |
| `committed` | rows committed | the sweep |
| `decoded` | 1 per decode pass | the sweep |
| `ray` / `ray_up` | 0 | `start_backends`: starting or joining Ray, then Ray is up |
| `engine_up` | the model's index in the spec | `start_backends`, once that model's backend answers |

`RunProgress` turns them into a phase ("reading items", "starting Ray", "loading <model> (0/2 up)",
"decoding", "answering"; "engines ready" where no jobs follow) with the time since the command started;
a command sets phases of its own with `set_stage` (`run`: "building the tiny qwen2_5_vl checkpoint",
`engine.cli.local_assets`). A phase never goes back to the first one once Ray or an engine is up. On a
terminal it is a live rich line (phase, bar, done/total once the jobs are known, elapsed, remaining);
anywhere else (nohup, a batch scheduler, a pipe) it prints one plain line at each phase change and one
every `every_s` seconds, with the time left once jobs are answered, e.g.
`[0:00:12] demo: loading tiny (0/1 up); 0/36 jobs` or `[0:01:40] demo: answering; 12/36 jobs; ~2:10 left`.
Each phase change is also logged (INFO: the run log).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Self

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from engine.cli._console import err_console
from engine.runtime.secrets import redact

__all__ = ["RunProgress"]

log = logging.getLogger(__name__)


class _Jobs(MofNCompleteColumn):
    """done/total, blank until the total is known (rich would show `0/?` while the items are read)."""

    def render(self, task: Task) -> Text:
        return super().render(task) if task.total is not None else Text("")


def _left(seconds: float) -> str:
    """`~M:SS left` (`~H:MM:SS left` from an hour)."""
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"~{hours}:{minutes:02d}:{secs:02d} left" if hours else f"~{minutes}:{secs:02d} left"


class RunProgress:
    """The `progress(event, n)` callback of a run and its display (a context manager)."""

    def __init__(self, label: str, models: Sequence[str], *, every_s: float = 30.0,
                 console: Console | None = None, on_ray: Callable[[], None] | None = None,
                 uses_ray: bool = True, first: str = "reading items and committed rows",
                 clock: Callable[[], float] = time.monotonic) -> None:
        """`models`: the spec's model ids in order (`engine_up` names one by its index); `on_ray`: called once
        when Ray is up (the CLI prints Ray's log folder then); `uses_ray`: engines in Ray start once jobs are
        pending (False: only HTTP servers answer); `first`: the phase before any event; `clock`: seconds, for
        the elapsed and the remaining time."""
        self.label, self.models, self.every_s, self.uses_ray = label, list(models), every_s, uses_ray
        self.first = first
        self.console = console or err_console
        self.clock = clock
        self.t0 = clock()
        self.total: int | None = None
        self.done = 0
        self._first_done: tuple[float, int] | None = None  # (time, jobs done) at the first answers: the pace's start
        self.decoded = 0
        self.ray = ""  # "", "starting" or "up"
        self.up: set[int] = set()
        self.stage: str | None = None  # a phase set by the command itself (`predict`: "predicting ...")
        self._on_ray = on_ray
        self._lock = threading.Lock()
        self._last_phase = ""
        self._last_line = ""
        self._live: Progress | None = None
        self._task: TaskID | None = None
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    # -- the callback ------------------------------------------------------------------------------------------
    def __call__(self, event: str, n: int) -> None:
        with self._lock:
            ray_now = self._take(event, n)
        if ray_now and self._on_ray is not None:
            self._on_ray()
        self._show()

    def _take(self, event: str, n: int) -> bool:
        """Fold one event into the state; True when Ray just came up."""
        if event == "total":
            self.total = n
        elif event == "more":
            self.total = (self.total or 0) + n
        elif event == "done":
            self.done += n
            self._first_done = self._first_done or (self.clock(), self.done)
        elif event == "decoded":
            self.decoded += n
        elif event == "ray":
            self.ray = self.ray or "starting"
        elif event == "ray_up":
            was, self.ray = self.ray, "up"
            return was != "up"
        elif event == "engine_up":
            self.up.add(n)
        return False

    def set_stage(self, stage: str | None) -> None:
        """A phase of the command's own (e.g. "predicting frame counts"); None: back to the sweep's phases."""
        with self._lock:
            self.stage = stage
        self._show()

    # -- what is shown -----------------------------------------------------------------------------------------
    def phase(self) -> str:
        """The current phase, in words."""
        if self.stage:
            return self.stage
        if self.ray == "starting" or (self.uses_ray and self.ray == "" and self.total and not self.done):
            return "starting Ray"
        if self.ray == "up" and len(self.up) < len(self.models):
            waiting = [m for i, m in enumerate(self.models) if i not in self.up]
            ahead = f"; {self.decoded} video(s) decoded ahead" if self.decoded else ""
            return f"loading {', '.join(waiting)} ({len(self.up)}/{len(self.models)} up){ahead}"
        if self.total is None:  # engines up before any job (`engines up`, `predict`): never back to the first phase
            return f"engines ready ({len(self.up)}/{len(self.models)} up)" if self.up or self.ray else self.first
        if self.total == 0:
            return "nothing pending"
        if self.done == 0 and self.ray != "up" and not self.up:
            return "decoding"
        return "answering" if self.done < self.total else "done"

    def elapsed(self) -> str:
        return str(dt.timedelta(seconds=int(self.clock() - self.t0)))

    def remaining(self) -> str:
        """`~M:SS left` at the pace since the first answers (engine start-up left out), "" before a pace."""
        if self._first_done is None or not self.total or self.done >= self.total:
            return ""
        since, done_then = self._first_done
        if self.done <= done_then or self.clock() <= since:
            return ""
        return _left((self.total - self.done) * (self.clock() - since) / (self.done - done_then))

    def line(self) -> str:
        """The plain progress line: `[elapsed] label: phase; done/total jobs; ~M:SS left`."""
        jobs = f"; {self.done}/{self.total} jobs" if self.total else ""
        left = f"; {eta}" if (eta := self.remaining()) else ""
        return f"[{self.elapsed()}] {self.label}: {self.phase()}{jobs}{left}"

    def _show(self) -> None:
        with self._lock:
            phase, line = self.phase(), self.line()
            changed, self._last_phase = phase != self._last_phase, phase
        if changed:
            log.info("%s: %s (%s since start)", self.label, phase, self.elapsed())
        if self._live is not None and self._task is not None:
            self._live.update(self._task, description=redact(f"{self.label}: {phase}"), total=self.total or None,
                              completed=self.done)
        elif changed and self._ticker is not None:
            self._print(line)

    def _print(self, line: str) -> None:
        with self._lock:
            if line == self._last_line:  # a phase change and a tick in the same second
                return
            self._last_line = line
        self.console.print(redact(line), soft_wrap=True, highlight=False)

    def _tick(self) -> None:
        while not self._stop.wait(self.every_s):
            with self._lock:
                line = self.line()
            self._print(line)

    # -- the display's life ------------------------------------------------------------------------------------
    def __enter__(self) -> Self:
        if self.console.is_terminal:
            columns = (TextColumn("{task.description}", style="bold", markup=False), BarColumn(),
                       _Jobs(), TimeElapsedColumn(), TimeRemainingColumn())
            self._live = Progress(*columns, console=self.console, transient=False)
            self._live.__enter__()
            self._task = self._live.add_task(f"{self.label}: {self.phase()}", total=None)
        else:
            self._ticker = threading.Thread(target=self._tick, name="progress-lines", daemon=True)
            self._ticker.start()
            self._print(self.line())  # the first line, also when the phase was set before (`set_stage`)
        self._show()
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        if self._live is not None:
            self._live.__exit__(kind, err, tb)
            self._live = None
        elif self._ticker is not None:
            self._ticker.join(timeout=1.0)
            self._ticker = None
            if kind is None:
                self._print(self.line())  # the last word: where it ended
