"""Import lmms-eval per-sample logs as a framesweep results dataset (one budget per run).

Each samples file (`engine.results.lmms_logs` describes lmms-eval's layout) becomes one budget,
so several runs of one task at different frame counts give paired trajectories without
rerunning anything. Each log's frame count, model and task come from its own results.json:
the frame count from ``model_args`` (`FRAME_KEYS`; a text-only task variant, e.g.
``videomme_no_visual``, is the ``text`` budget whatever model_args say), the model from
``model_name``, the dataset from the task (a text-only variant joins the video task of the
import that reads the same data). ``frames`` is a fallback for logs that record no frame count
and a check for those that do; two logs giving one key different answers, a model named by an
unexpanded environment variable, and a directory of another sweep are refused before anything
is written.

Correctness: a metric dict with ``score`` gives it (1 = right); else ``pred_answer``
vs ``answer``; a numeric metric that is always 0 or 1 is correctness, any other numeric
metric is a graded score (open task, ``correct`` null). A sample whose score is NaN or inf
(or who has none) is kept as an error row naming its file and line, never read as wrong, and
counted in a warning; one whose id (``question_id``, else ``doc_id``) is missing, NaN or inf
refuses the import, naming its line (it would be a key no run ever matches).

lmms-eval's own parsed answer is kept in ``pred_extracted``: the task's ``pred_answer``, empty when
lmms-eval found none (its regex matched no letter), else the filtered response (the task's filters
are its parse). ``pred`` is that parse, null when it is empty. With ``extraction`` = official |
strict | lmms_eval (`engine.scoring.extract_letter`), multiple-choice answers are read again from
the raw response by that rule: ``pred`` and ``correct`` follow the rule, ``pred_extracted`` still
holds lmms-eval's reading, and ``scoring`` is ``lmms-eval:<rule>``. Importing logs again with
another rule over rows already there is refused, saying which reading the directory holds and how
many answers the new one would change (compare readings in two directories).

Every import is recorded in the manifest's ``imports``: when, the rule, and per log its samples
file, results.json, task, lmms-eval version, model_args, task hash, the (model, dataset, budget) its
rows got and their count (`engine.results.provenance` shows them).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine import __version__ as framesweep_version
from engine.results.lmms_logs import LmmsRun, LogConfig, find_runs, placeholder, read_config
from engine.results.lmms_merge import held_answers, merge_rows, new_rows
from engine.results.manifest import MANIFEST, ManifestError, read_manifest
from engine.results.schema import ResultRow
from engine.results.store import ResultStore
from engine.runtime.secrets import redact
from engine.scoring import ExtractionRule, extract_letter

__all__ = ["ImportSummary", "LmmsRun", "find_runs", "import_lmms_eval", "run_rows"]

log = logging.getLogger(__name__)

_RESERVED = {"doc_id", "target", "filtered_resps", "resps", "doc_hash", "prompt_hash", "target_hash", "input",
             "doc", "arguments", "token_counts", "input_media"}
DEFAULT_SWEEP_ID = "lmms-eval"


@dataclass
class ImportSummary:
    """What an import wrote."""

    runs: int
    rows: int
    skipped: int
    """Rows whose key the directory already held with the same answer."""
    placed: dict[str, tuple[str, str, str]]
    """``<model directory>/<samples file>`` -> the (model id, dataset, budget id) its rows got."""
    duplicates: int = 0
    """Rows given again, with the same answer, by a second log of the import."""
    extraction: str | None = None
    """The rule multiple-choice answers were read again with (None: lmms-eval's own parse)."""
    unscored: int = 0
    """Samples read without a usable score (none, NaN or inf): kept as error rows, each naming its line."""

    @property
    def budgets(self) -> dict[str, str]:
        """``<model directory>/<samples file>`` -> budget id."""
        return {name: budget for name, (_, _, budget) in self.placed.items()}


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


class _Unscored(ValueError):
    """A sample whose score is no number (NaN, inf): imported as an error row, never as a right or wrong answer."""


def _outcome(info: dict[str, Any], numeric: dict[str, float], binary: bool) -> tuple[str, bool | None, float | None]:
    """(task kind, correct, score) of one sample; `_Unscored` naming the metric when its score is NaN or inf."""
    score = info.get("score")
    if isinstance(score, bool | int | float):
        if not math.isfinite(score):
            raise _Unscored(f"its score is {score}")
        ok = float(score) >= 1.0
        return "mcq", ok, float(ok)
    if info.get("pred_answer") is not None and info.get("answer") is not None:
        ok = _norm(info["pred_answer"]) == _norm(info["answer"])
        return "mcq", ok, float(ok)
    if numeric:
        name, value = next(iter(numeric.items()))
        if not math.isfinite(value):
            raise _Unscored(f"its metric {name} is {value}")
        if binary:
            return "mcq", value >= 1.0, float(value >= 1.0)
        return "open", None, min(max(value, 0.0), 1.0)
    return "mcq", None, None


def _item_id(info: dict[str, Any], doc: dict[str, Any], sample: dict[str, Any], where: str) -> str:
    """The sample's item id (question_id, else doc_id); ValueError naming the line when it has none usable (a
    NaN or inf would be a key no run ever matches)."""
    for name, value in (("question_id", info.get("question_id")), ("question_id", doc.get("question_id")),
                        ("doc_id", sample.get("doc_id"))):
        if value in (None, ""):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{where}: {name} is {value}, not an id: the sample cannot be keyed (fix or drop the "
                             "line)")
        return str(value)
    raise ValueError(f"{where}: no doc_id or question_id: the sample cannot be keyed (fix or drop the line)")


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


def _row(sample: dict[str, Any], ctx: _Context, where: str) -> ResultRow:
    """The row of one sample (`where`: its file and line, for messages)."""
    info, numeric = _metrics(sample)
    given = sample.get("doc")
    doc: dict[str, Any] = given if isinstance(given, dict) else {}
    unscored = None
    try:
        kind, correct, score = _outcome(info, numeric, ctx.binary)
    except _Unscored as err:
        kind, correct, score, unscored = "mcq", None, None, str(err)
    response = _text(sample.get("resps")) or _text(sample.get("filtered_resps"))  # resps: raw, when kept
    filtered = _text(sample.get("filtered_resps"))
    prompt = sample.get("input")
    row = ResultRow(
        sweep_id=ctx.sweep_id, model_id=ctx.model_id, model_family=ctx.model_family, dataset=ctx.dataset,
        dataset_version=ctx.dataset_version,
        item_id=_item_id(info, doc, sample, where),
        video_id=str(_first(info.get("videoID"), info.get("video_id"), doc.get("videoID"), doc.get("video_id"),
                            doc.get("video"), "") or ""),
        task_kind=kind, budget_id=ctx.budget_id, frames=ctx.frames, policy="uniform", seed=0,
        task_type=_first(info.get("task_category"), info.get("task_type"), doc.get("task_type")),
        category=_first(info.get("category"), doc.get("domain"), doc.get("category")),
        duration=_first(info.get("duration"), doc.get("duration")),
        scoring="lmms-eval", answer=_text(_first(info.get("answer"), sample.get("target"))),
        response=response, pred=None, correct=correct, score=score, finished_at=ctx.finished_at,
        prompt_hash=hashlib.sha256(str(prompt).encode()).hexdigest()[:16] if prompt is not None else None,
    )
    row.pred_extracted = _own_parse(info, filtered)
    row.pred = row.pred_extracted or None
    if ctx.extraction is not None and kind == "mcq" and row.answer:
        _reextract(row, doc, ctx.extraction)
    if correct is None and score is None:
        why = f"{unscored}, not a number" if unscored else "no per-sample score in the log line"
        row.status, row.error_type, row.error = "error", "ImportError", f"{where}: {why}"
    return row


def _own_parse(info: dict[str, Any], filtered: str | None) -> str | None:
    """lmms-eval's own reading of the answer: its ``pred_answer`` as the task's process_results left it ("" when
    it found none), else the filtered response (the task's filters are its parse); None when the log has neither."""
    if "pred_answer" in info:
        return "" if info["pred_answer"] is None else str(_text(info["pred_answer"]) or "")
    return filtered


def _reextract(row: ResultRow, doc: dict[str, Any], rule: ExtractionRule) -> None:
    """Read the answer letter again from the raw response with `rule` (lmms-eval's stays in pred_extracted)."""
    options = doc.get("options") or doc.get("candidates") or []
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[: len(options) if isinstance(options, list) and options else 4]
    answer = _norm(row.answer)
    letters = letters if answer in letters else "".join(sorted(set(letters) | {answer}))
    pred = extract_letter(row.response or "", letters, rule) or None
    row.pred, row.correct = pred, pred is not None and pred == answer
    row.score, row.scoring = float(row.correct), f"lmms-eval:{rule}"


def _read(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The samples of a samples file, each with its line number."""
    samples = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                sample = json.loads(line)
            except ValueError as err:
                raise ValueError(f"{path}:{n}: not a JSON line ({err})") from None
            except RecursionError:
                raise ValueError(f"{path}:{n}: JSON nested too deeply to read") from None
            if not isinstance(sample, dict):
                raise ValueError(f"{path}:{n}: not an lmms-eval sample (no JSON object)")
            samples.append((n, sample))
    return samples


@dataclass(frozen=True)
class _Log:
    """One run, resolved: the model, dataset and budget its rows get."""

    run: LmmsRun
    config: LogConfig
    frames: int
    budget_id: str
    model_id: str
    dataset: str


def _frames(run: LmmsRun, cfg: LogConfig, frames: int | None) -> int:
    """The log's frame count: its config's, checked against `frames`; `frames` where it records none."""
    if cfg.visual is False:
        if frames:
            raise ValueError(f"{run.samples}: task {run.task} sends no visual (its doc_to_visual in {cfg.source}): "
                             f"a text-only run, which --frames {frames} contradicts")
        return 0
    if cfg.fps is not None:  # lmms-eval then samples at this rate: the count varies per video
        if frames is None:
            raise ValueError(f"{run.samples}: model_args in {cfg.source} sample at fps={cfg.fps}, so the frame "
                             "count varies per video; pass --frames N only if every video got N frames")
        return frames
    named = " and ".join(f"{k}={v}" for k, v in cfg.frames.items())
    values = set(cfg.frames.values())
    if frames is None and len(values) == 1:
        return values.pop()
    if frames is None and values:
        raise ValueError(f"{run.samples}: model_args in {cfg.source} record {named}, not which one the model "
                         "used; pass --frames with that one")
    if frames is None:
        where = f"model_args in {cfg.source}" if run.results else "a results.json (none beside it)"
        raise ValueError(f"{run.samples}: no frame count in {where}; pass --frames")
    if values and frames not in values:
        raise ValueError(f"{run.samples}: its run records {named} (model_args in {cfg.source}); --frames {frames} "
                         "contradicts it")
    return frames


def _model_id(run: LmmsRun, cfg: LogConfig, model_id: str | None) -> str:
    """--model-id, else the model lmms-eval named from model_args, else the log directory's name."""
    if model_id:
        return model_id
    name = cfg.model or run.samples.parent.name
    if var := placeholder(name):
        where = f"{cfg.source}: model_args name" if cfg.model else f"{run.samples.parent}: the directory names"
        raise ValueError(f"{where} the model {name!r}: {var} is an environment variable that was never expanded; "
                         "pass --model-id")
    return name


def _datasets(pairs: list[tuple[LmmsRun, LogConfig]], dataset: str | None) -> list[str]:
    """Each log's dataset: --dataset, else its task; a text-only task takes the video task reading its data."""
    if dataset:
        return [dataset] * len(pairs)
    video: dict[tuple[str, ...], set[str]] = {}
    for run, cfg in pairs:
        if cfg.visual is not False and cfg.data:
            video.setdefault(cfg.data, set()).add(run.task)
    names = []
    for run, cfg in pairs:
        tasks = sorted(video.get(cfg.data, ())) if cfg.data else []
        if cfg.visual is not False or len(tasks) == 1:
            names.append(run.task if cfg.visual is not False else tasks[0])
            continue
        data = " ".join(x for x in cfg.data if x) if cfg.data else "no recorded dataset"
        others = f"as do the video tasks {', '.join(tasks)}" if tasks else "and no video run of this import does"
        raise ValueError(f"{run.samples}: text-only task {run.task} reads {data}, {others}; pass --dataset "
                         "(the dataset of its video runs)")
    return names


def _resolve(runs: list[LmmsRun], *, frames: int | None, budget_id: str | None, model_id: str | None,
             dataset: str | None) -> list[_Log]:
    """Where each run's rows go, from each log's own config (any refusal before anything is read further)."""
    pairs = [(run, read_config(run)) for run in runs]
    counts = [_frames(run, cfg, frames) for run, cfg in pairs]
    if budget_id is not None and len(set(counts)) > 1:
        raise ValueError(f"--budget-id {budget_id} would put runs of {sorted(set(counts))} frames under one budget; "
                         "import one frame count at a time")
    models = [_model_id(run, cfg, model_id) for run, cfg in pairs]
    return [_Log(run, cfg, n, budget_id or ("text" if n == 0 else f"f{n}"), m, d)
            for (run, cfg), n, m, d in zip(pairs, counts, models, _datasets(pairs, dataset), strict=True)]


def _rows_of(log_: _Log, sweep_id: str, extraction: ExtractionRule | None) -> list[ResultRow]:
    path = log_.run.samples
    samples = _read(path)
    numeric = [v for _, s in samples for v in _metrics(s)[1].values() if math.isfinite(v)]
    ctx = _Context(
        sweep_id=sweep_id, model_id=log_.model_id, model_family=log_.config.family or "lmms-eval",
        dataset=log_.dataset, dataset_version=log_.config.version or "lmms-eval", budget_id=log_.budget_id,
        frames=log_.frames, finished_at=datetime.fromtimestamp(path.stat().st_mtime, UTC),
        binary=bool(numeric) and all(v in (0.0, 1.0) for v in numeric), extraction=extraction,
    )
    rows = [_row(s, ctx, f"{path}:{n}") for n, s in samples]
    unscored = [n for (n, _), row in zip(samples, rows, strict=True) if row.status == "error"]
    if unscored:
        log.warning("%s: %d sample(s) without a usable score (none, NaN or inf), imported as error rows: line(s) %s",
                    path, len(unscored), ", ".join(map(str, unscored[:10])) + (", ..." if len(unscored) > 10 else ""))
    return rows


def run_rows(run: LmmsRun, *, frames: int | None = None, budget_id: str | None = None, model_id: str | None = None,
             dataset: str | None = None, sweep_id: str = DEFAULT_SWEEP_ID,
             extraction: ExtractionRule | None = None) -> Iterator[ResultRow]:
    """The result rows of one lmms-eval run (one budget).

    Args:
        run: The samples file (and its results.json).
        frames: Frame count where the log records none; a check where it does (a contradiction raises).
        budget_id: Budget id; default ``text`` for 0 frames or a text-only task, else ``f<frames>``.
        model_id: Model id; default: results.json's model_name, else the log directory's name.
        dataset: Dataset name; default: the lmms-eval task name.
        sweep_id: Recorded on every row.
        extraction: Read multiple-choice answers again from the raw response with this rule
            (None: keep lmms-eval's own reading).
    """
    (one,) = _resolve([run], frames=frames, budget_id=budget_id, model_id=model_id, dataset=dataset)
    return iter(_rows_of(one, sweep_id, extraction))


def _manifest(out_dir: Path) -> dict[str, Any] | None:
    """OUT/manifest.json (None when there is none); `ManifestError` naming the file when it is damaged or names
    no sweep."""
    doc = read_manifest(out_dir)
    if not doc:
        return None
    if not isinstance(doc.get("sweep_id"), str):
        raise ManifestError(f"{out_dir / MANIFEST}: names no sweep_id")
    return doc


def _sweep_id(out_dir: Path, sweep_id: str | None) -> str:
    """The sweep id to record: --sweep-id, or the directory's own when an earlier import made it."""
    manifest = _manifest(out_dir)
    if manifest is None:
        return sweep_id or DEFAULT_SWEEP_ID
    own = manifest["sweep_id"]
    if sweep_id == own or (sweep_id is None and manifest.get("source") == "lmms-eval"):
        return own
    given = "without --sweep-id" if sweep_id is None else f"as sweep {sweep_id!r}"
    raise ValueError(f"{out_dir} holds sweep {own!r} (its manifest.json): rows imported {given} would count for "
                     f"nothing there; pass --sweep-id {own}")


def _import_record(batches: list[tuple[_Log, list[ResultRow]]], extraction: ExtractionRule | None) -> dict[str, Any]:
    """What one import read: per log its files, lmms-eval's version, model_args (redacted) and task hash."""
    logs = [{"samples": str(lg.run.samples), "results": None if lg.run.results is None else str(lg.run.results),
             "task": lg.run.task, "model_id": lg.model_id, "dataset": lg.dataset, "budget_id": lg.budget_id,
             "frames": lg.frames, "rows": len(batch), "lmms_eval_version": lg.config.lmms_eval_version,
             "model_args": None if lg.config.model_args is None else redact(lg.config.model_args),
             "task_hash": lg.config.task_hash, "run_date": lg.config.date}
            for lg, batch in batches]
    return {"imported_at": datetime.now(UTC).isoformat(), "framesweep_version": framesweep_version,
            "extraction": extraction, "logs": logs}


def _recorded(manifest: dict[str, Any] | None, sweep: str, record: dict[str, Any]) -> dict[str, Any]:
    """The manifest with this import added (a directory's first import makes it)."""
    old = manifest or {"sweep_id": sweep, "source": "lmms-eval"}
    runs = list(dict.fromkeys([*(old.get("runs") or []), *(lg["samples"] for lg in record["logs"])]))
    return {**old, "runs": runs, "imports": [*(old.get("imports") or []), record]}


def import_lmms_eval(paths: Sequence[str | Path], out_dir: str | Path, *, frames: int | None = None,
                     budget_id: str | None = None, model_id: str | None = None, dataset: str | None = None,
                     sweep_id: str | None = None, extraction: ExtractionRule | None = None) -> ImportSummary:
    """Import lmms-eval runs into a results directory, all or nothing.

    Every log is read and checked before anything is written; keys the directory already holds with the
    same answer are skipped.

    Args:
        paths: Samples files or directories holding them.
        out_dir: The framesweep results directory to write.
        frames, budget_id, model_id, dataset, extraction: As for `run_rows`, for every log.
        sweep_id: Recorded on every row; a directory with a manifest takes only its own (default: the id an
            earlier import recorded there, else ``lmms-eval``).

    Raises:
        ValueError: A refusal (a log's config contradicted or incomplete, two logs or a log and the directory
            giving one key different answers, another sweep's directory), one sentence naming the file.
    """
    out = Path(out_dir)
    sweep = _sweep_id(out, sweep_id)
    runs = find_runs(paths)
    if not runs:
        raise ValueError(f"no lmms-eval samples file (<date_id>_samples_<task>.jsonl) in {', '.join(map(str, paths))}")
    logs = _resolve(runs, frames=frames, budget_id=budget_id, model_id=model_id, dataset=dataset)
    batches = [(lg, _rows_of(lg, sweep, extraction)) for lg in logs]
    rows, duplicates = merge_rows([(lg.run.samples, batch) for lg, batch in batches])
    with ResultStore(out) as store:
        fresh = [row for row, _ in new_rows(rows, held_answers(out, sweep), out)]
        store.add(fresh)
        written = store.commit()
        store.write_manifest(_recorded(_manifest(out), sweep, _import_record(batches, extraction)))
    for lg in logs:
        log.info("%s: model %s, dataset %s, budget %s", lg.run.samples, lg.model_id, lg.dataset, lg.budget_id)
    return ImportSummary(runs=len(runs), rows=written, skipped=len(rows) - len(fresh), duplicates=duplicates,
                         extraction=extraction, unscored=sum(row.status == "error" for row, _ in rows),
                         placed={f"{lg.run.samples.parent.name}/{lg.run.samples.name}": (lg.model_id, lg.dataset,
                                                                                      lg.budget_id) for lg in logs})
