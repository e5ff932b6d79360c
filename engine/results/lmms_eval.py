"""Import lmms-eval per-sample logs as a framesweep results dataset (one run per budget).

lmms-eval writes ``<output_path>/<model>/<date_id>_samples_<task>.jsonl`` (one JSON
object per sample: ``doc_id, target, filtered_resps, resps, doc_hash, input`` plus one
key per metric holding that metric's per-sample value or dict; 0.3.x also keeps
``doc`` and ``arguments``) and ``<date_id>_results.json`` (the run's config;
``config.model_args`` carries the frame budget, e.g. ``max_num_frames=32``). Each
samples file becomes one budget of the imported sweep, so several runs of the same
task at different budgets give paired trajectories without rerunning anything.

Correctness: a metric dict with ``score`` gives it (1 = right); else ``pred_answer``
vs ``answer``; a numeric metric that is always 0 or 1 is correctness, any other numeric
metric is a graded score (open task, ``correct`` null).

lmms-eval's own parsed answer (``pred_answer``, else the filtered response) is kept in
``pred_extracted`` (and is ``pred``). With ``extraction`` = official | strict | lmms_eval
(`engine.scoring.extract_letter`), multiple-choice answers are read again from the raw
response by that rule: ``pred`` and ``correct`` follow the rule, ``pred_extracted`` still
holds lmms-eval's reading, and ``scoring`` is ``lmms-eval:<rule>``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine.results.schema import ResultRow
from engine.results.store import ResultStore
from engine.scoring import ExtractionRule, extract_letter

__all__ = ["ImportSummary", "LmmsRun", "budget_from_config", "find_runs", "import_lmms_eval", "run_rows"]

log = logging.getLogger(__name__)

_SAMPLES = re.compile(r"^(?P<date>.+?)_samples_(?P<task>.+)\.jsonl$")
_FRAME_KEYS = ("max_num_frames", "max_frames_num", "num_frames", "nframes", "max_frames", "frames_num",
               "frame_num", "num_frm", "frames")
_RESERVED = {"doc_id", "target", "filtered_resps", "resps", "doc_hash", "prompt_hash", "target_hash", "input",
             "doc", "arguments"}


@dataclass(frozen=True)
class LmmsRun:
    """One lmms-eval samples file and the results.json of its run (if found)."""

    samples: Path
    results: Path | None
    date_id: str
    task: str


@dataclass
class ImportSummary:
    """What an import wrote."""

    runs: int
    rows: int
    skipped: int
    budgets: dict[str, str]
    """samples file name -> budget id."""


def find_runs(paths: Iterable[str | Path]) -> list[LmmsRun]:
    """Every ``*_samples_*.jsonl`` under the given files or directories, with its results.json."""
    files: list[Path] = []
    for p in map(Path, paths):
        files += sorted(p.rglob("*_samples_*.jsonl")) if p.is_dir() else [p]
    runs = []
    for f in files:
        m = _SAMPLES.match(f.name)
        if not m:
            raise ValueError(f"{f}: not an lmms-eval samples file (<date_id>_samples_<task>.jsonl)")
        results = f.with_name(f"{m['date']}_results.json")
        runs.append(LmmsRun(f, results if results.exists() else None, m["date"], m["task"]))
    return runs


def budget_from_config(config: dict[str, Any]) -> int | None:
    """The frame budget in a results.json's ``config.model_args`` (string or mapping), if any."""
    args = (config.get("config") or {}).get("model_args") or ""
    if isinstance(args, dict):
        args = ",".join(f"{k}={v}" for k, v in args.items())
    for key in _FRAME_KEYS:
        m = re.search(rf"(?:^|[,\s]){key}\s*=\s*(\d+)", str(args))
        if m:
            return int(m[1])
    return None


def _first(*values: Any) -> Any:
    return next((v for v in values if v not in (None, "")), None)


def _text(value: Any) -> str | None:
    while isinstance(value, list) and value:
        value = value[0]
    return None if value in (None, []) else str(value)


def _metrics(sample: dict[str, Any]) -> tuple[dict[str, Any], dict[str, float]]:
    """The sample's per-sample metric dict (merged) and its numeric metrics."""
    info: dict[str, Any] = {}
    numeric: dict[str, float] = {}
    for k, v in sample.items():
        if k in _RESERVED:
            continue
        if isinstance(v, dict):
            info = {**v, **info}
        elif isinstance(v, bool | int | float):
            numeric[k] = float(v)
    return info, numeric


def _norm(answer: Any) -> str:
    return str(answer).strip().strip("().").upper()


def _outcome(info: dict[str, Any], numeric: dict[str, float], binary: bool) -> tuple[str, bool | None, float | None]:
    """(task kind, correct, score) of one sample."""
    score = info.get("score")
    if isinstance(score, bool | int | float):
        ok = float(score) >= 1.0
        return "mcq", ok, float(ok)
    if info.get("pred_answer") is not None and info.get("answer") is not None:
        ok = _norm(info["pred_answer"]) == _norm(info["answer"])
        return "mcq", ok, float(ok)
    if numeric:
        value = next(iter(numeric.values()))
        if binary:
            return "mcq", value >= 1.0, float(value >= 1.0)
        return "open", None, min(max(value, 0.0), 1.0)
    return "mcq", None, None


@dataclass(frozen=True)
class _Context:
    sweep_id: str
    model_id: str
    model_family: str
    dataset: str
    dataset_version: str
    budget_id: str
    frames: int
    finished_at: datetime
    binary: bool
    extraction: ExtractionRule | None = None


def _row(sample: dict[str, Any], ctx: _Context) -> ResultRow:
    info, numeric = _metrics(sample)
    doc = sample.get("doc") or {}
    kind, correct, score = _outcome(info, numeric, ctx.binary)
    response = _text(sample.get("resps")) or _text(sample.get("filtered_resps"))  # resps: raw, when kept
    filtered = _text(sample.get("filtered_resps"))
    prompt = sample.get("input")
    row = ResultRow(
        sweep_id=ctx.sweep_id, model_id=ctx.model_id, model_family=ctx.model_family, dataset=ctx.dataset,
        dataset_version=ctx.dataset_version,
        item_id=str(_first(info.get("question_id"), doc.get("question_id"), sample.get("doc_id"))),
        video_id=str(_first(info.get("videoID"), info.get("video_id"), doc.get("videoID"), doc.get("video_id"),
                            doc.get("video"), "") or ""),
        task_kind=kind, budget_id=ctx.budget_id, frames=ctx.frames, policy="uniform", seed=0,
        task_type=_first(info.get("task_category"), info.get("task_type"), doc.get("task_type")),
        category=_first(info.get("category"), doc.get("domain"), doc.get("category")),
        duration=_first(info.get("duration"), doc.get("duration")),
        scoring="lmms-eval", answer=_text(_first(info.get("answer"), sample.get("target"))),
        response=response, pred=_text(_first(info.get("pred_answer"), filtered)),
        correct=correct, score=score, finished_at=ctx.finished_at,
        prompt_hash=hashlib.sha256(str(prompt).encode()).hexdigest()[:16] if prompt is not None else None,
    )
    row.pred_extracted = row.pred
    if ctx.extraction is not None and kind == "mcq" and row.answer:
        _reextract(row, doc, ctx.extraction)
    if correct is None and score is None:
        row.status, row.error_type, row.error = "error", "ImportError", "no per-sample score in the log line"
    return row


def _reextract(row: ResultRow, doc: dict[str, Any], rule: ExtractionRule) -> None:
    """Read the answer letter again from the raw response with `rule` (lmms-eval's stays in pred_extracted)."""
    options = doc.get("options") or doc.get("candidates") or []
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[: len(options) if isinstance(options, list) and options else 4]
    answer = _norm(row.answer)
    letters = letters if answer in letters else "".join(sorted(set(letters) | {answer}))
    pred = extract_letter(row.response or "", letters, rule) or None
    row.pred, row.correct = pred, pred is not None and pred == answer
    row.score, row.scoring = float(row.correct), f"lmms-eval:{rule}"


def _read(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _context(run: LmmsRun, samples: list[dict[str, Any]], *, frames: int | None, budget_id: str | None,
             model_id: str | None, dataset: str | None, sweep_id: str) -> _Context:
    config = json.loads(run.results.read_text()) if run.results else {}
    n = frames if frames is not None else budget_from_config(config)
    if n is None:
        raise ValueError(f"{run.samples}: no frame budget in {run.results or 'a results.json'}; pass --frames")
    numeric = [v for s in samples for v in _metrics(s)[1].values()]
    return _Context(
        sweep_id=sweep_id,
        model_id=model_id or config.get("model_name") or run.samples.parent.name,
        model_family=str((config.get("config") or {}).get("model") or "lmms-eval"),
        dataset=dataset or run.task,
        dataset_version=str((config.get("versions") or {}).get(run.task, "lmms-eval")),
        budget_id=budget_id or ("text" if n == 0 else f"f{n}"), frames=n,
        finished_at=datetime.fromtimestamp(run.samples.stat().st_mtime, UTC),
        binary=bool(numeric) and all(v in (0.0, 1.0) for v in numeric),
    )


def run_rows(run: LmmsRun, *, frames: int | None = None, budget_id: str | None = None, model_id: str | None = None,
             dataset: str | None = None, sweep_id: str = "lmms-eval",
             extraction: ExtractionRule | None = None) -> Iterator[ResultRow]:
    """The result rows of one lmms-eval run (one budget).

    Args:
        run: The samples file (and its results.json).
        frames: Frame budget; default: from results.json's model_args.
        budget_id: Budget id; default ``text`` for 0 frames, else ``f<frames>``.
        model_id: Model id; default: results.json's model_name, else the log directory's name.
        dataset: Dataset name; default: the lmms-eval task name.
        sweep_id: Recorded on every row.
        extraction: Read multiple-choice answers again from the raw response with this rule
            (None: keep lmms-eval's own reading).
    """
    samples = _read(run.samples)
    ctx = _context(run, samples, frames=frames, budget_id=budget_id, model_id=model_id, dataset=dataset,
                   sweep_id=sweep_id)
    if extraction is not None:
        ctx = replace(ctx, extraction=extraction)
    return (_row(s, ctx) for s in samples)


def import_lmms_eval(paths: Sequence[str | Path], out_dir: str | Path, **options: Any) -> ImportSummary:
    """Import lmms-eval runs into a results directory (keys already committed are skipped).

    Args:
        paths: Samples files or directories holding them.
        out_dir: The framesweep results directory to write.
        **options: Passed to `run_rows` (frames, budget_id, model_id, dataset, sweep_id, extraction).

    Returns:
        Runs, rows written, rows skipped (already committed), and the budget of each run.
    """
    runs = find_runs(paths)
    written = skipped = 0
    budgets: dict[str, str] = {}
    with ResultStore(out_dir) as store:
        done = store.done_keys()
        for run in runs:
            rows = list(run_rows(run, **options))
            fresh = [r for r in rows if r.key not in done]
            done.update(r.key for r in fresh)  # two runs mapped to one budget: the first one wins
            skipped += len(rows) - len(fresh)
            store.add(fresh)
            written += store.commit()
            budgets[run.samples.name] = rows[0].budget_id if rows else ""
            log.info("%s: %d rows (%d already committed)", run.samples.name, len(fresh), len(rows) - len(fresh))
        if not (Path(out_dir) / "manifest.json").exists():
            store.write_manifest({"sweep_id": options.get("sweep_id", "lmms-eval"), "source": "lmms-eval",
                                  "runs": [str(r.samples) for r in runs]})
    return ImportSummary(runs=len(runs), rows=written, skipped=skipped, budgets=budgets)
