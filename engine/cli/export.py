"""`framesweep export OUT --to DIR`: the released audit artifact (engine.export)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from engine.cli._console import console, fail, shards_named

__all__ = ["register"]


def export(
    out_dir: Annotated[Path, typer.Argument(help="Results directory of a sweep.")],
    to: Annotated[Path, typer.Option("--to", help="Folder to write items.parquet, provenance.json and README.md.")],
) -> None:
    """Write the audit artifact: per-item outputs per chain with derived annotations and provenance."""
    from engine.export import export as run_export
    if not (out_dir / "results").is_dir():
        fail(f"{out_dir}: no results folder (not a framesweep results directory)")
        raise typer.Exit(2)
    with shards_named(out_dir):
        done = run_export(out_dir, to)
    console.print(f"{done['rows']} rows over {done['chains']} chains -> {done['path']}")


def register(app: typer.Typer) -> None:
    app.command("export")(export)
