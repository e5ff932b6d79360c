"""Hand-built result frames for the metric tests.

A trajectory string gives an item's outcome at each budget, cheapest first:
``1`` right, ``0`` wrong, ``.`` no row, ``e`` an error row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl
from polars.testing import assert_frame_equal

from engine.results.schema import ResultRow, rows_to_frame

BUDGETS = {"text": 0, "f4": 4, "f8": 8, "f16": 16}


def indices(frames: int, step: int = 1) -> list[int]:
    return list(range(0, frames * step, step))


def row(model: str, dataset: str, item: str, budget: str, frames: int, mark: str, **extra: object) -> ResultRow:
    """One result row; `mark` is "1", "0" or "e"."""
    base: dict = {"sweep_id": "t", "model_id": model, "model_family": "fam", "dataset": dataset,
                  "dataset_version": "1", "item_id": item, "video_id": f"v-{item}", "task_kind": "mcq",
                  "budget_id": budget, "frames": frames, "policy": "uniform", "seed": 0, "frames_sent": frames,
                  "frame_indices": indices(frames)}
    if mark == "e":
        base.update(status="error", error_type="EngineError", error="boom")
    else:
        ok = mark == "1"
        base.update(correct=ok, score=float(ok), pred="A" if ok else "B", answer="A")
    base.update(extra)
    return ResultRow(**base)


def frame(trajectories: Mapping[str, str], *, model: str = "m", dataset: str = "d",
          budgets: Mapping[str, int] = BUDGETS, per_item: Mapping[str, Mapping[str, object]] | None = None,
          per_cell: Mapping[tuple[str, str], Mapping[str, object]] | None = None) -> list[ResultRow]:
    """Rows for one (model, dataset) from trajectory strings aligned with `budgets`."""
    out = []
    names = list(budgets)
    for item, marks in trajectories.items():
        assert len(marks) == len(names), (item, marks)
        for b, mark in zip(names, marks, strict=True):
            if mark == ".":
                continue
            extra = {**(per_item or {}).get(item, {}), **(per_cell or {}).get((item, b), {})}
            out.append(row(model, dataset, item, b, budgets[b], mark, **extra))
    return out


def lazy(rows: Sequence[ResultRow]) -> pl.LazyFrame:
    return rows_to_frame(list(rows)).lazy()


def collect_both(lf: pl.LazyFrame) -> pl.DataFrame:
    """Collect with the streaming and the in-memory engine; both must agree exactly."""
    streaming = lf.collect(engine="streaming")
    memory = lf.collect(engine="in-memory")
    assert_frame_equal(streaming, memory)
    return memory


# --- the canonical hand-built sweep --------------------------------------------------------------
# model "m", dataset "d", grid text < f4 < f8 < f16. Items d (no f8 row) and f (error at f4) are
# excluded; a, b, c, e are matched (n = 4). f16-random is an alternate sampling policy at the top.
SWEEP_A = {"a": "0110", "b": "1100", "c": "1011", "d": "11.1", "e": "0000", "f": "1e11"}
ALT_A = {"a": "1", "c": "0", "e": "1"}  # b has no alternate result


def sweep_a(with_alt: bool = False, categories: bool = False) -> list[ResultRow]:
    per_item = {k: {"task_type": "x" if k in "abd" else "y"} for k in SWEEP_A} if categories else None
    rows = frame(SWEEP_A, per_item=per_item)
    if with_alt:
        rows += [row("m", "d", item, "f16-random", 16, mark, policy="random", seed=3) for item, mark in ALT_A.items()]
    return rows


def open_rows(model: str = "m", dataset: str = "open") -> list[ResultRow]:
    """Open-task rows: scores at (text, f4, f8) p .25 .5 .5, q .5 .5 1, r 0 .25 0."""
    scores = {"p": (0.25, 0.5, 0.5), "q": (0.5, 0.5, 1.0), "r": (0.0, 0.25, 0.0)}
    budgets = {"text": 0, "f4": 4, "f8": 8}
    return [row(model, dataset, i, b, f, "1", task_kind="open", correct=None, score=s)
            for i, v in scores.items() for (b, f), s in zip(budgets.items(), v, strict=True)]


def write_sweep(out_dir, rows: Sequence[ResultRow], manifest: Mapping[str, object] | None = None) -> None:
    """Commit rows to a results directory as two shards (as a running sweep would), then its manifest (default:
    the sweep id alone)."""
    from engine.results.store import ResultStore

    half = len(rows) // 2
    with ResultStore(out_dir) as store:
        store.add(rows[:half])
        store.commit()
        store.add(rows[half:])
        store.commit()
        store.write_manifest(dict(manifest or {"sweep_id": "t"}))


def audit_rows() -> list[ResultRow]:
    """Sweep A (with alternate policy and categories), an open dataset, a second model and a text-only group."""
    return [*sweep_a(with_alt=True, categories=True), *open_rows(),
            *frame({"a": "11", "b": "01", "c": "10", "e": "00"}, model="m2", budgets={"text": 0, "f4": 4}),
            *frame({"x": "1", "y": "0"}, dataset="t", budgets={"text": 0})]


CASCADE_TAUS = (0.0, 0.5, 0.7, 1.0)
"""Cascade thresholds for `cascade_rows` (some stop at f2, some go on)."""


def cascade_rows() -> list[ResultRow]:
    """A confident cascade group: model c on dataset d2, (right, confidence) at f2, f4, f8."""
    cells = {"u": [("1", 0.9), ("1", 0.5), ("1", 0.95)], "v": [("0", 0.3), ("1", 0.8), ("1", 0.9)],
             "w": [("0", 0.2), ("0", 0.4), ("1", 0.6)], "x": [("1", 0.6), ("0", 0.7), ("0", 0.99)]}
    stages = {"f2": (2, [0, 8]), "f4": (4, [0, 4, 8, 12]), "f8": (8, list(range(0, 16, 2)))}
    return [row("c", "d2", i, b, f, mark, confidence=conf, frame_indices=idx)
            for i, cs in cells.items() for (b, (f, idx)), (mark, conf) in zip(stages.items(), cs, strict=True)]
