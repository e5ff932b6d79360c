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


def test_engines_up_never_goes_back_to_its_first_phase() -> None:
    out = io.StringIO()
    with RunProgress("engines up", ["a", "b"], every_s=3600, console=Console(file=out, width=200),
                     first="starting engines") as p:
        for event, n in [("ray", 0), ("ray_up", 0), ("engine_up", 0), ("engine_up", 1)]:
            p(event, n)
    assert _lines(out.getvalue()) == [
        "engines up: starting engines",
        "engines up: starting Ray",
        "engines up: loading a, b (0/2 up)",
        "engines up: loading b (1/2 up)",
        "engines up: engines ready (2/2 up)",
    ]


def test_plain_lines_carry_the_time_left_at_the_pace_since_the_first_answers() -> None:
    """A clock the test sets, so the pace is exact (no sleeps, no wall-clock asserts)."""
    now = [0.0]
    out = io.StringIO()
    with RunProgress("s", ["m"], every_s=3600, console=Console(file=out, width=200), uses_ray=False,
                     clock=lambda: now[0]) as p:
        p("total", 20)
        now[0] = 300.0  # start-up: not part of the pace
        p("done", 4)
        assert p.line() == "[0:05:00] s: answering; 4/20 jobs"  # one batch: no pace yet
        now[0] = 320.0
        p("done", 4)  # 4 jobs in 20 s: 12 left take 60 s
        assert p.line() == "[0:05:20] s: answering; 8/20 jobs; ~1:00 left"
        now[0] = 330.0
        assert p.line() == "[0:05:30] s: answering; 8/20 jobs; ~1:30 left"  # 4 jobs in 30 s now
        p("done", 12)
        assert p.line() == "[0:05:30] s: done; 20/20 jobs"
    slow = RunProgress("s", ["m"], clock=lambda: now[0])
    slow("total", 10_000)
    slow("done", 1)
    now[0] += 10
    slow("done", 1)
    assert slow.remaining() == "~27:46:20 left"  # 9,998 jobs at 10 s each: hours shown


def test_the_live_bar_shows_no_job_count_before_the_total() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120, color_system=None)
    with RunProgress("s", ["m"], every_s=3600, console=console) as p:
        p.set_stage("building the tiny qwen2_5_vl checkpoint")
        assert p._live is not None
        p._live.refresh()
        p.set_stage(None)
        p("total", 5)
        p._live.refresh()
    text = out.getvalue()
    assert "building the tiny qwen2_5_vl checkpoint" in text and "0/?" not in text and "0/5" in text
