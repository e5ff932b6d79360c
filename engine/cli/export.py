"""`framesweep export OUT --to DIR`: the released audit artifact (engine.export)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated, Any

import typer

from engine.cli._console import console, fail, shards_named, writing

__all__ = ["register"]


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM ends the export through its cleanup (the half-built folder is removed), exit 143."""
    raise SystemExit(128 + signum)


def export(
    out_dir: Annotated[Path, typer.Argument(metavar="OUT", help="Results directory of a sweep.")],
    to: Annotated[Path, typer.Option("--to", help="Folder to write items.parquet, scores.parquet, videos.parquet, "
                                     "provenance.json and README.md (new, empty, or an earlier export, which is "
                                     "replaced; outside OUT).")],
) -> None:
    """Write the audit artifact: per-item outputs per chain with derived annotations, each benchmark's official
    scores, and provenance.

    Exit codes: 0 written; 2 OUT is not a results directory, holds an unreadable shard, or --to cannot
    take the artifact (inside OUT, a file, a folder of other files); 5 no space left to write it; 1 it could
    not be written for another reason (the OS error named). Nothing is left half-written either way."""
    from engine.cli._results import open_results
    from engine.export import ExportTargetError, check_target
    from engine.export import export as run_export

    results = open_results(out_dir)
    try:
        check_target(out_dir, to)
    except ExportTargetError as err:
        fail(err)
        raise typer.Exit(2) from None
    before = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        with shards_named(out_dir), writing("the artifact", to):
            done = run_export(results, to)
    finally:
        signal.signal(signal.SIGTERM, before)
    console.print(f"{done['rows']} rows over {done['chains']} chains -> {done['path']}")


def register(app: typer.Typer) -> None:
    app.command("export")(export)
