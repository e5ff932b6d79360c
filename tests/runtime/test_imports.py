"""`heavy_imports()`: the collector paused inside, what was made there frozen, the collector's state restored."""

from __future__ import annotations

import gc

import pytest

from engine.runtime.imports import heavy_imports


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the cyclic collector frees it


def _collections() -> list[int]:
    return [g["collections"] for g in gc.get_stats()]


def test_no_collection_inside_and_what_was_made_is_frozen() -> None:
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    with heavy_imports():
        before = _collections()
        assert not gc.isenabled()
        made = [_Node() for _ in range(10_000)]  # 14 times the youngest generation's threshold (700)
        assert _collections() == before
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen + len(made)  # every node is in the permanent generation
    made.clear()  # frozen: kept (a few hundred kB), as an import's objects are


def test_the_collector_stays_off_where_it_was_off_and_an_error_still_restores_it() -> None:
    gc.disable()
    try:
        with heavy_imports():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(KeyError), heavy_imports():
        raise KeyError("an import failed")
    assert gc.isenabled()
