"""A bridged lmms-eval task's official score per budget: the task's own ``aggregation``, the `official` of the
``lmms_eval`` benchmark (`engine.datasets.builtin`).

For each (model, dataset, budget), the per-document results of the budget's ok rows (each row's
``score_detail``: what the task's ``process_results`` returned for the metric the row is scored by, the first of
its ``metric_list``, kept as JSON when the row was scored: `engine.datasets.lmms_eval`) go, in item order, to that
metric's aggregation, as lmms-eval's evaluator calls it. The result is the metric ``lmms_eval_score`` with the
task's metric as its `subset` (``videomme_perception_score``), in the task's own unit (Video-MME's: a percentage).

The per-document results are stored rather than made again at metrics time: `process_results` needs each row's
document, which only the task's dataset holds (wherever the run's spec read it), while the aggregation needs the
task's YAML alone (a task from a user's folder, ``include_path``, is looked for in the folder the run's spec named:
the adapter notes it when it loads the task, a command when it opens the results directory, from its manifest's
specs: `engine.datasets._lmms_tasks.remember_task_folders`). So this module imports without lmms-eval; where
lmms-eval is not installed, or cannot name the task (a folder since moved), or the aggregation fails or gives no
single number, the score is absent (logged), never guessed. Error rows, and rows without a ``score_detail`` (from before it, or an MCQ read by
a `[prompt] extraction` rule of framesweep's), are not in it: lmms-eval scores every document it ran.
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

import polars as pl

from engine.datasets._lmms_tasks import LmmsTaskError, aggregate, installed_version
from engine.datasets.benchmark import OfficialRows
from engine.datasets.official import KEYS

__all__ = ["METRIC", "scores", "task_and_metric"]

log = logging.getLogger(__name__)

METRIC = "lmms_eval_score"
_SCHEMA = {"model_id": pl.String(), "dataset": pl.String(), "budget_id": pl.String(), "metric": pl.String(),
           "subset": pl.String(), "value": pl.Float64()}


def task_and_metric(dataset_version: str) -> tuple[str, str] | None:
    """(task, metric) of a bridged row's version ``lmms_eval-<v>/<task>@<task version>/<metric>:<rule>`` (the adapter name first, so an imported lmms-eval log, version ``lmms-eval``, is not one); None
    for any other version (an imported lmms-eval log's)."""
    parts = dataset_version.split("/")
    if len(parts) != 3 or not parts[0].startswith("lmms_eval-") or "@" not in parts[1] or ":" not in parts[2]:
        return None
    return parts[1].rsplit("@", 1)[0], parts[2].split(":", 1)[0]


def _value(task: str, metric: str, details: list[str]) -> float | None:
    """The task's aggregation of `metric` over the per-document results; None (logged) when it gives none."""
    try:
        value = aggregate(task, metric, [json.loads(d) for d in details])
    except LmmsTaskError as err:
        log.warning("no official score: %s", err)
        return None
    except Exception as err:  # noqa: BLE001 - the task's own code
        log.warning("no official score for lmms-eval task %r: its aggregation of %r failed: %s: %s", task, metric,
                    type(err).__name__, err)
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(float(value)):
        log.warning("no official score for lmms-eval task %r: its aggregation of %r gave %.80r, not one number",
                    task, metric, value)
        return None
    return float(value)


def scores(of: OfficialRows) -> list[pl.LazyFrame]:
    """`METRIC` per (model, dataset, budget) with the task's metric as subset (module docstring).

    One call of the task's Python aggregation per budget (a loop over budgets, not rows: the aggregation is the
    task's own code, over its own per-document values)."""
    if "score_detail" not in of.rows.collect_schema():  # rows from before the column
        return [pl.LazyFrame(schema=_SCHEMA)]
    per_budget = (
        of.rows.filter((pl.col("status") == "ok") & pl.col("score_detail").is_not_null())
        .group_by(*KEYS, "dataset_version")
        .agg(pl.col("score_detail").sort_by("item_id"))
        .sort([*KEYS, "dataset_version"])
        .collect()
    )
    out: list[dict[str, Any]] = []
    if per_budget.height and installed_version() is None:
        log.warning("no official score for the lmms-eval tasks: lmms-eval is not installed")
        return [pl.LazyFrame(schema=_SCHEMA)]
    for row in per_budget.iter_rows(named=True):
        named = task_and_metric(row["dataset_version"])
        value = None if named is None else _value(*named, row["score_detail"])
        if named is not None and value is not None:
            out.append({**{k: row[k] for k in KEYS}, "metric": METRIC, "subset": named[1], "value": value})
    return [pl.LazyFrame(out, schema=_SCHEMA)]
