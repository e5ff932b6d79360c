"""`framesweep run` and `demo`: a sweep from a spec file or from flags, shown while it runs, logged, ended with
one exit code, and summed up (the accuracy tables per chain, `OUT/summary.json`).

What a run prints, in order: the progress (`engine.cli.progress`: phases with their elapsed time from the
first second; plain lines when stderr is no terminal), the run log's path (`OUT/logs/run-<time>.log`,
`engine.cli.runlog`) once the run holds OUT (its plan recorded), the Ray cluster it joined and Ray's own log
folder once Ray is up, and at the end one summary line, the accuracy and rescue/harm tables per chain, and
`OUT/summary.json`'s path. A run that ends on an error prints one sentence (and where the log is) with its
exit code; one refused before it held OUT writes no log there, and leaves no folder it made
(`engine.cli.fresh_out`).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.resources
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from engine.cli._console import console, err_console, fail, setup_logging, warn
from engine.cli.fresh_out import NewInOut, refuse_foreign
from engine.cli.progress import RunProgress
from engine.cli.quick import LMMS_FLAGS, QUICK_FLAGS, lmms_quick_spec, load_with_overrides, quick_spec
from engine.cli.runlog import RunLog
from engine.cli.summary import print_tables, run_tables, write_summary
from engine.config import SpecError, SweepSpec, load_spec
from engine.datasets.errors import DatasetError
from engine.results.directory import ResultsDir
from engine.results.errors import ResultsDirError
from engine.results.store import ForeignSweepError, StoreFullError, StoreLockedError
from engine.runtime.placement import PlacementError
from engine.runtime.secrets import redact

if TYPE_CHECKING:
    from engine.sweep import Sweep, SweepSummary
    from engine.sweep.preflight import Preflight

__all__ = ["EXIT_ENGINE_START", "EXIT_FAILED_JOBS", "EXIT_PERMANENT_FAILURES", "EXIT_STORE_FULL",
           "EXIT_WARM_ENGINE_STOPPED", "ending", "leave", "register", "run_spec"]

log = logging.getLogger(__name__)

EXIT_FAILED_JOBS = 4
"""`run` finished, but some jobs failed for a transient reason (engine, server, timeout): a rerun retries them."""
EXIT_PERMANENT_FAILURES = 6
"""`run` finished, and every failed job failed for good (missing or undecodable media, a frame plan the video cannot
meet: `error_kind` permanent): a rerun fails them the same way until the media are fixed or the items dropped."""
EXIT_STORE_FULL = 5
"""A commit failed for lack of disk space (committed shards stay readable)."""
EXIT_WARM_ENGINE_STOPPED = 7
"""The engines the run used are gone: a warm engine was stopped (`engines down`) mid-run, or the local Ray cluster the
run started stopped under it (its GCS or raylet killed: `ray stop`); committed rows are kept, a rerun continues."""
EXIT_ENGINE_START = 8
"""An engine died while it started (vLLM refused a setting, the checkpoint did not load): one paragraph names
vLLM's error and the spec fields it points at; committed rows are kept."""


def ending(err: BaseException) -> int | None:
    """The exit code of an error that ends `run`, `cascade` or `predict` with one sentence (None: a bug, raised).

    2 a spec, dataset, preflight or results-directory problem (a corrupt shard or manifest, another sweep's
    directory, an `OUT/.lock` that cannot be made: a directory in its place, a read-only file system; a changed
    spec over committed keys, engines that cannot be placed, a family's prompt that its checkpoint's chat template
    does not write); 3 another driver holds the directory (or took it
    over); 5 no space left; 7 the engines are gone (a warm engine stopped, or the run's own
    Ray cluster) while the run used them; 8 an engine did not start."""
    from engine.backends.chat_template import ChatTemplateError
    from engine.backends.warm import WarmEngineStoppedError
    from engine.runtime.cluster import ClusterLostError
    from engine.sweep.engines import EngineStartError
    from engine.sweep.resume import AnswerMismatchError

    codes: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], int], ...] = (
        (StoreLockedError, 3), (StoreFullError, EXIT_STORE_FULL),
        ((WarmEngineStoppedError, ClusterLostError), EXIT_WARM_ENGINE_STOPPED),
        (EngineStartError, EXIT_ENGINE_START),
        ((DatasetError, SpecError, ForeignSweepError, ResultsDirError, PlacementError, AnswerMismatchError,
          ChatTemplateError), 2))
    return next((code for kinds, code in codes if isinstance(err, kinds)), None)


def leave(code: int) -> None:
    """Leave at once with `code` (after a signal, or a warm engine stopped: Ray's exit-time shutdown would wait on a
    cluster going down, or turn SIGTERM into an abort)."""
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(code)


def _note(text: str) -> None:
    err_console.print(redact(text), style="dim", soft_wrap=True, highlight=False)


def _say_ray() -> None:
    """Once Ray is up: which cluster, where Ray keeps its logs, the dashboard."""
    from engine.runtime.cluster import ray_session

    s = ray_session()
    how = {"address": "--address", "RAY_ADDRESS": "RAY_ADDRESS", "engines up": "the local cluster of `engines up`",
           "local": "a new local cluster"}.get(s.get("how", ""), s.get("how", "?"))
    text = f"Ray: {how}" + (f" at {s['address']}" if s.get("address") else "")
    text += f"; Ray's logs: {s['logs']}" if s.get("logs") else ""
    text += f"; dashboard: {s['dashboard']}" if s.get("dashboard") else ""
    _note(text)


def _failed_jobs(failed: int, permanent: int, out_dir: Path) -> int:
    """0 when nothing failed; else say which failures a rerun can fix: exit 4 when some are transient, 6 when all
    are permanent."""
    if not failed:
        return 0
    transient = failed - permanent
    if permanent:
        warn(f"{permanent} job(s) failed for good (missing or undecodable media, or a frame plan the video cannot "
             f"meet; `framesweep status {out_dir}` names them): fix the media or drop the items; until then a rerun "
             "fails them the same way")
    if transient:
        warn(f"{transient} job(s) failed for a transient reason (engine, server, timeout; error rows); rerun the same "
             "command to retry them")
        return EXIT_FAILED_JOBS
    return EXIT_PERMANENT_FAILURES


def _sweep(spec: SweepSpec, every_s: float, spec_doc: dict | None, run_log: RunLog, checked: Preflight
           ) -> tuple[SweepSummary, ResultsDir | None]:
    """Run the sweep under its progress display (`checked`: its preflight, not run again); once the run holds the
    directory (its plan recorded) its log opens there and a quick path's spec is written to OUT/spec.toml. Returns
    the summary and the results directory as the run opened it (None: it never held it)."""
    from engine.backends.kinds import in_cluster
    from engine.cli.local_assets import build_local_assets, local_assets
    from engine.config.toml_out import write_spec_toml
    from engine.sweep import Sweep

    refuse_foreign(Path(spec.store.out_dir), spec.sweep_id)  # before the run writes its lock or anything there
    uses_ray = any(in_cluster(m) for m in spec.models)
    steps = local_assets(spec)  # a fresh machine's tiny checkpoints and synthetic videos: phases of their own
    progress = RunProgress(spec.sweep_id, [m.id for m in spec.models], every_s=every_s, on_ray=_say_ray,
                           uses_ray=uses_ray)
    progress.set_stage(steps[0][0] if steps else None)
    with progress:
        def hook(event: str, n: int) -> None:
            if event == "held":  # the lock first: a second driver or a full disk builds nothing
                build_local_assets(steps, progress)
            if event == "total" and not run_log.held and (path := run_log.hold()) is not None:
                _note(f"log: {path}")
            if event == "total" and spec_doc is not None:
                write_spec_toml(spec_doc, Path(spec.store.out_dir) / "spec.toml")
                _note(f"spec: {Path(spec.store.out_dir) / 'spec.toml'} (`framesweep run` it to repeat this run)")
            progress(event, n)

        sweep = Sweep(spec, progress=hook, checked=checked)
        return asyncio.run(_watched(sweep)), sweep.results


async def _watched(sweep: Sweep) -> SweepSummary:
    """Run `sweep`; if the local Ray cluster it started stops under it, it stops as after a signal (committing what
    finished) and `ClusterLostError` says so (Ray's driver would wait 60 s for the GCS, then exit 1)."""
    from engine.runtime.cluster import ClusterLostError, cluster_lost, watching_cluster

    loop = asyncio.get_running_loop()

    def stop() -> None:  # on the watcher's thread
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: the sweep is over anyway
            loop.call_soon_threadsafe(sweep.request_stop)

    with watching_cluster(stop):
        try:
            summary = await sweep.run()
        except (StoreFullError, StoreLockedError):
            raise  # the results directory's own trouble, whatever Ray did
        except Exception:
            if cluster_lost() is None:
                raise
            summary = sweep.summary  # what failed for want of the cluster (an engine's start) is that loss
    if (what := cluster_lost()) is not None:
        raise ClusterLostError(what, summary.jobs_ok + summary.jobs_failed)
    return summary


def _finish(spec: SweepSpec, summary: SweepSummary, results: ResultsDir | None, log_path: Path | None) -> int:
    """The run's ending: its line, warnings, and (from `results`, the directory as the run opened it, relisted for
    the shards it committed) the tables it prints and keeps in OUT/summary.json; returns the exit code."""
    out = spec.store.out_dir
    console.print(
        f"{spec.sweep_id}: {summary.jobs_ok} ok, {summary.jobs_failed} failed, "
        f"{summary.jobs_skipped} already committed; {summary.videos} videos, {summary.decode_calls} decode passes, "
        f"{summary.frames_decoded} frames decoded; {summary.wall_s:.1f}s -> {out}", soft_wrap=True)
    for mid, info in summary.engines.items():
        if info.get("warm"):
            console.print(f"{mid}: warm engine {info['warm']} reused (`framesweep engines` lists it)")
    if summary.foreign_shards:
        warn(f"{len(summary.foreign_shards)} shard(s) of another sweep in {out / 'results'} were "
             "ignored (their rows count for nothing here): " + ", ".join(Path(p).name for p in summary.foreign_shards))
    code = 130 if summary.stopped else _failed_jobs(summary.jobs_failed, summary.jobs_failed_permanent, out)
    if summary.stopped:
        warn("stopped early; rerun the same command to finish")
    if results is not None:
        tables = run_tables(results.relisted())  # the run's own open, not a second one
        print_tables(tables)
        try:
            _note(f"summary: {write_summary(spec, summary, tables, code, log_path)}")
        except OSError as err:
            warn(f"could not write {out / 'summary.json'}: {err.strerror or err}")
    return code


def run_spec(spec: SweepSpec, source: str = "<spec>", *, every_s: float = 30.0, spec_doc: dict | None = None) -> int:
    """Run `spec` with its log, progress and ending; returns the exit code (130 and 7 leave the process at once)."""
    from engine.sweep.preflight import preflight

    try:
        checked = preflight(spec, source)
    except SpecError as err:
        fail(err)
        return 2
    out = Path(spec.store.out_dir)
    made = NewInOut(out)
    with RunLog(out) as run_log:
        try:
            summary, results = _sweep(spec, every_s, spec_doc, run_log, checked)
        except Exception as err:
            if not run_log.held:  # refused before it recorded a plan: what it made in OUT goes again
                made.discard()
            if (code := ending(err)) is None:
                log.exception("the run failed")
                raise
            log.info("the run ended with exit %d: %s", code, err, exc_info=code == EXIT_ENGINE_START)  # the file only
            fail(err)
            if run_log.path is not None:
                _note(f"the run's log (every engine line included): {run_log.path}")
            if code == EXIT_WARM_ENGINE_STOPPED:
                leave(code)
            return code
        code = _finish(spec, summary, results, run_log.path)
    if summary.stopped:
        # a signal stopped the run and every finished row is committed: leave at once, since Ray's own
        # SIGTERM handler in this process turns its exit-time shutdown into an abort (-6 instead of 130)
        leave(130)
    return code


def _spec(spec_path: Path | None, out: Path | None, quick: dict, overrides: dict) -> tuple[SweepSpec, dict | None]:
    """The spec of `run`: the file with its overrides, or the quick path's (with the dict `OUT/spec.toml` gets)."""
    given = [flag for flag, key in QUICK_FLAGS.items() if quick.get(key) is not None]
    if spec_path is not None:
        if given:
            verb = "builds" if len(given) == 1 else "build"
            raise SpecError(f"{', '.join(given)} {verb} a spec without a file: leave {spec_path} out, or set them in it")
        return load_with_overrides(spec_path, out, **overrides), None
    if quick.get("lmms_task") is not None:
        return _lmms_spec(out, quick, overrides)
    if lmms_only := [f for f in LMMS_FLAGS if quick.get(QUICK_FLAGS[f]) is not None]:
        raise SpecError(f"{', '.join(lmms_only)} go with --lmms-eval-task (an lmms-eval task's folders)")
    missing = [flag for flag, value in (("--model", quick["model"]), ("--dataset", quick["dataset"]), ("--out", out))
               if value is None]
    if missing:
        raise SpecError(f"give a spec file (SPEC.toml), or {', '.join(missing)} for a run without one "
                        "(`framesweep run -h`)")
    if overrides["models"] or overrides["budgets"]:
        raise SpecError("--models and --budgets choose from a spec file; without one, give --model and --frames")
    assert out is not None
    plain = {k: quick[k] for k in ("model", "family", "dataset", "data")}
    return quick_spec(**plain, frames=quick["frames"] or "0,8,16,32", limit=overrides["limit"], out=out)


def _lmms_spec(out: Path | None, quick: dict, overrides: dict) -> tuple[SweepSpec, dict | None]:
    """The spec of ``run --lmms-eval-task NAME`` (`engine.cli.quick.lmms_quick_spec`)."""
    if clash := [f for f in ("--dataset", "--data") if quick.get(QUICK_FLAGS[f]) is not None]:
        raise SpecError(f"{', '.join(clash)}: --lmms-eval-task names the dataset (its folders: --dataset-path, "
                        "--media-root)")
    missing = [flag for flag, value in (("--model", quick["model"]), ("--out", out)) if value is None]
    if missing:
        raise SpecError(f"--lmms-eval-task also needs {', '.join(missing)} (`framesweep run -h`)")
    if overrides["models"] or overrides["budgets"]:
        raise SpecError("--models and --budgets choose from a spec file; without one, give --model and --frames")
    assert out is not None
    return lmms_quick_spec(task=quick["lmms_task"], model=quick["model"], family=quick["family"],
                           frames=quick["frames"] or "0,8,16,32", limit=overrides["limit"], out=out,
                           media_root=quick["media_root"], include_path=quick["include_path"],
                           dataset_path=quick["dataset_path"])


def _ids(text: str | None) -> list[str] | None:
    return [s.strip() for s in text.split(",") if s.strip()] if text else None


def run(
    spec_path: Annotated[Path | None, typer.Argument(
        metavar="SPEC.toml", help="Sweep spec (TOML); leave it out to build one from --model, --dataset, --frames.",
        show_default=False)] = None,
    out: Annotated[Path | None, typer.Option("--out", metavar="OUT", help="Results directory (overrides "
                                             "store.out_dir).")] = None,
    model: Annotated[str | None, typer.Option("--model", metavar="PATH", help="Without a spec: the checkpoint "
                                              "(a folder, a hub id, or tiny:<family>).")] = None,
    family: Annotated[str | None, typer.Option("--family", help="Without a spec: the model family (default: from "
                                               "tiny:<family> or the checkpoint's config.json).")] = None,
    dataset: Annotated[str | None, typer.Option("--dataset", metavar="NAME", help="Without a spec: the dataset "
                                                "adapter (`framesweep datasets`).")] = None,
    data: Annotated[Path | None, typer.Option("--data", metavar="DIR", help="Without a spec: the dataset's folder, "
                                              "laid out as its release (`framesweep fetch NAME --to DIR`).")] = None,
    frames: Annotated[str | None, typer.Option("--frames", help="Without a spec: frame counts of the budgets "
                                               "(default 0,8,16,32).")] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Keep the first N questions of each "
                                              "dataset.")] = None,
    models: Annotated[str | None, typer.Option("--models", help="Only these model ids of the spec (a,b).")] = None,
    budgets: Annotated[str | None, typer.Option("--budgets", help="Only these budget ids of the spec "
                                                "(text,f16).")] = None,
    address: Annotated[str | None, typer.Option("--address", help="Ray cluster to join (default: RAY_ADDRESS, "
                                                "else the local cluster of `engines up`, else a new one).")] = None,
    dashboard: Annotated[bool, typer.Option("--dashboard", help="Start Ray's dashboard with a new local "
                                            "cluster.")] = False,
    progress_every: Annotated[float, typer.Option("--progress-every", min=1.0, metavar="SECONDS", help="When "
                                                  "stderr is no terminal: a progress line this often.")] = 30.0,
    lmms_task: Annotated[str | None, typer.Option("--lmms-eval-task", metavar="NAME", help="Without a spec: an "
                                                  "lmms-eval task as the dataset (`framesweep datasets "
                                                  "--lmms-eval`); ends with its official score per budget and "
                                                  "the audit.")] = None,
    media_root: Annotated[Path | None, typer.Option("--media-root", metavar="DIR", help="With --lmms-eval-task: "
                                                    "the folder of its videos (default: lmms-eval's, under "
                                                    "HF_HOME).")] = None,
    include_path: Annotated[Path | None, typer.Option("--include-path", metavar="DIR", help="With "
                                                      "--lmms-eval-task: a folder of your own task YAMLs.")] = None,
    dataset_path: Annotated[Path | None, typer.Option("--dataset-path", metavar="DIR", help="With "
                                                      "--lmms-eval-task: a local copy of its dataset (default: "
                                                      "its hub id in the Hugging Face cache).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Run (or resume) a sweep: every model x item x budget not yet committed.

    With SPEC.toml: --limit, --models and --budgets narrow it.

    Without one: --model, --dataset and --out build the spec (written to OUT/spec.toml); --lmms-eval-task NAME in
    place of --dataset sweeps an lmms-eval task.
    """
    setup_logging(verbose)
    quick = {"model": model, "family": family, "dataset": dataset, "data": data, "frames": frames,
             "lmms_task": lmms_task, "media_root": media_root, "include_path": include_path,
             "dataset_path": dataset_path}
    try:
        spec, doc = _spec(spec_path, out, quick, {"limit": limit, "models": _ids(models), "budgets": _ids(budgets)})
    except SpecError as err:
        fail(err)
        raise typer.Exit(2) from None
    update = {k: v for k, v in (("ray_address", address), ("ray_dashboard", dashboard or None)) if v is not None}
    spec = spec.model_copy(update=update) if update else spec
    code = run_spec(spec, str(spec_path or "the command line"), every_s=progress_every, spec_doc=doc)
    if code == 0 and lmms_task is not None:
        from engine.cli.analysis import print_audit

        print_audit(Path(spec.store.out_dir), official=True)
    raise typer.Exit(code)


def demo(
    out: Annotated[Path, typer.Option("--out", metavar="OUT", help="Results directory.")] = Path("runs/demo"),
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Build the trained tiny checkpoint and the synthetic benchmark if missing, run the demo grid, print the audit."""
    setup_logging(verbose)
    text = importlib.resources.files("engine.grids").joinpath("demo.toml").read_text()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "demo.toml"
        path.write_text(text)
        try:
            spec = load_spec(path, out)
        except SpecError as err:
            fail(err)
            raise typer.Exit(2) from None
    code = run_spec(spec)
    if code == 0:
        from engine.cli.analysis import print_audit

        print_audit(Path(spec.store.out_dir))
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add `run` and `demo` to the framesweep app."""
    app.command("run")(run)
    app.command("demo")(demo)
