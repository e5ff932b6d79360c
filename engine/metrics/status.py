"""Progress of a sweep from its results directory alone (works while it runs)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from engine.metrics.flows import transitions
from engine.metrics.grid import GROUP, matched
from engine.results.store import latest_rows, scan_results

__all__ = ["SweepStatus", "sweep_status"]


@dataclass
class SweepStatus:
    sweep_id: str
    done: int
    failed: int
    pending: int
    per_budget: pl.DataFrame
    jobs_per_min: float | None
    eta_min: float | None
    churn: pl.DataFrame
    """Live churn summary: per model and dataset, each consecutive transition of the grid over the items
    answered at every budget so far (rescue, harm, n, net, churn), plus `accuracy_to` at the later budget."""


def sweep_status(out_dir: str | Path) -> SweepStatus:
    """Done/failed/pending per (model, budget) against the manifest's expected job counts."""
    out = Path(out_dir)
    manifest_path = out / "manifest.json"
    if not manifest_path.exists():
        raise FileNotFoundError(f"{out}: no manifest.json (not a framesweep results directory?)")
    manifest = json.loads(manifest_path.read_text())
    expected = pl.DataFrame(
        [{"model_id": m, "budget_id": b, "expected": n} for m, per in manifest.get("expected_jobs", {}).items()
         for b, n in per.items()],
        schema={"model_id": pl.String, "budget_id": pl.String, "expected": pl.Int64},
    )
    latest = latest_rows(scan_results(out))
    counts = (
        latest.group_by(["model_id", "budget_id"])
        .agg((pl.col("status") == "ok").sum().alias("done"), (pl.col("status") != "ok").sum().alias("failed"))
        .collect()
    )
    per = (
        expected.join(counts, on=["model_id", "budget_id"], how="full", coalesce=True)
        .with_columns(pl.col("expected", "done", "failed").fill_null(0).cast(pl.Int64))
        .with_columns((pl.col("expected") - pl.col("done") - pl.col("failed")).clip(0).alias("pending"))
        .sort(["model_id", "budget_id"])
    )
    done, failed, pending = (int(per[c].sum()) for c in ("done", "failed", "pending"))
    times = latest.filter(pl.col("status") == "ok").select(
        pl.col("finished_at").min().alias("t0"), pl.col("finished_at").max().alias("t1"), pl.len().alias("n")
    ).collect()
    rate = eta = None
    if times["n"][0] > 1 and times["t0"][0] is not None:
        span = (times["t1"][0] - times["t0"][0]).total_seconds() / 60
        if span > 0:
            rate = times["n"][0] / span
            eta = pending / rate if pending else 0.0
    return SweepStatus(manifest.get("sweep_id", out.name), done, failed, pending, per, rate, eta,
                       live_churn(latest))


def live_churn(latest: pl.LazyFrame) -> pl.DataFrame:
    """Churn between consecutive budgets on the items complete so far (see `engine.metrics.flows`)."""
    m = matched(latest)
    acc = m.group_by([*GROUP, "budget_id"]).agg(pl.col("c").mean().alias("accuracy_to"))
    return (
        transitions(m)
        .join(acc.rename({"budget_id": "to"}), on=[*GROUP, "to"], how="left")
        .collect()
    )
