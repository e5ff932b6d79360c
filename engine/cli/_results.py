"""How every command opens its results directory: `engine.results.directory.ResultsDir`, once per command.

A directory that cannot be read (none there, no ``results/``, a damaged or missing manifest, an
unreadable shard, a name the system cannot look up) is named in one sentence, the same from every
command, and the command exits 2; so is one that `doctor` or `compact` cannot write (a read-only file
system, a directory where `OUT/.lock` goes), before they start.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
        results = ResultsDir.open(out_dir)
    except ResultsDirError as err:
        fail(err)
        raise typer.Exit(2) from None
    except OSError as err:  # a name too long for the file system, a folder this user cannot read
        fail(f"{out_dir}: cannot be read as a results directory ({err.strerror or err})")
        raise typer.Exit(2) from None
    _remember_task_folders(results.manifest)
    return results


def _remember_task_folders(manifest: dict[str, Any]) -> None:
    """The lmms-eval task folders (``include_path``) the directory's specs name, where the metrics step finds the
    official score of a user's own task (`engine.datasets._lmms_tasks.remember_task_folders`)."""
    from engine.datasets._lmms_tasks import remember_task_folders

    history = manifest.get("history")
    for run in [manifest, *(history if isinstance(history, list) else [])]:
        if isinstance(run, dict):
            remember_task_folders(run.get("spec"))


def need_results_dir(out_dir: Path) -> None:
    """Exit 2 unless `out_dir` holds ``results/`` and both can be written, `OUT/.lock` too (for the commands that
    read no manifest and rewrite the directory: `doctor`, `compact`)."""
    from engine.results.directory import check_results_dir
    from engine.results.errors import ResultsDirError
    from engine.results.lock import DirLock

    try:
        check_results_dir(out_dir)
        why = DirLock(out_dir).problem() or _unwritable(out_dir / "results")
    except ResultsDirError as err:
        fail(err)
        raise typer.Exit(2) from None
    except OSError as err:
        fail(f"{out_dir}: cannot be read as a results directory ({err.strerror or err})")
        raise typer.Exit(2) from None
    if why is not None:
        fail(f"{why} (nothing was changed)")
        raise typer.Exit(2)


def _unwritable(folder: Path) -> str | None:
    return None if os.access(folder, os.W_OK | os.X_OK) else f"{folder}: permission denied: this user cannot write it"
