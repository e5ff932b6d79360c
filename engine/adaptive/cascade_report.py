"""The online cascade's report: what it cost and scored, next to a fixed budget and the offline simulation."""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from engine import __version__
from engine.metrics.cascade import cascade_items
from engine.metrics.grid import matched
from engine.results.directory import ResultsDir

__all__ = [
    "CASCADE_SCHEMA",
    "CascadeReport",
    "CascadeReportError",
    "TimedRound",
    "cascade_budget_id",
    "cascade_report",
    "online_decisions",
    "read_cascade_report",
    "timing",
]

CASCADE_SCHEMA = "framesweep.cascade/1"
"""The layout of a session's report.json (`CascadeReport.to_dict`); another one is not read."""


class CascadeReportError(ValueError):
    """A session's report.json that cannot be shown; the message names the file."""


def cascade_budget_id(tau: float) -> str:
    """The budget id of the cascade's decision rows."""
    return f"cascade-tau{tau:g}"


@dataclass
class TimedRound:
    """One timing round: both policies, each from cold engine caches, in `order`."""

    round: int
    order: list[str]
    """Which policy ran first ("fixed", "cascade") in this round; rounds alternate it."""
    fixed_wall_s: float
    cascade_wall_s: float
    cache_resets: dict[str, int] = field(default_factory=dict)
    """Per policy: the engines' reset count (summed) after the reset that preceded it."""

    @property
    def ratio(self) -> float | None:
        """Cascade wall time over fixed wall time (below 1: the cascade was faster); None when the fixed run took
        no measurable time (JSON null: there is no ratio, and JSON has no NaN)."""
        return self.cascade_wall_s / self.fixed_wall_s if self.fixed_wall_s > 0 else None


@dataclass
class CascadeReport:
    """Online cascade vs a fixed budget run in the same session, and the offline prediction.

    `wall_s` and `fixed_wall_s` are the medians over the timing rounds; `rounds` holds each
    round (order, both wall times, the cache resets before each policy) and `ratio_*` the
    cascade / fixed ratio's median, min and max over the rounds.
    """

    tau: float
    stages: list[str]
    n_items: int
    accuracy: float | None
    mean_frames_processed: float | None
    mean_frames_decoded: float | None
    wall_s: float
    decode_passes: int
    fixed_budget: str
    fixed_accuracy: float | None
    fixed_mean_frames: float | None
    fixed_wall_s: float
    offline: dict[str, Any] = field(default_factory=dict)
    decision_agreement: float | None = None
    rounds: list[dict[str, Any]] = field(default_factory=list)
    ratio_median: float | None = None
    ratio_min: float | None = None
    ratio_max: float | None = None
    skipped_models: dict[str, list[str]] = field(default_factory=dict)
    """Models left out of the timed runs and the simulation: the stages/fixed budget above their max_frames."""

    def to_dict(self) -> dict[str, Any]:
        """The report.json of the session: this report, its schema and the framesweep that wrote it."""
        return {"schema": CASCADE_SCHEMA, "framesweep_version": __version__, **asdict(self)}


def read_cascade_report(path: Path | str) -> dict[str, Any]:
    """A session's report.json as `to_dict` wrote it; `CascadeReportError` (one sentence naming the file and,
    for a report of another layout, both versions) when it is unreadable, not JSON or of another schema."""
    path = Path(path)
    try:
        doc = json.loads(path.read_bytes())
    except OSError as err:
        raise CascadeReportError(f"{path}: cannot read the cascade report ({err.strerror or err})") from None
    except (ValueError, RecursionError) as err:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise CascadeReportError(f"{path}: not a JSON cascade report ({str(err) or 'nested too deeply'})") from None
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if schema != CASCADE_SCHEMA:
        theirs = doc.get("framesweep_version") if isinstance(doc, dict) else None
        writer = f"framesweep {theirs}" if theirs else "a framesweep that recorded no version"
        raise CascadeReportError(
            f"{path}: a cascade report of another version (schema {schema or 'none'}, written by {writer}; this "
            f"framesweep {__version__} reads {CASCADE_SCHEMA}); rerun `framesweep cascade` to replace it")
    return doc


def online_decisions(online_dir: Path | str, tau: float) -> pl.LazyFrame:
    """One row per (model, dataset, item): where the online cascade stopped and what it cost."""
    return (
        ResultsDir.open(online_dir).scan()
        .filter((pl.col("budget_id") == cascade_budget_id(tau)) & (pl.col("status") == "ok"))
        .select("model_id", "dataset", "item_id", pl.col("stage_path").list.last().alias("stop_budget"),
                "correct", "frames_processed", "frames_decoded", "confidence")
    )


def _mean(df: pl.DataFrame, col: str) -> float | None:
    v = df[col].cast(pl.Float64).mean() if df.height else None
    return None if v is None else float(v)  # type: ignore[arg-type]


def cascade_report(out_dir: Path | str, session: Path | str, stage_ids: list[str], tau: float, fixed_budget: str,
                   rounds: list[TimedRound], decode_passes: int,
                   skipped_models: dict[str, list[str]] | None = None) -> CascadeReport:
    """Summarise an online cascade session (see `engine.adaptive.cascade.run_cascade`).

    Answers and costs come from round 1's stores (greedy decoding: every round answers alike);
    wall times from every round.
    """
    session = Path(session)
    online = online_decisions(session / "round1" / "online", tau).collect()
    fixed = ResultsDir.open(session / "round1" / "fixed").scan().filter(pl.col("status") == "ok").collect()
    skipped_models = skipped_models or {}
    rows = ResultsDir.open(out_dir).rows().filter(~pl.col("model_id").is_in(list(skipped_models)))
    sim = cascade_items(matched(rows, budgets=stage_ids), taus=[tau]).collect()
    agree = online.join(sim.select("model_id", "dataset", "item_id", pl.col("stop_budget").alias("offline_stop")),
                        on=["model_id", "dataset", "item_id"], how="inner")
    return CascadeReport(
        tau=tau, stages=stage_ids, n_items=online.height,
        accuracy=_mean(online, "correct"),
        mean_frames_processed=_mean(online, "frames_processed"),
        mean_frames_decoded=_mean(online, "frames_decoded"),
        wall_s=statistics.median(r.cascade_wall_s for r in rounds), decode_passes=decode_passes,
        fixed_budget=fixed_budget, fixed_accuracy=_mean(fixed, "correct"),
        fixed_mean_frames=_mean(fixed, "frames_sent"), fixed_wall_s=statistics.median(r.fixed_wall_s for r in rounds),
        offline={"n_items": sim.height, "accuracy": _mean(sim, "correct"), "mean_frames": _mean(sim, "frames"),
                 "mean_unique_frames": _mean(sim, "unique_frames")},
        decision_agreement=_mean(agree.with_columns((pl.col("stop_budget") == pl.col("offline_stop")).alias("a")),
                                 "a") if agree.height else None,
        skipped_models=skipped_models, **timing(rounds),
    )


def timing(rounds: list[TimedRound]) -> dict[str, Any]:
    """The report's timing fields: each round with its ratio, and the ratio's median, min and max over the rounds
    that have one (None where none has: a fixed run that took no measurable time)."""
    ratios = [r.ratio for r in rounds if r.ratio is not None]
    return {"rounds": [{**asdict(r), "ratio": r.ratio} for r in rounds],
            "ratio_median": statistics.median(ratios) if ratios else None, "ratio_min": min(ratios, default=None),
            "ratio_max": max(ratios, default=None)}
