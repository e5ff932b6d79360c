"""What a run records in its results directory's manifest (`engine.results.manifest`) before its first job.

- the spec as run, the framesweep version and the datasets;
- the expected jobs per (dataset, model, budget) that `status` counts: a grid run replaces what earlier grid
  runs expected (a budget, model or dataset dropped from the spec is no longer counted), and keeps what an
  adaptive policy added (the predictor's ``pred-*`` budget); an adaptive run adds its own;
- the answer fingerprints of every (model, dataset, budget) the run plans, and each fingerprint's fields
  (kept for every fingerprint ever recorded, so a later refusal can name what changed);
- one ``history`` entry per run: start time, framesweep version, policy, spec and job counts.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from engine import __version__ as framesweep_version
from engine.config import BudgetPoint, SweepSpec
from engine.sweep.resume import Cell

__all__ = ["ExpectedJobs", "manifest_doc"]

ExpectedJobs = dict[str, dict[str, dict[str, int]]]
"""dataset -> model -> budget -> jobs."""


def _grid_budget_ids(spec_doc: Any) -> set[str]:
    """The budget ids of a recorded spec (what an earlier grid run expected)."""
    budgets = spec_doc.get("budgets", []) if isinstance(spec_doc, dict) else []
    ids = set()
    for b in budgets if isinstance(budgets, list) else []:
        try:
            ids.add(BudgetPoint.model_validate(b).budget_id)
        except ValidationError:
            continue
    return ids


def _expected(old: dict[str, Any], now: ExpectedJobs, grid: bool) -> ExpectedJobs:
    by_dataset: ExpectedJobs = {ds: {m: dict(per) for m, per in models.items()}
                                for ds, models in old.get("expected_by_dataset", {}).items()}
    if grid:  # what the last grid run expected goes; an adaptive policy's budgets stay
        gone = _grid_budget_ids(old.get("spec"))
        for models in by_dataset.values():
            for per in models.values():
                for bid in gone & set(per):
                    del per[bid]
    for ds, models in now.items():
        for m, per in models.items():
            by_dataset.setdefault(ds, {}).setdefault(m, {}).update(per)
    return {ds: kept for ds, models in by_dataset.items()
            if (kept := {m: per for m, per in models.items() if per})}


def _per_model(by_dataset: ExpectedJobs) -> dict[str, dict[str, int]]:
    """Expected jobs summed over datasets (the per-model view)."""
    out: dict[str, dict[str, int]] = {}
    for per_model in by_dataset.values():
        for mid, per in per_model.items():
            for bid, n in per.items():
                out.setdefault(mid, {})[bid] = out.get(mid, {}).get(bid, 0) + n
    return out


def _fingerprints(old: dict[str, Any], cells: dict[Cell, set[str]],
                  fields: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    by_cell = {m: {d: dict(per) for d, per in ds.items()} for m, ds in old.get("answer_fingerprints", {}).items()}
    for (m, d, b), fps in cells.items():
        by_cell.setdefault(m, {}).setdefault(d, {})[b] = sorted(fps)
    used = {fp for fps in cells.values() for fp in fps}
    return by_cell, {**old.get("answer_fields", {}), **{fp: fields[fp] for fp in sorted(used)}}


def _history(old: dict[str, Any]) -> list[dict[str, Any]]:
    if "history" in old:
        return list(old["history"])
    if old.get("spec") is not None:  # a manifest from before the history: its last run, as far as it tells
        return [{"started_at": None, "updated_at": old.get("updated_at"),
                 "framesweep_version": old.get("framesweep_version"), "spec": old["spec"]}]
    return []


def manifest_doc(old: dict[str, Any], spec: SweepSpec, *, policy: str, grid: bool, datasets: list[str],
                 expected: ExpectedJobs, cells: dict[Cell, set[str]], fields: dict[str, dict[str, Any]],
                 pending: int, committed: int, started_at: datetime | None = None) -> dict[str, Any]:
    """The manifest after this run's plan, from the one before (`old`, {} for a new directory)."""
    by_dataset = _expected(old, expected, grid)
    by_cell, all_fields = _fingerprints(old, cells, fields)
    spec_doc = spec.model_dump(mode="json")
    run = {"started_at": (started_at or datetime.now(UTC)).isoformat(), "framesweep_version": framesweep_version,
           "policy": policy, "spec": spec_doc, "jobs_pending": pending, "jobs_committed": committed}
    return {
        **{k: v for k, v in old.items() if k not in ("created_at", "updated_at")},
        "sweep_id": spec.sweep_id,
        "framesweep_version": framesweep_version,
        "dataset": ", ".join(datasets),
        "datasets": sorted(set(old.get("datasets", [])) | set(datasets)),
        "spec": spec_doc,
        "expected_jobs": _per_model(by_dataset),
        "expected_by_dataset": by_dataset,
        "answer_fingerprints": by_cell,
        "answer_fields": all_fields,
        "history": [*_history(old), run],
    }
