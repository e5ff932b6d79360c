"""The metrics documents of a fixed set of sweeps stay byte-identical to main's (`helpers.golden_metrics`).

Every metric family is in them (chains, confusion, overwrite, regressions, generation, the cascade, the letter
prior, low-level statistics, robustness, iso-compute, checkpoint flows and the checkpoint study, each benchmark's
official scores); ``tests/metrics/golden/`` holds the documents as main wrote them. A field added on purpose is
listed in `ADDED` (where it sits) and is the only difference allowed: it is taken out of today's document before
the bytes are compared.

What people read of the same sweeps is checked the same way (`helpers.golden_text`): each command's terminal
output and its report sections, as main printed them, so the typed table cells the metrics now give are formatted
by the report and the CLI exactly as the strings the metrics formatted before.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

import pytest
from helpers.golden_metrics import DOCUMENTS, GOLDEN, documents
from helpers.golden_text import GOLDEN_TEXT, texts

from engine.runtime.output import json_text

ADDED: tuple[tuple[str, ...], ...] = ()
"""Fields added since the golden documents were written, each as its key path (``*``: every element of a list)."""


def _drop(doc: Any, path: tuple[str, ...]) -> bool:
    """Take the field at `path` out of `doc`; whether one was there."""
    head, rest = path[0], path[1:]
    if head == "*":
        hits = [_drop(v, rest) for v in doc] if isinstance(doc, list) else []  # every element, no short cut
        return any(hits)
    if not isinstance(doc, dict) or head not in doc:
        return False
    if not rest:
        del doc[head]
        return True
    return _drop(doc[head], rest)


def _without_added(text: str) -> str:
    doc = json.loads(text)
    dropped = [_drop(doc, p) for p in ADDED]
    return json_text(doc) if any(dropped) else text


@pytest.fixture(scope="module")
def today(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return documents(tmp_path_factory.mktemp("golden"))


def _diff(want: str, got: str) -> str:
    """The first 60 lines of a unified diff from main's text to today's."""
    return "\n".join(list(difflib.unified_diff(want.splitlines(), got.splitlines(), "main", "today",
                                               lineterm=""))[:60])


@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_the_metrics_document_is_byte_identical_to_mains(name: str, today: dict[str, str]) -> None:
    want = (GOLDEN / f"{name}.json").read_text(encoding="utf-8")
    got = _without_added(today[name])
    assert got == want, f"{name}.json differs from main's (tests/metrics/golden):\n{_diff(want, got)}"


def test_every_golden_document_is_checked() -> None:
    """A document left in the folder but no longer built would pass unseen."""
    assert sorted(p.stem for p in Path(GOLDEN).glob("*.json")) == sorted(DOCUMENTS)
    assert sorted(p.stem for p in GOLDEN_TEXT.glob("*.txt")) == sorted(f"{n}.{k}" for n in DOCUMENTS
                                                                       for k in ("report", "terminal"))


@pytest.fixture(scope="module")
def text_today(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return texts(tmp_path_factory.mktemp("golden-text"))


@pytest.mark.parametrize("name", [f"{n}.{k}" for n in DOCUMENTS for k in ("terminal", "report")])
def test_what_people_read_is_as_main_printed_it(name: str, text_today: dict[str, str]) -> None:
    want = (GOLDEN_TEXT / f"{name}.txt").read_text(encoding="utf-8")
    got = text_today[name]
    assert got == want, f"{name} differs from main's (tests/metrics/golden/text):\n{_diff(want, got)}"
