"""CI cannot pass by skipping (`.ci/run`, `tests/helpers/ci_parts.py`): lint and types are checked before the
suite, a needed part's skip fails where CI says the part is installed, and every run prints its skips."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
NEEDS_CHROMIUM = """
import pytest

@pytest.mark.needs("chromium")
def test_renders():
    pytest.skip("no chromium binary on PATH")

def test_plain():
    pytest.skip("not on this platform")
"""
NEEDS_LMMS = """
import pytest
from helpers.lmms import NEEDS_LMMS, NO_LMMS

pytestmark = [m for m in NEEDS_LMMS if m.name != "skipif"]  # the helper's marks, skipping as where it is absent

def test_bridge():
    pytest.skip(NO_LMMS)
"""


def _run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, require: str,
         test: str = NEEDS_CHROMIUM) -> pytest.RunResult:
    monkeypatch.setenv("FRAMESWEEP_CI_REQUIRE", require)
    pytester.makepyfile(test_parts=test)
    return pytester.runpytest("-p", "helpers.ci_parts", "-p", "no:xdist", "-p", "no:cacheprovider")


def test_a_needed_part_that_skips_fails_where_ci_says_it_is_installed(pytester: pytest.Pytester,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    result = _run(pytester, monkeypatch, "chromium,iproute2")
    result.assert_outcomes(failed=1, skipped=1)  # the plain skip stays a skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*skipped (no chromium binary on PATH), but FRAMESWEEP_CI_REQUIRE says chromium is "
                                 "installed here: a test that needs it must run*"])


def test_an_lmms_eval_test_that_skips_fails_where_ci_says_lmms_eval_is_installed(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test with `helpers.lmms`'s marks, skipping as it does without lmms-eval: a failure in CI, which names lmms."""
    result = _run(pytester, monkeypatch, "chromium,iproute2,lmms", NEEDS_LMMS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*skipped (lmms-eval is not installed (FRAMESWEEP_EXTRA=lmms bash tools/setup.sh "
                                 "installs it)), but FRAMESWEEP_CI_REQUIRE says lmms is installed here*"])
    assert _run(pytester, monkeypatch, "chromium,iproute2", NEEDS_LMMS).ret == pytest.ExitCode.OK


def test_without_the_ci_variable_the_skip_stays_a_skip_and_the_summary_lists_the_reasons(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _run(pytester, monkeypatch, "")
    result.assert_outcomes(skipped=2)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*- 2 skipped -*", "    1  no chromium binary on PATH", "    1  not on this platform"])


def test_an_unknown_part_in_the_ci_variable_is_a_usage_error(pytester: pytest.Pytester,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    result = _run(pytester, monkeypatch, "chromium,chrome")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "FRAMESWEEP_CI_REQUIRE names unknown parts ['chrome']; known: ['chromium', 'iproute2', 'lmms']" in result.stderr.str()


def _needs(node: ast.FunctionDef) -> set[str]:
    return {ast.literal_eval(d.args[0]) for d in node.decorator_list
            if isinstance(d, ast.Call) and ast.unparse(d.func) == "pytest.mark.needs"}


def test_the_tests_that_need_an_installed_part_are_marked() -> None:
    """Every test that looks for Chromium, and the two-node cluster's module, carry `needs`: without it their skip
    would pass CI."""
    tree = ast.parse((ROOT / "tests/report/test_report.py").read_text())
    browsing = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name.startswith("test_")
                and any(isinstance(c, ast.Call) and ast.unparse(c.func) == "_chromium" for c in ast.walk(f))]
    assert len(browsing) == 2 and all(_needs(f) == {"chromium"} for f in browsing), [f.name for f in browsing]
    assert 'pytest.mark.needs("iproute2")' in (ROOT / "tests/e2e/test_two_nodes.py").read_text()


def _commands(script: str) -> list[str]:
    return [line.strip() for line in script.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_ci_requires_every_part_and_checks_lint_and_types_before_the_quickstarts_test_command() -> None:
    """CI installs lmms-eval (the `lmms` extra of tools/setup.sh) before lint and the suite, and requires the three
    parts, so the lmms-eval bridge's tests run there rather than skip."""
    lines = _commands((ROOT / ".ci/run").read_text())
    suite = lines.index("FRAMESWEEP_EXTRA=lmms bash tools/setup.sh && .venv/bin/python -m pytest -n 2")  # README's
    setup = lines.index("FRAMESWEEP_EXTRA=lmms bash tools/setup.sh")
    ruff = next(i for i, c in enumerate(lines) if re.match(r"\.venv/bin/ruff check engine tests benchmarks tools$", c))
    mypy = next(i for i, c in enumerate(lines) if re.match(r"\.venv/bin/mypy engine$", c))
    require = next(i for i, c in enumerate(lines) if c == "export FRAMESWEEP_CI_REQUIRE=chromium,iproute2,lmms")
    assert setup < min(ruff, mypy) and max(ruff, mypy, require) < suite
    # the test extra (what tools/setup.sh installs) pins both checkers, so CI's rules and stubs do not drift
    test_extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    assert {r.split("==")[0] for r in test_extra if "==" in r} >= {"ruff", "mypy"}


PLUGIN_MARKERS = {"anyio", "filterwarnings", "parametrize", "pytester_example_path", "skip", "skipif", "timeout",
                  "tryfirst", "trylast", "usefixtures", "xdist_group", "xfail"}  # pytest's own and its plugins'


def test_every_marker_the_project_registers_is_used_by_a_test(pytestconfig: pytest.Config) -> None:
    """No vestigial marker (a `gpu` no test carried); an unregistered one fails collection (--strict-markers)."""
    registered = {re.split(r"[(:]", line, maxsplit=1)[0].strip() for line in pytestconfig.getini("markers")}
    used = {m for p in (ROOT / "tests").rglob("*.py") for m in re.findall(r"pytest\.mark\.(\w+)", p.read_text())}
    assert registered - PLUGIN_MARKERS == {"engine", "needs"}
    assert registered - PLUGIN_MARKERS <= used
