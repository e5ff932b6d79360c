"""`framesweep figures OUT --to DIR`: every figure of the report as a file (engine.report.figures)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from engine.cli._checks import PolarsEngine
from engine.cli._console import console, fail, writing

__all__ = ["register"]


def _from_json(path: Path) -> dict[str, Any]:
    """A saved metrics document (`metrics --json`) or checkpoint document (`checkpoints --json`)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        fail(f"{path}: not a readable JSON document ({err})")
        raise typer.Exit(2) from None
    schema = str(doc.get("schema", "")) if isinstance(doc, dict) else ""
    if schema.startswith("framesweep.checkpoints/"):
        return {"groups": [], "checkpoints": doc}
    if schema.startswith("framesweep.metrics/"):
        return doc
    fail(f"{path}: neither a metrics document (`framesweep metrics OUT --json`) nor a checkpoint document "
         f"(`framesweep checkpoints OUT --json`): schema {schema or 'missing'}")
    raise typer.Exit(2)


def figures(
    source: Annotated[Path, typer.Argument(metavar="OUT", help="Results directory, or a metrics or checkpoint "
                                           "JSON document written by `metrics --json` / `checkpoints --json`.")],
    to: Annotated[Path, typer.Option("--to", help="Folder to write the figures in (made if missing; files of "
                                     "the same names are replaced).")],
    fmt: Annotated[str, typer.Option("--format", help="pdf, png (300 dpi) or svg.")] = "pdf",
    n_boot: Annotated[int, typer.Option("--n-boot", min=0, help="Bootstrap replicates for the confidence bands "
                                        "(0: no band).")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 0,
    protocol: Annotated[list[str] | None, typer.Option("--protocol", help="Only this chain (repeatable).")] = None,
    checkpoint_models: Annotated[str | None, typer.Option(
        "--checkpoint-models", help="Comma-separated checkpoints (base first) for the temporal-trap figures "
        "(default: the study in the run's spec, when it has one).")] = None,
    image_datasets: Annotated[str | None, typer.Option(
        "--image-datasets", help="Comma-separated image benchmarks (default: from the items' media).")] = None,
    engine: Annotated[PolarsEngine, typer.Option("--engine", help="Polars engine: auto, streaming or "
                                                 "in-memory.")] = "auto",
) -> None:
    """Write every figure of the report as a file: one per figure, named by what it shows
    (accuracy--MODEL--DATASET--PROTOCOL.pdf, ...), sized for a two-column paper.

    Exit codes: 0 written (a figure without data is not written); 2 OUT is neither a results directory
    nor a metrics or checkpoint document, an unknown --format, or an unreadable shard; 5 no space left to write
    a figure; 1 a file could not be written for another reason (the OS error named)."""
    from engine.cli.analysis import _options, report_document
    from engine.report.figures import FIGURE_FORMATS, write_figures

    if fmt not in FIGURE_FORMATS:
        fail(f"--format {fmt!r}: use one of {', '.join(FIGURE_FORMATS)}")
        raise typer.Exit(2)
    if source.is_file():
        doc = _from_json(source)
    else:
        opts = _options(n_boot, seed, None, None, None, None, engine, protocol)
        doc = report_document(source, opts, checkpoint_models=checkpoint_models, image_datasets=image_datasets)
    with writing("the figures", to):
        written = write_figures(doc, to, fmt)
    console.print(f"wrote {len(written)} figures to {to}", markup=False, soft_wrap=True)
    for path in written:
        console.print(f"  {path.name}", markup=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("figures")(figures)
