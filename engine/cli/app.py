"""The `framesweep` app: run, demo, status, cascade, predict; the analysis and dataset groups register here.

Conventions of every command: `-h`/`--help`, `framesweep --version`, the results directory is `OUT` (an
argument, or `--out` where a command creates it), output to a file or a pipe is neither coloured nor
wrapped (`engine.cli._console`), and `python -m engine` is `framesweep`.
"""

from __future__ import annotations

import asyncio
import contextlib
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from engine import __version__
from engine.cli._blocks import print_live
from engine.cli._console import UNWRAPPED, console, fail, plain_help, setup_logging, warn
from engine.cli._output import JsonPath, check_json, emit_json, to_stdout
from engine.cli.analysis import register as register_analysis_commands
from engine.cli.compact import register as register_compact_command
from engine.cli.datasets import register as register_dataset_commands
from engine.cli.engines import register as register_engine_commands
from engine.cli.export import register as register_export_command
from engine.cli.figures import register as register_figures_command
from engine.cli.run import (
    EXIT_ENGINE_START,
    EXIT_FAILED_JOBS,
    EXIT_PERMANENT_FAILURES,
    EXIT_STORE_FULL,
    EXIT_WARM_ENGINE_STOPPED,
    ending,
    leave,
)
from engine.cli.run import register as register_run_commands
from engine.config import SpecError, SweepSpec, load_spec
from engine.report.cells import points
from engine.results.errors import ResultsDirError
from engine.results.store import StoreLockedError
from engine.runtime.output import JSONValueError, write_json

if TYPE_CHECKING:
    from engine.adaptive.cascade_report import CascadeReport
    from engine.metrics.status import SweepStatus
    from engine.sweep.preflight import Preflight

__all__ = ["EXIT_ENGINE_START", "EXIT_FAILED_JOBS", "EXIT_PERMANENT_FAILURES", "EXIT_STORE_FULL",
           "EXIT_WARM_ENGINE_STOPPED", "app", "main"]

app = typer.Typer(add_completion=False, no_args_is_help=True, context_settings={"help_option_names": ["-h", "--help"]},
                  help="framesweep: paired item-level scaling audits of video LLMs.")


def _version(value: bool) -> None:
    if value:
        try:
            version = metadata.version("framesweep")
        except metadata.PackageNotFoundError:
            version = __version__
        typer.echo(f"framesweep {version}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print framesweep's version and exit.")] = False) -> None:
    """framesweep: paired item-level scaling audits of video LLMs."""


register_run_commands(app)  # first: `run` and `demo` lead the command list

_ending, _leave = ending, leave  # the names cascade and predict use below


def _load(spec_path: Path, out: Path | None) -> SweepSpec:
    try:
        return load_spec(spec_path, out)
    except SpecError as err:
        fail(err)
        raise typer.Exit(2) from None


def _preflight(spec: SweepSpec, source: str) -> Preflight:
    """The spec's environment checks (`engine.sweep.preflight`), before Ray or any engine starts: every
    unusable field named, exit 2. The record goes to the command's sweep of `spec`, which does not check again."""
    from engine.sweep.preflight import preflight

    try:
        return preflight(spec, source)
    except SpecError as err:
        fail(err)
        raise typer.Exit(2) from None


@app.command()
def status(out_dir: Annotated[Path, typer.Argument(metavar="OUT", help="Results directory.")]) -> None:
    """Jobs done / failed / pending per model and budget, throughput, ETA and the live churn summary
    (safe while a sweep runs)."""
    from engine.cli._results import open_results
    from engine.metrics.status import sweep_starting, sweep_status

    results = open_results(out_dir)  # read once: the manifest here, each shard's footer below
    if (holder := sweep_starting(results)) is not None:
        console.print(f"{out_dir}: a run is starting ({holder} holds the directory; it reads its items and the "
                      "committed rows, and records its plan before any engine starts)", soft_wrap=True)
        if not results.has_manifest:
            return
    try:
        st = sweep_status(results)
    except ResultsDirError as err:  # no manifest, an unreadable shard
        fail(err)
        raise typer.Exit(2) from None
    t = Table(title=f"{st.sweep_id}: {st.done} done, {st.failed} failed, {st.pending} pending")
    for c in ("model", "dataset", "budget", "done", "failed", "pending"):
        t.add_column(c, justify="right" if c in ("done", "failed", "pending") else "left")
    for r in st.per_budget.iter_rows(named=True):
        t.add_row(r["model_id"], str(r["dataset"]), r["budget_id"], str(r["done"]), str(r["failed"]),
                  str(r["pending"]))
    console.print(t)
    if holder is None:  # a run starting has no pace yet (the last recorded run is not this one)
        _pace(st)
    _failures(st)
    if st.foreign_shards:
        warn(f"{len(st.foreign_shards)} shard(s) hold rows of another sweep and are not counted: "
             + ", ".join(Path(p).name for p in st.foreign_shards))
    if st.churn.height:
        console.print("live churn (items answered at every budget so far)")
        print_live(st.live)  # each chain as a heading line: as columns it squeezed the numbers out of 80 columns
    else:
        console.print("live churn: no item answered at every budget yet")


def _pace(st: SweepStatus) -> None:
    """Who writes the directory now, and the current run's pace (its own rows only)."""
    from datetime import UTC, datetime

    if st.run_started_at is None:
        console.print("no run recorded (imported results): no throughput or ETA")
        return
    ago = (datetime.now(UTC) - st.run_started_at).total_seconds() / 60
    if st.driver is None:
        rate = f", {st.jobs_per_min:.1f} jobs/min" if st.jobs_per_min else ""
        console.print(f"no run in progress; the last one started {ago:.1f} min ago and committed {st.run_rows} "
                      f"rows{rate}", soft_wrap=True)
        return
    if st.run_rows == 0:
        console.print(f"running ({st.driver}), started {ago:.1f} min ago: starting (Ray and the engines load "
                      "before the first row)", soft_wrap=True)
        return
    rate = f"{st.jobs_per_min:.1f} jobs/min" if st.jobs_per_min else "n/a"
    eta = f"{st.eta_min:.1f} min" if st.eta_min is not None else "n/a"
    console.print(f"running ({st.driver}), started {ago:.1f} min ago: {st.run_rows} rows so far, throughput {rate}; "
                  f"ETA {eta}", soft_wrap=True)


def _failures(st: SweepStatus) -> None:
    """Which failed jobs a rerun retries (transient) and which it fails again (permanent, named by video)."""
    if st.failed_permanent:
        warn(f"{st.failed_permanent} failed job(s) are permanent (missing or undecodable media, or a frame plan the "
             "video cannot meet): fix the media or drop the items; until then a rerun fails them the same way")
        for r in st.permanent_errors.head(10).iter_rows(named=True):
            console.print(f"  {r['dataset']} {r['video_id']} ({r['jobs']} job(s)): {r['error']}", markup=False,
                          soft_wrap=True)
        if st.permanent_errors.height > 10:
            console.print(f"  ... and {st.permanent_errors.height - 10} more")
    if st.failed - st.failed_permanent:
        console.print(f"{st.failed - st.failed_permanent} failed job(s) are transient (engine, server, timeout): "
                      "a rerun retries them", soft_wrap=True)


@app.command()
def spec(
    example: Annotated[bool, typer.Option("--example", help="Print a full spec: every field at its default, "
                                          "each with its description.")] = False,
    reference: Annotated[bool, typer.Option("--reference", help="Print the spec reference (Markdown).")] = False,
) -> None:
    """The sweep spec: a commented full example (--example) or the field reference (--reference)."""
    from engine.config.reference import example_toml, reference_markdown

    if example == reference:
        fail("give one of --example or --reference")
        raise typer.Exit(2)
    typer.echo(example_toml() if example else reference_markdown(), nl=False)


@app.command()
def doctor(out_dir: Annotated[Path, typer.Argument(metavar="OUT", help="Results directory.")]) -> None:
    """Read every result shard whole; move unreadable ones to OUT/quarantine/ (the next run recomputes
    their keys). Takes the directory's lock: no sweep may be writing to it."""
    from engine.cli._results import need_results_dir
    from engine.results.store import doctor as run_doctor

    need_results_dir(out_dir)
    try:
        moved = run_doctor(out_dir)
    except StoreLockedError as err:
        fail(err)
        raise typer.Exit(3) from None
    for path, why in moved:
        warn(f"quarantined {path.name}: {why}")
    console.print(f"{out_dir}: {len(moved)} bad shard(s) moved to quarantine/" if moved
                  else f"{out_dir}: every shard reads", soft_wrap=True)


@app.command()
def cascade(
    spec_path: Annotated[Path, typer.Argument(metavar="SPEC.toml", help="Sweep spec (TOML).")],
    stages: Annotated[str, typer.Option("--stages", help="Stage budget ids in order, e.g. f16,f32,f64.")],
    tau: Annotated[float, typer.Option("--tau", help="Stop at the first stage whose confidence >= tau.")] = 0.5,
    fixed: Annotated[str | None, typer.Option("--fixed", help="Fixed budget to compare with (default: last stage).")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Results directory (overrides store.out_dir).")] = None,
    json_out: JsonPath = None,
    repeats: Annotated[int, typer.Option("--repeats", min=1, help="Timing rounds; the policies alternate "
                                         "which runs first.")] = 3,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Run the confidence cascade online, beside a fixed budget and the offline simulation.

    The spec's grid is swept first (resumable: it feeds the offline simulation); then, on the
    same engines, the fixed budget and the cascade run fresh and timed under OUT/cascade/<time>-<id>/
    (a new folder per session), --repeats rounds, each policy from cold engine caches (prefix and
    multimodal caches reset).
    """
    from engine.adaptive.cascade import new_session_dir, run_cascade

    setup_logging(verbose)
    check_json(json_out)
    spec = _load(spec_path, out)
    checked = _preflight(spec, str(spec_path))
    session = new_session_dir(spec.store.out_dir)
    try:
        rep = asyncio.run(run_cascade(spec, stages.split(","), tau, session, fixed, repeats=repeats, checked=checked))
    except Exception as err:
        code = 2 if isinstance(err, ValueError) else _ending(err)  # ValueError: stages the sweep cannot run
        if code is None:
            raise
        fail(err)
        with contextlib.suppress(OSError):
            session.rmdir()  # only when the session wrote nothing (refused before any work)
        if code == EXIT_WARM_ENGINE_STOPPED:
            _leave(code)
        raise typer.Exit(code) from None
    for model_id, ids in rep.skipped_models.items():
        warn(f"{model_id} left out of the cascade: {', '.join(ids)} above its max_frames")
    doc = rep.to_dict()
    try:
        write_json(session / "report.json", doc)  # `framesweep report` shows it
    except JSONValueError as err:  # a value JSON has no form for: named, and no report.json that is not JSON
        fail(err)
        raise typer.Exit(1) from None
    if not to_stdout(json_out):
        _print_cascade(rep, session)
    emit_json(json_out, doc)


def _print_cascade(rep: CascadeReport, session: Path) -> None:
    """The cascade's tables: each policy's accuracy (points) and cost, then the wall time of every round."""
    t = Table(title=f"cascade {' -> '.join(rep.stages)} at tau {rep.tau:g} ({rep.n_items} items)")
    for c in ("policy", "accuracy", "mean frames", "frames decoded", "wall s"):
        t.add_column(c, justify="left" if c == "policy" else "right")

    def num(v: float | None, digits: int = 1) -> str:
        return "n/a" if v is None else f"{v:.{digits}f}"

    t.add_row("cascade (online)", points(rep.accuracy), num(rep.mean_frames_processed),
              num(rep.mean_frames_decoded), num(rep.wall_s))
    t.add_row(f"fixed {rep.fixed_budget}", points(rep.fixed_accuracy), num(rep.fixed_mean_frames),
              num(rep.fixed_mean_frames), num(rep.fixed_wall_s))
    t.add_row("cascade (offline sim)", points(rep.offline.get("accuracy")), num(rep.offline.get("mean_frames")),
              num(rep.offline.get("mean_unique_frames")), "")
    console.print(t)
    rt = Table(title="wall time per round, each policy from cold engine caches (median in the table above)")
    for c in ("round", "first", "fixed s", "cascade s", "cascade / fixed"):
        rt.add_column(c, justify="right")
    for r in rep.rounds:
        rt.add_row(str(r["round"]), r["order"][0], num(r["fixed_wall_s"], 2), num(r["cascade_wall_s"], 2),
                   num(r["ratio"], 3))
    console.print(rt)
    console.print(f"cascade / fixed wall time: median {num(rep.ratio_median, 3)} (range {num(rep.ratio_min, 3)}-"
                  f"{num(rep.ratio_max, 3)} over {len(rep.rounds)} rounds)")
    console.print(f"online and offline stop at the same stage for {points(rep.decision_agreement)}% of items; "
                  f"rows in {session}", soft_wrap=True)


@app.command()
def predict(
    spec_path: Annotated[Path, typer.Argument(metavar="SPEC.toml", help="Sweep spec (TOML).")],
    predictor: Annotated[str, typer.Option("--predictor", help="Id of the spec's model that predicts.")],
    glimpse: Annotated[int, typer.Option("--glimpse", min=0, max=4096,
                                         help="Low-resolution frames shown to the predictor.")] = 0,
    run_items: Annotated[bool, typer.Option("--run/--no-run", help="Answer every item at its predicted budget.")] = True,
    manifest: Annotated[Path | None, typer.Option("--manifest", help="Write the frame-count manifest (JSONL).")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Results directory (overrides store.out_dir).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Hybrid-frame predictor: a model picks each item's frame count from the grid; run items at it."""
    from engine.adaptive.predictions import export_manifest
    from engine.adaptive.predictor import answers_items, predict_frames, run_predicted
    from engine.cli._checks import check_output
    from engine.cli.progress import RunProgress
    from engine.sweep import start_backends

    setup_logging(verbose)
    check_output("--manifest", manifest)
    spec = _load(spec_path, out)
    checked = _preflight(spec, str(spec_path))
    if predictor not in {m.id for m in spec.models}:
        fail(f"--predictor {predictor!r} is not a model of the spec; known: {', '.join(m.id for m in spec.models)}")
        raise typer.Exit(2)
    if run_items and not answers_items(spec):
        names = ", ".join(ds.name for ds in spec.dataset_specs())
        warn(f"{names}: instructions only (no answers): predicting frame counts, not answering")
        run_items = False

    # predicting only needs the predictor's engine; answering needs every model's
    needed = spec if run_items else spec.model_copy(update={"models": [m for m in spec.models if m.id == predictor]})

    async def go(progress: RunProgress) -> tuple[Any, Any]:
        backends = await start_backends(needed, progress=progress)
        try:
            progress.set_stage(f"predicting frame counts with {predictor}")
            preds = await predict_frames(spec, predictor, backends, glimpse_frames=glimpse)
            progress.set_stage("answering at the predicted budgets" if run_items else None)
            summary = await run_predicted(spec, predictor, preds, backends, checked=checked) if run_items else None
            return preds, summary
        finally:
            await asyncio.gather(*(b.close() for b in backends.values()), return_exceptions=True)

    try:
        with RunProgress("predict", [m.id for m in needed.models], first="starting engines") as progress:
            preds, summary = asyncio.run(go(progress))
    except Exception as err:
        if (code := _ending(err)) is None:
            raise
        fail(err)
        if code == EXIT_WARM_ENGINE_STOPPED:
            _leave(code)
        raise typer.Exit(code) from None
    counts = preds.group_by("predicted_frames").len().sort("predicted_frames")
    t = Table(title=f"{predictor}: predicted frame counts ({preds.height} items)")
    t.add_column("frames", justify="right")
    t.add_column("items", justify="right")
    for n, k in counts.iter_rows():
        t.add_row("unparsed" if n is None else str(n), str(k))
    console.print(t)
    if summary is not None:
        console.print(f"answered at the predicted budgets: {summary.jobs_ok} ok, {summary.jobs_failed} failed")
    if manifest is not None:
        n = export_manifest(preds, None, manifest, predictor_id=predictor)
        console.print(f"manifest: {n} lines -> {manifest}")


# The command groups, registered explicitly: a broken module fails here, loudly.
register_analysis_commands(app)
register_dataset_commands(app)
register_engine_commands(app)
register_export_command(app)
register_figures_command(app)
register_compact_command(app)


def main() -> None:
    """The `framesweep` command (and `python -m engine`). Help to a file or a pipe is click's plain help, each
    option on one line, without colour (`engine.cli._console.plain_help`)."""
    if plain_help():
        app.rich_markup_mode = None  # the command groups take the app's mode
        app(prog_name="framesweep", terminal_width=UNWRAPPED, max_content_width=UNWRAPPED)
    else:
        app(prog_name="framesweep")


