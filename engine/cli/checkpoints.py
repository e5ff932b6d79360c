"""`framesweep checkpoints`: the checkpoint trade-off audit ("temporal trap") of a results directory.

The study (which model is whose base, trained on how many frames) comes from the run's spec in
its manifest (`[models.checkpoint]`); ``--models`` overrides it (the first the base of the
others; the spec's train frames, size and architecture are kept for the listed models).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from engine.cli._checks import PolarsEngine, known_ids, refuse, unknown
from engine.cli._console import console, fail, shards_named
from engine.cli._output import JsonPath, check_json, emit_json, to_stdout
from engine.cli._results import open_results
from engine.report.cells import points

if TYPE_CHECKING:
    from engine.metrics.checkpoint_study import Checkpoint
    from engine.results.directory import ResultsDir

__all__ = ["checkpoint_doc", "checkpoints", "manifest_spec"]

_Models = Annotated[str | None, typer.Option(
    "--models", help="Comma-separated checkpoints in order, the first the base of the others (default: the "
    "study in the run's spec, [models.checkpoint]).")]
_ImageDs = Annotated[str | None, typer.Option(
    "--image-datasets", help="Comma-separated image benchmarks (default: from the items' media).")]


def manifest_spec(out_dir: Path | ResultsDir) -> dict[str, Any]:
    """The spec stored in OUT's manifest ({} when there is none); a damaged manifest is named (exit 2)."""
    return open_results(out_dir).manifest.get("spec") or {}


def _benchmarks(spec: dict[str, Any]) -> dict[str, str]:
    """{dataset as named in the rows: adapter name} from the spec's `[dataset]` or `[[datasets]]`."""
    tables = spec.get("datasets") or [spec.get("dataset")]
    return {str(d.get("id") or d["name"]): str(d["name"]) for d in tables if isinstance(d, dict) and d.get("name")}


def _study(spec: dict[str, Any], models: list[str] | None) -> list[Checkpoint]:
    from engine.metrics.checkpoint_study import Checkpoint, study_from_models, study_from_spec

    known = {c.model_id: c for c in study_from_spec(spec)}
    if not models:
        return list(known.values())
    order = study_from_models(models)
    return [dataclasses.replace(known[c.model_id], base=c.base) if c.model_id in known
            else Checkpoint(c.model_id, base=c.base) for c in order]


def checkpoint_doc(out_dir: Path | ResultsDir, models: list[str] | None, image_datasets: list[str] | None,
                   engine: PolarsEngine, models_option: str = "--models") -> dict[str, Any]:
    """The checkpoint document of OUT (`engine.metrics.checkpoints.checkpoint_document`); exits 2 on a bad study
    or on a model or dataset named (`models_option`, --image-datasets) that the results do not hold."""
    from engine.metrics.checkpoints import CHECKPOINT_COLUMNS, checkpoint_document, checkpoint_tables
    from engine.metrics.summary import load_rows

    results = open_results(out_dir)
    spec = manifest_spec(results)
    polars_engine: Any = engine  # auto, streaming or in-memory, as the CLI option gives it
    try:
        study = _study(spec, models)
        if not study:
            raise ValueError("the run's spec has no [models.checkpoint] tables: give --models BASE,CHECKPOINT,...")
        with shards_named(results.path):
            rows = load_rows(results).select(CHECKPOINT_COLUMNS).collect(engine=polars_engine).lazy()
        if models or image_datasets:
            known = known_ids(rows, engine)
            refuse(results.path, unknown(models_option, models or [], known.models, "model")
                   + unknown("--image-datasets", image_datasets or [], known.datasets, "dataset"))
        tables = checkpoint_tables(rows, study, image_datasets, benchmarks=_benchmarks(spec))
    except ValueError as err:
        fail(f"{models_option if models else 'study'}: {err}")
        raise typer.Exit(2) from None
    # one table at a time: the rows are in memory already, and Polars' collect_all over these plans spends
    # minutes finding their common subplans (28 s against 5.6 s one by one on a 52-row study)
    frames = [t.collect(engine=polars_engine) for t in tables.values()]
    return {"schema": "framesweep.checkpoints/3", "source": str(results.path),
            **checkpoint_document(dict(zip(tables, frames, strict=True)), study)}


def _table(title: str, columns: tuple[str, ...], rows: list[list[str]]) -> None:
    t = Table(title=title)
    for c in columns:
        t.add_column(c, justify="right")
    for r in rows:
        t.add_row(*r)
    console.print(t)


def _ceilings(rows: list[dict[str, Any]]) -> None:
    """One line per checkpoint read at fewer frames than the study's most (its base's chains end early)."""
    from engine.metrics.checkpoint_study import frame_ceilings

    for model, note in frame_ceilings(rows).items():
        console.print(f"{model}: {note}", markup=False)


def _official(doc: dict[str, Any]) -> None:
    from engine.metrics.checkpoint_study import frames_label, trap_verdict
    from engine.report.cells import metric_score

    _table(f"temporal trap vs {', '.join(doc['bases'])}: official scores (points of each one's full scale)",
           ("checkpoint", "base", "frames", "video datasets", "video gain", "image datasets", "image loss", "trapped"),
           [[r["model_id"], r["base_id"], frames_label(r["frames"]), str(r["n_video_datasets"]),
             points(r["video_gain"], True), str(r["n_image_datasets"]), points(r["image_loss"], True), trap_verdict(r)]
            for r in doc["temporal_trap"]])
    _ceilings(doc["temporal_trap"])
    images = sorted({b for r in doc["temporal_trap"] for b in r.get("image_budgets") or []})
    if images:
        console.print(f"image scores from (dataset:budget): {', '.join(images)}", markup=False)
    top = {(r["model_id"], r["dataset"], r["budget_id"]) for r in doc["datasets"]}
    _table("official scores against the base, at each dataset's score budget (a video dataset's dearest, an image "
           "dataset's image budget; MME and Video-MME v2 in points, the others in %)", ("checkpoint", "dataset", "budget", "metric", "subset", "score", "base", "delta",
                               "missing"),
           [[r["model_id"], r["dataset"], r["budget_id"], r["metric"], r["subset"] or "",
             metric_score(r["metric"], r["value"]), metric_score(r["metric"], r["base_value"]),
             metric_score(r["metric"], r["delta"], True), ", ".join(r["missing"] or r["base_missing"] or [])]
            for r in doc["headlines"] if (r["model_id"], r["dataset"], r["budget_id"]) in top])
    _table("video gain and image loss against train frames (official scores; each dataset at its score budget)",
           ("architecture", "size", "train frames", "checkpoint", "video gain", "image loss", "trapped"),
           [[r["architecture"] or "", r["size"] or "", r["train_frames"] or "?", r["label"],
             points(r["video_gain"], True), points(r["image_loss"], True), "yes" if r["trapped"] else ""]
            for r in doc["train_frames"]])


def print_checkpoints(doc: dict[str, Any]) -> None:
    """The audit's tables on the console: official scores first, then the per-question view (points)."""
    from engine.metrics.checkpoint_study import frames_label, trap_verdict

    kinds = ", ".join(f"{d} {k}" for d, k in doc["dataset_kinds"].items())
    console.print(f"datasets (kind from the items' media): {kinds}", markup=False)
    _official(doc)
    pq = doc["per_question"]
    _table("per question (every MMBench rotation, every MME question an item): temporal trap (points)",
           ("checkpoint", "base", "frames", "video acc", "video gain", "image acc", "image loss", "trapped"),
           [[r["model_id"], r["base_id"], frames_label(r["frames"]), points(r["video_accuracy"]),
             points(r["video_gain"], True), points(r["image_accuracy"]), points(r["image_loss"], True), trap_verdict(r)]
            for r in pq["temporal_trap"] if r["model_id"] != r["base_id"]])
    _table("per question: each checkpoint and dataset at the dataset's score budget (points)",
           ("checkpoint", "dataset", "kind", "budget", "items", "acc", "base acc", "gain", "rescue", "harm"),
           [[r["model_id"], r["dataset"], r["kind"], r["budget_id"], str(r["n_items"]), points(r["accuracy"]),
             points(r["base_accuracy"]), points(r["gain"], True), str(r["rescue"]), str(r["harm"])]
            for r in pq["datasets"] if r["model_id"] != r["base_id"]])


def _split(text: str | None) -> list[str] | None:
    return [s.strip() for s in text.split(",") if s.strip()] if text else None


def checkpoints(
    out_dir: Annotated[Path, typer.Argument(metavar="OUT", help="Results directory.")],
    models: _Models = None, image_datasets: _ImageDs = None,
    json_path: JsonPath = None,
    engine: Annotated[PolarsEngine, typer.Option(
        "--engine", help="Polars engine: auto, streaming or in-memory.")] = "auto",
) -> None:
    """Checkpoint audit: each benchmark's official score against its base; video gain vs image loss on those
    ("temporal trap"), per frame count and against train frames; the per-question view (accuracy, rescued and
    harmed items) beside it."""
    check_json(json_path)
    doc = checkpoint_doc(out_dir, _split(models), _split(image_datasets), engine)
    if not to_stdout(json_path):
        print_checkpoints(doc)
    emit_json(json_path, doc)
