"""How every command opens its results directory: `engine.results.directory.ResultsDir`, once per command.

A directory that cannot be read (none there, no ``results/``, a damaged or missing manifest, an
unreadable shard) is named in one sentence, the same from every command, and the command exits 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from engine.cli._console import fail

if TYPE_CHECKING:
    from engine.results.directory import ResultsDir

__all__ = ["need_results_dir", "open_results"]


def open_results(out_dir: Path | ResultsDir) -> ResultsDir:
    """`ResultsDir.open(out_dir)` (`out_dir` itself when it is open already); exit 2 naming what cannot be read."""
    from engine.results.directory import ResultsDir
    from engine.results.errors import ResultsDirError

    try:
        if isinstance(out_dir, ResultsDir):
            return out_dir
        return ResultsDir.open(out_dir)
    except ResultsDirError as err:
        fail(err)
        raise typer.Exit(2) from None


def need_results_dir(out_dir: Path) -> None:
    """Exit 2 unless `out_dir` holds ``results/`` (for the commands that read no manifest: `doctor`, `compact`)."""
    from engine.results.directory import check_results_dir
    from engine.results.errors import ResultsDirError

    try:
        check_results_dir(out_dir)
    except ResultsDirError as err:
        fail(err)
        raise typer.Exit(2) from None
