"""CI cannot pass by skipping: a test marked ``needs(part)`` that skips fails where FRAMESWEEP_CI_REQUIRE names
the part (`.ci/run` installs Chromium, iproute2 and lmms-eval and names all three); every run ends with the suite's
skip count and reasons. A pytest plugin, registered by `tests/conftest.py` (and by name, ``-p helpers.ci_parts``)."""

from __future__ import annotations

import os
from collections import Counter

import pytest

REQUIRE_VAR = "FRAMESWEEP_CI_REQUIRE"
PARTS = {
    "chromium": "headless Chromium (renders the HTML report)",
    "iproute2": "the `ip` tool with network namespaces (builds the two-node Ray cluster)",
    "lmms": "lmms-eval, installed by `FRAMESWEEP_EXTRA=lmms bash tools/setup.sh` (the lmms_eval dataset adapter)",
}


def required_parts() -> set[str]:
    """The parts FRAMESWEEP_CI_REQUIRE says are installed (comma-separated); an unknown name is a usage error."""
    named = {p.strip() for p in os.environ.get(REQUIRE_VAR, "").split(",") if p.strip()}
    if unknown := sorted(named - PARTS.keys()):
        raise pytest.UsageError(f"{REQUIRE_VAR} names unknown parts {unknown}; known: {sorted(PARTS)}")
    return named


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"needs(part): needs an installed part ({', '.join(sorted(PARTS))}); "
                                       f"a skip fails where {REQUIRE_VAR} names the part (CI)")
    required_parts()


def _reason(report: pytest.TestReport) -> str:
    """A skip's reason, without pytest's 'Skipped: ' prefix."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text.removeprefix("Skipped: ")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    """A skip of a test that needs a part CI says is installed becomes a failure naming the part and the reason."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    parts = {p for m in item.iter_markers("needs") for p in m.args}
    if unknown := sorted(parts - PARTS.keys()):
        report.outcome, report.longrepr = "failed", f"needs() names unknown parts {unknown}; known: {sorted(PARTS)}"
        return
    if missing := sorted(parts & required_parts()):
        report.outcome = "failed"
        report.longrepr = (f"skipped ({_reason(report)}), but {REQUIRE_VAR} says {', '.join(missing)} is installed "
                           "here: a test that needs it must run")


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """The run's skip count and each reason with its count, most frequent first."""
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if not hasattr(r, "wasxfail")]
    terminalreporter.write_sep("-", f"{len(skipped)} skipped")
    for reason, n in Counter(_reason(r) for r in skipped).most_common():
        terminalreporter.write_line(f"{n:5d}  {reason}")
