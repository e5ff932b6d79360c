"""Analysis commands of the `framesweep` CLI: metrics, report, import-lmms-eval."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from engine.metrics.summary import SummaryOptions

__all__ = ["register"]

console = Console()
err_console = Console(stderr=True)

_Dir = Annotated[Path, typer.Argument(metavar="DIR", help="Results directory (safe while a sweep writes to it).")]
_NBoot = Annotated[int, typer.Option("--n-boot", help="Bootstrap replicates for confidence intervals (0: none).")]
_Seed = Annotated[int, typer.Option("--seed", help="Bootstrap seed.")]
_Pair = Annotated[list[str] | None, typer.Option("--pair", help="Extra transition FROM:TO (repeatable; default all).")]
_Stages = Annotated[str | None, typer.Option("--cascade-stages", help="Comma-separated cascade stages (budget ids).")]
_Match = Annotated[str | None, typer.Option("--cascade-match", help="Fixed budget the cascade must match.")]
_Compare = Annotated[str | None, typer.Option("--compare", help="BASE:OTHER models for checkpoint flows.")]
_Engine = Annotated[str, typer.Option("--engine", help="Polars engine: auto, streaming or in-memory.")]


def _options(n_boot: int, seed: int, pair: list[str] | None, stages: str | None, match: str | None,
             compare: str | None, engine: str) -> SummaryOptions:
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
    )


def _document(out_dir: Path, opts: SummaryOptions) -> dict[str, Any]:
    from engine.metrics.document import summary_document
    from engine.metrics.summary import load_rows, summary_tables

    if not (out_dir / "results").is_dir():
        err_console.print(f"[red]{out_dir}: no results/ directory (not a framesweep results directory?)[/red]")
        raise typer.Exit(2)
    return summary_document(summary_tables(load_rows(out_dir), opts), opts, source=str(out_dir))


def _pts(v: float | None, signed: bool = False) -> str:
    return "n/a" if v is None else (f"{100 * v:+.1f}" if signed else f"{100 * v:.1f}")


def _print_group(g: dict[str, Any]) -> None:
    t = Table(title=f"{g['model_id']} on {g['dataset']}: {g['n_items']} matched items, {g['n_excluded']} excluded")
    for c in ("budget", "accuracy", "CI"):
        t.add_column(c, justify="right")
    cis = g["confidence_intervals"].get("fixed_accuracy", {})
    for b in g["grid"]:
        ci = cis.get(b) if isinstance(cis, dict) else None
        t.add_row(b, _pts(g["fixed_accuracy"].get(b)), f"[{_pts(ci[0])}, {_pts(ci[1])}]" if ci else "")
    console.print(t)
    t = Table(title="rescue / harm per transition (net and churn in points)")
    for c in ("from", "to", "rescue", "harm", "net", "churn"):
        t.add_column(c, justify="right")
    for r in g["transitions"]:
        t.add_row(r["from"], r["to"], str(r["rescue"]), str(r["harm"]), _pts(r["net"], True), _pts(r["churn"]))
    console.print(t)
    best, ow = g["best_fixed"] or {}, (g["text_overwrite"] or {}).get("any") or {}
    term, casc = g["terminal_regression"] or {}, (g["cascade"] or {}).get("match") or {}
    console.print(
        f"best fixed {best.get('budget_id', 'n/a')} {_pts(best.get('accuracy'))}, oracle {_pts(g['oracle_accuracy'])}, "
        f"headroom {_pts(g['oracle_headroom'])} pts; visual confusion {_pts(g['visual_confusion'])} "
        f"(visual only {_pts(g['visual_confusion_visual_only'])}); text overwrite (any) {_pts(ow.get('share_all'))}; "
        f"terminal regressions {_pts(term.get('share'))}"
    )
    if casc:
        console.print(f"cascade matches {casc['fixed_budget']} at tau {casc['tau']} with "
                      f"{_pts(casc['frames_saved'])}% fewer frames "
                      f"({_pts(casc['unique_frames_saved'])}% fewer decoded)")
    if g["generation"]:
        gen = g["generation"]
        console.print(f"open tasks: {gen['n_items']} items, oracle gap {_pts(gen['oracle_gap'])} pts")


def metrics(
    out_dir: _Dir,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the metrics document here.")] = None,
    n_boot: _NBoot = 1000, seed: _Seed = 0, pair: _Pair = None, cascade_stages: _Stages = None,
    cascade_match: _Match = None, compare: _Compare = None, engine: _Engine = "auto",
) -> None:
    """Paired item-level metrics of a sweep: tables here, the full document as JSON with --json."""
    doc = _document(out_dir, _options(n_boot, seed, pair, cascade_stages, cascade_match, compare, engine))
    for g in doc["groups"]:
        _print_group(g)
    if not doc["groups"]:
        console.print("no results yet")
    if json_path is not None:
        json_path.write_text(json.dumps(doc, indent=2, allow_nan=False))
        console.print(f"wrote {json_path}")


def report(
    out_dir: _Dir,
    output: Annotated[Path, typer.Option("-o", "--output", help="HTML file to write.")] = Path("report.html"),
    title: Annotated[str | None, typer.Option("--title", help="Page title.")] = None,
    n_boot: _NBoot = 1000, seed: _Seed = 0, pair: _Pair = None, cascade_stages: _Stages = None,
    cascade_match: _Match = None, compare: _Compare = None, engine: _Engine = "auto",
) -> None:
    """One self-contained HTML report (inline SVG figures, readable offline)."""
    from engine.report import write_report

    doc = _document(out_dir, _options(n_boot, seed, pair, cascade_stages, cascade_match, compare, engine))
    write_report(doc, output, title or f"framesweep: {out_dir.name}")
    console.print(f"wrote {output}")


def import_lmms_eval(
    paths: Annotated[list[Path], typer.Argument(metavar="LOGS", help="lmms-eval samples files or directories.")],
    out: Annotated[Path, typer.Option("--out", help="framesweep results directory to write.")],
    frames: Annotated[int | None, typer.Option("--frames", help="Frame budget (default: from results.json).")] = None,
    budget_id: Annotated[str | None, typer.Option("--budget-id", help="Budget id (default: text / f<frames>).")] = None,
    model_id: Annotated[str | None, typer.Option("--model-id", help="Model id (default: from the log).")] = None,
    dataset: Annotated[str | None, typer.Option("--dataset", help="Dataset name (default: the task).")] = None,
    sweep_id: Annotated[str, typer.Option("--sweep-id", help="Recorded on every row.")] = "lmms-eval",
) -> None:
    """Import lmms-eval per-sample logs (one run per budget) as a framesweep results dataset."""
    from engine.datasets.lmms_eval_logs import import_lmms_eval as run_import
    from engine.store import StoreLockedError

    try:
        summary = run_import(paths, out, frames=frames, budget_id=budget_id, model_id=model_id, dataset=dataset,
                             sweep_id=sweep_id)
    except (ValueError, OSError, StoreLockedError) as err:
        err_console.print(f"[red]{err}[/red]")
        raise typer.Exit(2) from None
    for name, b in summary.budgets.items():
        console.print(f"{name} -> budget {b}")
    console.print(f"imported {summary.runs} runs: {summary.rows} rows written, "
                  f"{summary.skipped} already there -> {out}")


def register(app: typer.Typer) -> None:
    """Add the analysis commands to the `framesweep` app."""
    logging.getLogger(__name__).debug("registering analysis commands")
    app.command("metrics")(metrics)
    app.command("report")(report)
    app.command("import-lmms-eval")(import_lmms_eval)
