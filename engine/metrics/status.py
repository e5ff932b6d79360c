"""Progress of a sweep from its results directory alone (works while it runs).

- The driver: `OUT/.lock` names the driver that took the directory (`pid N on host`); it counts as
  running while that process lives (checked on this host only). A directory whose lock is held but
  whose plan is not recorded yet is a run that is starting (`sweep_starting`), not an error.
- Rate and ETA come from the current run only (the manifest's last `history` entry): its rows over the
  time since it started (up to now while its driver runs, else up to its last row), so earlier runs,
  imported rows (all stamped at the import) and the engines' start-up before the first row never make a
  rate of thousands of jobs a minute. No run recorded (an import): no rate.
- Budgets are listed in cost order: the spec's (the manifest's), else the rows' frames and pixels.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from engine.metrics.registry import live_tables
from engine.metrics.summary import SNAPSHOT_COLUMNS
from engine.results.directory import ResultsDir
from engine.results.errors import ResultsDirError
from engine.runtime.processes import pid_alive

__all__ = ["SweepStatus", "driver_running", "sweep_starting", "sweep_status"]


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
    driver: str | None = None
    """The running driver that holds the directory (`pid N on host`), or None when none runs."""
    run_started_at: datetime | None = None
    """When the current (or last) run started (the manifest's last history entry); None for an import."""
    run_rows: int = 0
    """Rows the current (or last) run has committed so far."""
    live: dict[str, pl.DataFrame] = field(default_factory=dict)
    """Every registered metric's live table over the items answered at every budget so far (`Metric.live`), by
    name; `churn` is the transitions metric's."""


def _flocked(path: Path) -> bool | None:
    """Whether a process holds a `flock` on `path`, from the kernel's table (`/proc/locks`: local locks only);
    None where that table cannot be read. Never takes the lock (a driver starting that moment would be refused)."""
    try:
        st = path.stat()
        table = Path("/proc/locks").read_text()
    except OSError:
        return None
    me = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    return any(len(f := line.split()) > 5 and f[1] == "FLOCK" and f[5] == me for line in table.splitlines())


def driver_running(out_dir: str | Path) -> str | None:
    """The driver holding `OUT/.lock` (`pid N on host`, as it wrote it), else None.

    Held: a `flock` on the file in the kernel's table; where it cannot be read (or the driver runs on another
    host), the process named in the file running (on this host), or the file naming another host."""
    path = Path(out_dir) / ".lock"
    try:
        holder = path.read_text(errors="replace").strip()
    except OSError:
        return None
    parts = holder.split()
    if len(parts) < 4 or parts[0] != "pid" or not parts[1].isdigit():
        return None
    here = parts[3] == os.uname().nodename
    held = _flocked(path) if here else None
    if held is False or (held is None and here and not pid_alive(int(parts[1]))):
        return None
    return holder


def sweep_starting(out_dir: str | Path | ResultsDir) -> str | None:
    """A run that holds the directory but has not recorded its plan yet (items loading, the committed rows
    read): its driver (`pid N on host`); None when no driver runs or the running one has recorded its plan.

    A driver signs `OUT/.lock` when it takes it, before it records its run in the manifest's history: a lock
    signed after the last recorded run started is a run whose plan is not recorded yet (a rerun too)."""
    out = out_dir.path if isinstance(out_dir, ResultsDir) else Path(out_dir)
    if (driver := driver_running(out)) is None:
        return None
    try:
        manifest = ResultsDir.of(out_dir).manifest
        signed = datetime.fromtimestamp((out / ".lock").stat().st_mtime, UTC)
    except (ResultsDirError, OSError):
        return None  # `sweep_status` names a directory that cannot be read
    started = _run_started(manifest)
    return driver if not manifest or (started is not None and signed > started) else None


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


def sweep_status(out_dir: str | Path | ResultsDir) -> SweepStatus:
    """Done/failed/pending per (model, dataset, budget) against the manifest's expected job counts.

    Raises:
        ResultsDirError: no such directory, no manifest (or a damaged one), an unreadable shard: named.
    """
    results = ResultsDir.of(out_dir)
    results.need_manifest()  # ManifestError (exit 2) when missing
    sweep_id = results.manifest.get("sweep_id") or results.path.name
    with results.reading():  # a shard with corrupt data pages fails in a collect: named, not a raw error
        return _status(results, sweep_id)


def _status(results: ResultsDir, sweep_id: str) -> SweepStatus:
    out, manifest = results.path, results.manifest
    expected = _expected(manifest)
    latest = _read_once(results.rows())  # rows of another sweep (a shard copied in) count for nothing here
    foreign = [str(p) for p in results.foreign]
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
        .join(_costs(counted), on=_CELL, how="left")
        # budgets in the spec's cost order; without one (an import), the rows' frames and pixels
        .sort(["model_id", "dataset", "order", "_frames", "_pixels", "budget_id"], nulls_last=True)
        .drop("order", "_frames", "_pixels")
    )
    done, failed, pending = (int(per[c].sum()) for c in ("done", "failed", "pending"))
    if expected.height:  # only what the spec expects: a budget dropped from it neither counts nor blocks the churn
        counted = counted.join(expected.lazy().select(_CELL), on=_CELL, how="semi")
    driver = driver_running(out)
    started = _run_started(manifest)
    n, rate, eta = _pace(counted, started, driver is not None, pending)
    live = live_tables(counted)
    return SweepStatus(sweep_id, done, failed, pending, per, rate, eta, live["transitions"], foreign,
                       int(per["failed_permanent"].sum()), _permanent_errors(counted), driver, started, n, live)


def _run_started(manifest: dict) -> datetime | None:
    """When the manifest's last run started (None: no run recorded, e.g. an imported directory)."""
    history = manifest.get("history") or []
    last = history[-1] if isinstance(history, list) and history and isinstance(history[-1], dict) else {}
    try:
        started = datetime.fromisoformat(str(last["started_at"]))
    except (KeyError, TypeError, ValueError):
        return None
    return started if started.tzinfo else started.replace(tzinfo=UTC)


def _pace(rows: pl.LazyFrame, started: datetime | None, live: bool, pending: int
          ) -> tuple[int, float | None, float | None]:
    """The current run's rows, jobs per minute and ETA in minutes: its rows (ok or not) over the time from its start
    to now (its driver runs) or to its last row."""
    if started is None:
        return 0, None, None
    mine = rows.filter(pl.col("finished_at") >= started).select(
        pl.len().alias("n"), pl.col("finished_at").max().alias("t1")).collect()
    n, last = int(mine["n"][0]), mine["t1"][0]
    end = datetime.now(UTC) if live else last
    minutes = (end - started).total_seconds() / 60 if end is not None else 0.0
    if n == 0 or minutes <= 0:
        return n, None, None
    rate = n / minutes
    return n, rate, (pending / rate if pending else 0.0) if live or not pending else None


def _costs(rows: pl.LazyFrame) -> pl.DataFrame:
    """Each budget's cost from its rows: frames, then the resolution cap (text-only first)."""
    return rows.group_by(_CELL).agg(
        pl.col("frames").min().cast(pl.Int64).alias("_frames"),
        pl.coalesce("max_pixels", "short_side").min().cast(pl.Int64).alias("_pixels")).collect()


_READ = [*SNAPSHOT_COLUMNS, "error_kind", "error", "video_id", "finished_at"]
"""What status reads: what the matched frame needs (the metrics' snapshot) and the errors and times."""


def _read_once(latest: pl.LazyFrame) -> pl.LazyFrame:
    """The rows status reads, read once (every count below then reads memory, not every shard again); the frame
    indices, the bulk of a row, only as a null column (the matched frame carries them; status reads none)."""
    names = latest.collect_schema().names()
    return (latest.select(list(dict.fromkeys(c for c in _READ if c in names)))
            .with_columns(pl.lit(None, pl.List(pl.Int64)).alias("frame_indices")).collect().lazy())


def _permanent_errors(latest: pl.LazyFrame) -> pl.DataFrame:
    """Permanent failures by (dataset, video_id, error), with their job count, most jobs first."""
    return (
        latest.filter(_PERMANENT).group_by(["dataset", "video_id", "error"]).agg(pl.len().alias("jobs"))
        .sort(["jobs", "dataset", "video_id"], descending=[True, False, False]).collect()
    )
