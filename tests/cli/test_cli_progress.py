"""The progress display's phases and its plain lines when stderr is not a terminal (the events a run sends)."""

from __future__ import annotations

import io
import re
import time

from rich.console import Console

from engine.cli.progress import RunProgress


def _lines(text: str) -> list[str]:
    """The lines without their elapsed time, a repeat (the same line a second later) once."""
    out: list[str] = []
    for line in text.splitlines():
        bare = re.sub(r"^\[\d+:\d\d:\d\d\] ", "", line)
        if not out or out[-1] != bare:
            out.append(bare)
    return out


def test_a_run_off_a_terminal_prints_one_line_per_phase() -> None:
    out = io.StringIO()
    rays: list[int] = []
    console = Console(file=out, force_terminal=False, width=200)
    with RunProgress("audit", ["a", "b"], every_s=3600, console=console, on_ray=lambda: rays.append(1)) as p:
        for event, n in [("total", 8), ("ray", 0), ("ray_up", 0), ("decoded", 1), ("engine_up", 1),
                         ("engine_up", 0), ("done", 4), ("committed", 4), ("done", 4)]:
            p(event, n)
    assert _lines(out.getvalue()) == [
        "audit: reading items and committed rows",
        "audit: starting Ray; 0/8 jobs",
        "audit: loading a, b (0/2 up); 0/8 jobs",
        "audit: loading a, b (0/2 up); 1 video(s) decoded ahead; 0/8 jobs",
        "audit: loading a (1/2 up); 1 video(s) decoded ahead; 0/8 jobs",
        "audit: answering; 0/8 jobs",
        "audit: done; 8/8 jobs",
    ]
    assert rays == [1]  # Ray's log folder is printed once, when Ray is up


def test_http_only_runs_decode_first_and_a_plan_with_nothing_pending_says_so() -> None:
    out = io.StringIO()
    with RunProgress("s", ["server"], every_s=3600, console=Console(file=out, width=200), uses_ray=False) as p:
        p("total", 3)
        p("decoded", 1)
    assert _lines(out.getvalue())[1:] == ["s: decoding; 0/3 jobs"]
    out = io.StringIO()
    with RunProgress("s", ["m"], every_s=3600, console=Console(file=out, width=200)) as p:
        p("total", 0)
    assert _lines(out.getvalue())[-1] == "s: nothing pending"


def test_plain_lines_come_at_the_interval_too() -> None:
    out = io.StringIO()
    with RunProgress("s", ["m"], every_s=0.05, console=Console(file=out, width=200)) as p:
        p("total", 5)
        p("ray", 0)
        for _ in range(100):  # wait (bounded) for a tick: a line without a phase change
            if len(out.getvalue().splitlines()) > 2:
                break
            time.sleep(0.05)
    assert len(out.getvalue().splitlines()) > 2
