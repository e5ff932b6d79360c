"""Analysis commands of the `framesweep` CLI: metrics, report, predictor-eval, export-manifest, checkpoints,
import-lmms-eval."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich.table import Table

from engine.cli._blocks import print_blocks
from engine.cli._checks import PolarsEngine, check_output, known_ids, refuse, summary_problems, unknown
from engine.cli._console import console, fail, heading, shards_named, warn, writing
from engine.cli._output import JsonPath, check_json, emit_json, to_stdout
from engine.cli._results import open_results
from engine.cli.checkpoints import checkpoint_doc, checkpoints, manifest_spec
from engine.report.cells import cell_text, points

if TYPE_CHECKING:
    from engine.metrics.summary import SummaryOptions
    from engine.results.directory import ResultsDir
    from engine.scoring import ExtractionRule

__all__ = ["register"]


_Dir = Annotated[Path, typer.Argument(metavar="OUT", help="Results directory (safe while a sweep writes to it).")]
_NBoot = Annotated[int, typer.Option("--n-boot", min=0, help="Bootstrap replicates for confidence intervals (0: none).")]
_Seed = Annotated[int, typer.Option("--seed", help="Bootstrap seed.")]
_Pair = Annotated[list[str] | None, typer.Option("--pair", help="Extra transition FROM:TO (repeatable; default all).")]
_Stages = Annotated[str | None, typer.Option("--cascade-stages", help="Comma-separated cascade stages (budget ids).")]
_Match = Annotated[str | None, typer.Option("--cascade-match", help="Fixed budget the cascade must match.")]
_Compare = Annotated[str | None, typer.Option("--compare", help="BASE:OTHER models for checkpoint flows.")]
_Engine = Annotated[PolarsEngine, typer.Option("--engine", help="Polars engine: auto, streaming or in-memory.")]
_Protocol = Annotated[list[str] | None, typer.Option(
    "--protocol", help="Only this chain (protocol id: default, px50176, random-seed1, cached, ...; repeatable).")]
_IsoTol = Annotated[float, typer.Option(
    "--iso-tolerance", min=0.0, help="Iso-compute sets: each budget's pixels sent within this share of the median.")]
_Preds = Annotated[Path | None, typer.Option(
    "--predictions", help="Run directory holding predictions/ shards (default: OUT).")]
_ModelId = Annotated[str | None, typer.Option("--model-id", help="Evaluate against this model only (default: all).")]
_Fallback = Annotated[str | None, typer.Option(
    "--fallback", help="Budget id for unparsed or off-grid predictions (default: the dearest budget).")]
_ImageDs = Annotated[str | None, typer.Option(
    "--image-datasets", help="Comma-separated image benchmarks (default: from the items' media).")]


def _options(n_boot: int, seed: int, pair: list[str] | None, stages: str | None, match: str | None,
             compare: str | None, engine: PolarsEngine, protocols: list[str] | None = None,
             iso_tolerance: float = 0.03) -> SummaryOptions:
    from engine.metrics.summary import SummaryOptions

    def split(text: str, what: str) -> tuple[str, str]:
        a, sep, b = text.partition(":")
        if not sep or not a or not b:
            raise typer.BadParameter(f"{what} must look like A:B, got {text!r}")
        return a, b

    return SummaryOptions(
        n_boot=n_boot, seed=seed, engine=engine,
        pairs=tuple(split(p, "--pair") for p in pair) if pair else None,
        cascade_stages=tuple(s for s in stages.split(",") if s) if stages else None, cascade_match=match,
        compare=split(compare, "--compare") if compare else None,
        protocols=tuple(protocols) if protocols else None, iso_tolerance=iso_tolerance,
    )


def _primary_protocol(results: ResultsDir) -> str | None:
    """The spec's primary_protocol, from the results directory's manifest (None when it names none)."""
    return manifest_spec(results).get("primary_protocol")


def _document(out_dir: Path | ResultsDir, opts: SummaryOptions) -> dict[str, Any]:
    from engine.metrics.document import summary_document
    from engine.metrics.summary import summary_tables

    results = open_results(out_dir)
    if opts.primary_protocol is None:
        opts = dataclasses.replace(opts, primary_protocol=_primary_protocol(results))
    from engine.results.video_stats import with_video_stats

    with shards_named(results.path):
        rows = with_video_stats(_rows(results), results.video_stats())  # each video's statistics (low_level)
        if opts.protocols or opts.pairs or opts.cascade_stages or opts.cascade_match or opts.compare:
            refuse(results.path, summary_problems(opts, known_ids(rows, opts.engine)))
        return summary_document(summary_tables(rows, opts), opts, source=str(results.path))


def _rows(results: ResultsDir, warn_foreign: bool = True) -> Any:
    """The results of OUT (one row per key); an unreadable shard is named (exit 2) instead of a Polars traceback.

    Rows of another sweep (a shard copied into results/) are left out (`ResultsDir.rows`), as `status` leaves
    them out, and (with `warn_foreign`) each such shard is named on stderr."""
    with shards_named(results.path):
        rows, foreign = results.rows(), results.foreign
    if foreign and warn_foreign:
        warn(f"{len(foreign)} shard(s) hold rows of another sweep and are not counted: "
             + ", ".join(p.name for p in foreign))
    return rows


def _print_group(g: dict[str, Any]) -> None:
    from engine.metrics.registry import registered_metrics

    chain = f"chain {g['protocol_id']}{' (primary)' if g['primary'] else ''}"
    heading(f"{g['model_id']} on {g['dataset']}, {chain}: {g['n_items']} matched items, {g['n_excluded']} excluded")
    console.print("; ".join(cell_text(m.headline(g).line) for m in registered_metrics("group") if m.headline))
    for metric in registered_metrics("group"):
        if metric.terminal is not None:
            print_blocks(metric.terminal(g))


def _print_across_chains(doc: dict[str, Any]) -> None:
    """Every registered dataset metric's terminal section, per model and dataset."""
    from engine.metrics.registry import registered_metrics

    for metric in registered_metrics("dataset"):
        per: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
        for r in doc.get(metric.name) or []:
            per.setdefault((r.get("model_id"), r.get("dataset")), []).append(r)
        if metric.terminal is not None:
            for rows in per.values():
                print_blocks(metric.terminal(rows))


def _print_official(g: dict[str, Any]) -> None:
    """A group's headline official scores per budget (an lmms-eval task's own aggregation, ...); none: nothing. An
    lmms-eval task's score is in the task's own unit (Video-MME's a percentage, EgoSchema's a fraction), so it is
    printed as lmms-eval's own results table prints it, to 4 places (EgoSchema's 0.1667, not 0.2)."""
    from rich.markup import escape

    from engine.datasets.lmms_official import METRIC as LMMS_METRIC
    from engine.metrics.benchmark_scores import score_unit
    from engine.metrics.sections import Number, Score

    rows = [r for r in g.get("official_scores") or [] if r["headline"] and r["metric"] != "accuracy"]
    if not rows:
        return
    table = Table(title=f"Official score per budget: {escape(str(g['dataset']))}", title_justify="left")
    for column in ("budget", "metric", "score"):
        table.add_column(column)
    for r in rows:
        metric = r["metric"] + (f" ({r['subset']})" if r["subset"] else "")
        value = Number(r["value"], places=4) if r["metric"] == LMMS_METRIC else Score(r["value"], score_unit(r["metric"]))
        table.add_row(escape(str(r["budget_id"])), escape(metric), cell_text(value))
    console.print(table)


def print_audit(out_dir: Path, official: bool = False) -> None:
    """What `framesweep metrics OUT` prints for each chain (with 1,000 bootstrap replicates): the demo's ending;
    with `official`, each chain's headline official score per budget after it (``run --lmms-eval-task``'s ending)."""
    doc = _document(out_dir, _options(1000, 0, None, None, None, None, "auto", None, 0.03))
    heading(f"The audit of {out_dir} (framesweep metrics {out_dir})")
    for g in doc["groups"]:
        _print_group(g)
        if official:
            _print_official(g)


def metrics(
    out_dir: _Dir,
    json_path: JsonPath = None,
    n_boot: _NBoot = 1000, seed: _Seed = 0, pair: _Pair = None, cascade_stages: _Stages = None,
    cascade_match: _Match = None, compare: _Compare = None, engine: _Engine = "auto", protocol: _Protocol = None,
    iso_tolerance: _IsoTol = 0.03,
) -> None:
    """Paired item-level metrics of a sweep, per protocol chain: tables here, the full document as JSON with
    --json PATH."""
    check_json(json_path)
    doc = _document(out_dir, _options(n_boot, seed, pair, cascade_stages, cascade_match, compare, engine, protocol,
                                      iso_tolerance))
    if not to_stdout(json_path):
        for g in doc["groups"]:
            _print_group(g)
        _print_across_chains(doc)
        if not doc["groups"]:
            console.print("no results yet")
    emit_json(json_path, doc)


def report(
    out_dir: _Dir,
    output: Annotated[Path, typer.Option("-o", "--output", help="HTML file to write.")] = Path("report.html"),
    title: Annotated[str | None, typer.Option("--title", help="Page title.")] = None,
    n_boot: _NBoot = 1000, seed: _Seed = 0, pair: _Pair = None, cascade_stages: _Stages = None,
    cascade_match: _Match = None, compare: _Compare = None, engine: _Engine = "auto",
    predictions: Annotated[Path | None, typer.Option(
        "--predictions", help="Run directory holding predictions/ shards (default: OUT when it has them).")] = None,
    fallback: _Fallback = None,
    checkpoint_models: Annotated[str | None, typer.Option(
        "--checkpoint-models", help="Comma-separated checkpoints (base first) for the checkpoint section (default: "
        "the study in the run's spec, [models.checkpoint], when it has one).")] = None,
    image_datasets: _ImageDs = None, protocol: _Protocol = None, iso_tolerance: _IsoTol = 0.03,
) -> None:
    """One self-contained HTML report (inline SVG figures, readable offline).

    Exit codes: 0 written; 2 OUT cannot be read, or an option names nothing in it; 5 no space left to write
    the report; 1 it could not be written for another reason (named)."""
    from engine.report import write_report

    check_output("-o", output)
    doc = report_document(out_dir, _options(n_boot, seed, pair, cascade_stages, cascade_match, compare, engine,
                                            protocol, iso_tolerance), predictions=predictions, fallback=fallback,
                          checkpoint_models=checkpoint_models, image_datasets=image_datasets)
    with writing("the report", output):
        write_report(doc, output, title or f"framesweep: {out_dir.name}")
    console.print(f"wrote {output}")


def report_document(out_dir: Path, opts: SummaryOptions, *, predictions: Path | None = None,
                    fallback: str | None = None, checkpoint_models: str | None = None,
                    image_datasets: str | None = None) -> dict[str, Any]:
    """The metrics document of OUT with what the report and the figures add: the predictor's groups (when
    predictions are there), the checkpoint study (when asked for, or in the run's spec), the online cascade
    sessions and the run's provenance (``run``)."""
    from engine.provenance import run_provenance

    results = open_results(out_dir)  # once: every part below reads this value
    doc = _document(results, opts)
    pred_dir = predictions or out_dir
    if predictions is not None or _predictions(results, pred_dir).head(1).collect().height:
        doc["predictor"] = _predictor_doc(results, pred_dir, None, fallback, opts.engine,
                                          warn_foreign=False)["groups"]
    if checkpoint_models or any((m.get("checkpoint") or {}).get("base") for m in manifest_spec(results).get("models") or []
                                if isinstance(m, dict)):
        doc["checkpoints"] = checkpoint_doc(results, _split(checkpoint_models), _split(image_datasets), opts.engine,
                                            "--checkpoint-models")
    sessions = _cascade_sessions(out_dir)
    if sessions:
        doc["cascade_online"] = sessions
    with shards_named(out_dir):
        doc["run"] = run_provenance(results)
    return doc


def _cascade_sessions(out_dir: Path) -> list[dict[str, Any]]:
    """The online cascade sessions' reports; one that cannot be shown (unreadable, of another version) is
    named on stderr and left out."""
    from engine.adaptive.cascade_report import CascadeReportError, read_cascade_report

    sessions = []
    for path in sorted((out_dir / "cascade").glob("*/report.json")):
        try:
            sessions.append(read_cascade_report(path))
        except CascadeReportError as err:
            warn(f"{err}; left out of the report")
    return sessions


def _split(text: str | None) -> list[str] | None:
    return [s.strip() for s in text.split(",") if s.strip()] if text else None


def _snapshot(out_dir: Path | ResultsDir, engine: Any, warn_foreign: bool = True) -> Any:
    from engine.metrics.summary import SNAPSHOT_COLUMNS

    results = open_results(out_dir)
    rows = _rows(results, warn_foreign)
    with shards_named(results.path):
        return rows.select(SNAPSHOT_COLUMNS).collect(engine=engine).lazy()


def _collect(tables: dict[str, Any], engine: Any) -> dict[str, Any]:
    import polars as pl

    frames = pl.collect_all(list(tables.values()), engine=engine)
    return dict(zip(tables, frames, strict=True))


def _predictions(results: ResultsDir, pred_dir: Path) -> Any:
    """The predictions in `pred_dir`: OUT's own through the `ResultsDir` the command opened (each footer checked
    once), another folder's (``--predictions``) read on its own."""
    from engine.adaptive.predictions import scan_predictions
    from engine.results.tables import PREDICTIONS

    if Path(pred_dir).resolve() == results.path.resolve():
        return results.table(PREDICTIONS)
    return scan_predictions(pred_dir)


def _predictor_doc(out_dir: Path | ResultsDir, pred_dir: Path, model_id: str | None, fallback: str | None,
                   engine: str, warn_foreign: bool = True) -> dict[str, Any]:
    from engine.adaptive.predictions import evaluate_predictor, predictor_document

    results = open_results(out_dir)
    rows = _snapshot(results, engine, warn_foreign)
    if model_id is not None or fallback is not None:
        known = known_ids(rows, engine)  # type: ignore[arg-type]
        refuse(results.path, unknown("--model-id", [model_id] if model_id else [], known.models, "model")
               + unknown("--fallback", [fallback] if fallback else [], known.budgets, "budget"))
    tables = _collect(evaluate_predictor(rows, _predictions(results, pred_dir), model_id, fallback=fallback), engine)
    return {"schema": "framesweep.predictor/1", "source": str(results.path), "predictions": str(pred_dir),
            "fallback": fallback, "groups": predictor_document(tables)}


def _print_predictor(g: dict[str, Any]) -> None:
    heading(f"predictor {g['predictor_id']} for {g['model_id']} on {g['dataset']}: {g['n_items']} items "
            f"({g['n_unsolvable']} right nowhere, {g['n_unparsed']} unparsed, {g['n_off_grid']} off the grid "
            f"-> {g['fallback_budget']})")
    t = Table()
    for c in ("strategy", "accuracy", "mean frames", "predictor - it (pts)", "frames saved"):
        t.add_column(c, justify="right")
    t.add_row("predictor", points(g["accuracy"]), f"{g['mean_frames']:.1f}", "", "")
    for f in g["fixed"]:
        t.add_row(f"fixed {f['budget_id']}", points(f["accuracy"]), f"{f['mean_frames']:.1f}",
                  points(f["accuracy_delta"], True), points(f["frames_saved"]))
    t.add_row("oracle (cheapest right)", points(g["oracle_accuracy"]), f"{g['oracle_mean_frames']:.1f}",
              points(g["accuracy"] - g["oracle_accuracy"], True), "")
    console.print(t)
    cols = [*g["grid"], None]
    cells = {(c["predicted"], c["sufficient"]): c["n"] for c in g["confusion"]}
    t = Table(title="predicted budget (rows) x cheapest sufficient budget (columns)")
    for c in ("predicted", *[c or "none" for c in cols]):
        t.add_column(c, justify="right")
    for p in g["grid"]:
        t.add_row(p, *[str(cells.get((p, c), 0)) for c in cols])
    console.print(t)
    console.print(f"agreement with the cheapest sufficient budget {points(g['agreement'])}% of {g['n_solvable']} "
                  f"solvable items ({g['n_under']} under, {g['n_over']} over); parsed: {g['parse']}")


def predictor_eval(out_dir: _Dir, predictions: _Preds = None, model_id: _ModelId = None, fallback: _Fallback = None,
                   json_path: JsonPath = None, engine: _Engine = "auto") -> None:
    """Score a hybrid-frame predictor against a finished sweep: accuracy, frames, agreement, confusion."""
    check_json(json_path)
    doc = _predictor_doc(out_dir, predictions or out_dir, model_id, fallback, engine)
    if not to_stdout(json_path):
        for g in doc["groups"]:
            _print_predictor(g)
        if not doc["groups"]:
            console.print("no predictions match the sweep's matched items")
    emit_json(json_path, doc)


def export_manifest(
    out_dir: Annotated[Path, typer.Argument(metavar="OUT", help="Run directory holding predictions/ shards.")],
    out: Annotated[Path, typer.Option("--out", help="JSONL manifest to write.")],
    items: Annotated[Path | None, typer.Option(
        "--items", help="Items table (.parquet/.jsonl/.csv: dataset, item_id, video) to restrict to and take "
                        "video paths from.")] = None,
    predictor_id: Annotated[str | None, typer.Option("--predictor-id", help="Predictor to export.")] = None,
    fallback_frames: Annotated[int | None, typer.Option(
        "--fallback-frames", help="Frames for unparsed answers (default: leave them out).")] = None,
) -> None:
    """Per-sample frame-count manifest (JSONL: id, video, instruction, frames) for video fine-tuning data."""
    import polars as pl

    from engine.adaptive.predictions import export_manifest as run_export
    from engine.adaptive.predictions import scan_predictions

    check_output("--out", out)
    readers = {".parquet": pl.scan_parquet, ".jsonl": pl.scan_ndjson, ".ndjson": pl.scan_ndjson, ".csv": pl.scan_csv}
    if items is not None and items.suffix not in readers:
        fail(f"--items: unknown format {items.suffix!r} (known: {', '.join(readers)})")
        raise typer.Exit(2)
    table = readers[items.suffix](items) if items is not None else None  # type: ignore[operator]
    try:
        with writing("the manifest", out):
            n = run_export(scan_predictions(out_dir), table, out, predictor_id=predictor_id,
                           fallback_frames=fallback_frames)
    except ValueError as err:
        fail(err)
        raise typer.Exit(2) from None
    console.print(f"wrote {n} lines to {out}")


def import_lmms_eval(
    paths: Annotated[list[Path], typer.Argument(metavar="LOGS", help="lmms-eval samples files or directories.")],
    out: Annotated[Path, typer.Option("--out", help="framesweep results directory to write.")],
    frames: Annotated[int | None, typer.Option("--frames", min=0, help="Frame count of logs whose results.json "
        "records none (a log that records another count is refused; default: each log's own).")] = None,
    budget_id: Annotated[str | None, typer.Option("--budget-id", help="Budget id (default: text / f<frames>).")] = None,
    model_id: Annotated[str | None, typer.Option("--model-id", help="Model id (default: the model_name each "
        "log's results.json records).")] = None,
    dataset: Annotated[str | None, typer.Option("--dataset", help="Dataset name (default: each log's task; a "
        "text-only task joins the video task that reads its data).")] = None,
    sweep_id: Annotated[str | None, typer.Option("--sweep-id", help="Recorded on every row; a directory with a "
        "manifest takes only its own (default: lmms-eval, or the id an earlier import recorded).")] = None,
    extraction: Annotated[str | None, typer.Option(
        "--extraction", help="Read MCQ answers again from the raw response: official, strict or lmms_eval "
        "(lmms-eval's own reading stays in pred_extracted; default: keep it as pred).")] = None,
) -> None:
    """Import lmms-eval per-sample logs (one run per budget) as a framesweep results dataset."""
    from engine.results.lmms_eval import import_lmms_eval as run_import
    from engine.results.store import StoreLockedError
    from engine.scoring import EXTRACTION_RULES

    if extraction is not None and extraction not in EXTRACTION_RULES:  # (so the cast below holds)
        fail(f"--extraction: unknown rule {extraction!r} (known: {', '.join(EXTRACTION_RULES)})")
        raise typer.Exit(2)
    try:
        with shards_named(out):
            summary = run_import(paths, out, frames=frames, budget_id=budget_id, model_id=model_id, dataset=dataset,
                                 sweep_id=sweep_id, extraction=cast("ExtractionRule | None", extraction))
    except (ValueError, OSError, StoreLockedError) as err:
        fail(err)
        raise typer.Exit(2) from None
    for name, (model, data, budget) in summary.placed.items():
        console.print(f"{name} -> model {model}, dataset {data}, budget {budget}", markup=False, soft_wrap=True)
    same = f", {summary.duplicates} given twice" if summary.duplicates else ""
    same += f", {summary.unscored} without a usable score (error rows)" if summary.unscored else ""
    console.print(f"imported {summary.runs} runs: {summary.rows} rows written, {summary.skipped} already there"
                  f"{same} -> {out}", markup=False, soft_wrap=True)
    reading = (f"read again with --extraction {summary.extraction} (lmms-eval's own parse kept in pred_extracted)"
               if summary.extraction else "lmms-eval's own parse (also in pred_extracted)")
    console.print(f"multiple-choice answers: {reading}", markup=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add the analysis commands to the `framesweep` app."""
    logging.getLogger(__name__).debug("registering analysis commands")
    app.command("metrics")(metrics)
    app.command("report")(report)
    app.command("predictor-eval")(predictor_eval)
    app.command("export-manifest")(export_manifest)
    app.command("checkpoints")(checkpoints)
    app.command("import-lmms-eval")(import_lmms_eval)
