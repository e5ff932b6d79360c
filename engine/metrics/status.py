"""Progress of a sweep from its results directory alone (works while it runs)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from engine.metrics.flows import transitions
from engine.metrics.grid import BASE_GROUP, GROUP, matched
from engine.results.manifest import read_manifest
from engine.results.store import naming_corrupt_shards, own_rows

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
    """Live churn summary: per model, dataset and protocol chain, each consecutive transition of the chain over
    the items answered at every budget so far (rescue, harm, n, net, churn), plus `accuracy_to` at the later budget."""
    foreign_shards: list[str] = field(default_factory=list)
    """Shards holding rows of another sweep: not counted."""
    failed_permanent: int = 0
    """Of `failed`, the jobs whose media or item is at fault (`error_kind` permanent): a rerun fails them the same
    way until the media are fixed or the items dropped. The rest are transient (a rerun retries them)."""
    permanent_errors: pl.DataFrame = field(default_factory=pl.DataFrame)
    """The permanent failures by (dataset, video_id, error): `jobs` each, most jobs first."""


_CELL = ["model_id", "dataset", "budget_id"]
# an error row whose media or item is at fault (rows from before `error_kind` count as transient: retried)
_PERMANENT = (pl.col("status") != "ok") & (pl.col("error_kind") == "permanent").fill_null(False)


def _expected(manifest: dict) -> pl.DataFrame:
    """Expected jobs per (model, dataset, budget): the manifest's per-dataset counts, or (a manifest of
    one dataset written before them) its per-model counts under its one dataset."""
    if "expected_by_dataset" in manifest:
        cells = [{"model_id": m, "dataset": ds, "budget_id": b, "expected": n, "order": i}
                 for ds, per_model in manifest["expected_by_dataset"].items()
                 for m, per in per_model.items() for i, (b, n) in enumerate(per.items())]
    else:
        cells = [{"model_id": m, "dataset": manifest.get("dataset"), "budget_id": b, "expected": n, "order": i}
                 for m, per in manifest.get("expected_jobs", {}).items() for i, (b, n) in enumerate(per.items())]
    # `order`: the budget's place in the manifest (the spec's cost order), for listing
    return pl.DataFrame(cells, schema={"model_id": pl.String, "dataset": pl.String, "budget_id": pl.String,
                                       "expected": pl.Int64, "order": pl.Int64})


def sweep_status(out_dir: str | Path) -> SweepStatus:
    """Done/failed/pending per (model, dataset, budget) against the manifest's expected job counts."""
    out = Path(out_dir)
    manifest = read_manifest(out, required=True)  # ManifestError (exit 2) when missing or damaged
    sweep_id = manifest.get("sweep_id") or out.name
    with naming_corrupt_shards(out):  # a shard with corrupt data pages fails in a collect: named, not a raw error
        return _status(out, manifest, sweep_id)


def _status(out: Path, manifest: dict, sweep_id: str) -> SweepStatus:
    expected = _expected(manifest)
    latest, shards = own_rows(out)  # rows of another sweep (a shard copied in) count for nothing here
    latest = latest.collect().lazy()  # read once: every count below reads memory, not every shard again
    foreign = [str(p) for p in shards]
    legacy = "expected_by_dataset" not in manifest and expected.height > 0
    if legacy:  # one dataset, counted per (model, budget); its name from the manifest or the rows
        names = latest.select(pl.col("dataset").unique().sort().str.join(", ")).collect().item()
        expected = expected.with_columns(pl.lit(manifest.get("dataset") or names or None, pl.String).alias("dataset"))
    counted = latest.with_columns(pl.lit(expected["dataset"][0], pl.String).alias("dataset")) if legacy else latest
    counts = (
        counted.group_by(_CELL)
        .agg((pl.col("status") == "ok").sum().alias("done"), (pl.col("status") != "ok").sum().alias("failed"),
             _PERMANENT.sum().alias("failed_permanent"))
        .collect()
    )
    per = (
        # the spec's (model, budget) pairs decide what is counted (an import has none: then every row counts)
        expected.join(counts, on=_CELL, how="left" if expected.height else "full", coalesce=True)
        .with_columns(pl.col("expected", "done", "failed", "failed_permanent").fill_null(0).cast(pl.Int64))
        .with_columns((pl.col("expected") - pl.col("done") - pl.col("failed")).clip(0).alias("pending"))
        .sort(["model_id", "dataset", "order", "budget_id"], nulls_last=True)  # budgets in the spec's cost order
        .drop("order")
    )
    done, failed, pending = (int(per[c].sum()) for c in ("done", "failed", "pending"))
    if expected.height:  # only what the spec expects: a budget dropped from it neither counts nor blocks the churn
        counted = counted.join(expected.lazy().select(_CELL), on=_CELL, how="semi")
    times = counted.filter(pl.col("status") == "ok").select(
        pl.col("finished_at").min().alias("t0"), pl.col("finished_at").max().alias("t1"), pl.len().alias("n")
    ).collect()
    rate = eta = None
    if times["n"][0] > 1 and times["t0"][0] is not None:
        span = (times["t1"][0] - times["t0"][0]).total_seconds() / 60
        if span > 0:
            rate = times["n"][0] / span
            eta = pending / rate if pending else 0.0
    return SweepStatus(sweep_id, done, failed, pending, per, rate, eta, live_churn(counted), foreign,
                       int(per["failed_permanent"].sum()), _permanent_errors(counted))


def _permanent_errors(latest: pl.LazyFrame) -> pl.DataFrame:
    """Permanent failures by (dataset, video_id, error), with their job count, most jobs first."""
    return (
        latest.filter(_PERMANENT).group_by(["dataset", "video_id", "error"]).agg(pl.len().alias("jobs"))
        .sort(["jobs", "dataset", "video_id"], descending=[True, False, False]).collect()
    )


def live_churn(latest: pl.LazyFrame) -> pl.DataFrame:
    """Churn between consecutive budgets on the items complete so far (see `engine.metrics.flows`)."""
    m = matched(latest)
    acc = m.group_by([*GROUP, "budget_id"]).agg(pl.col("c").mean().alias("accuracy_to"))
    return (
        transitions(m)  # in chain order; the join keeps it, and chains are listed with `default` first
        .join(acc.rename({"budget_id": "to"}), on=[*GROUP, "to"], how="left", maintain_order="left")
        .with_row_index("_order")
        .sort([*BASE_GROUP, pl.col("protocol_id") != "default", "protocol_id", "_order"])
        .drop("_order")
        .collect()
    )
