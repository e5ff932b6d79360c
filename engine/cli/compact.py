"""`framesweep compact OUT`: many small result shards rewritten as a few large ones (engine.results.compact)."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Annotated

import typer

from engine.cli._console import console, fail, warn
from engine.results.errors import ResultsDirError, StoreFullError, StoreLockedError
from engine.results.shards import GRACE_S

__all__ = ["register"]

_SHOWN = 10  # skipped shards named one by one; the rest counted


def compact(
    out_dir: Annotated[Path, typer.Argument(metavar="OUT", help="Results directory.")],
    grace_s: Annotated[float, typer.Option("--grace-s", min=0, help="Seconds the compacted shards' inputs stay "
                                           "on disk for readers that listed the folder before (0: removed at "
                                           "once; only when no `status`, `metrics`, ... is reading OUT).")] = GRACE_S,
) -> None:
    """Compact OUT's small shards of its own sweep into a few large ones (every row kept as it was), so that
    `status` and `metrics` open a few files instead of thousands. Takes the directory's lock: no sweep may be
    writing (a running sweep compacts by itself). Shards of another sweep and unreadable ones are left as
    they are.

    Exit codes: 0 done; 2 OUT is not a results directory, its manifest is damaged, or it cannot be written (a
    read-only file system, a directory where OUT/.lock goes); 3 a sweep holds OUT; 5 the disk is full (every
    shard is intact)."""
    from engine.cli._results import need_results_dir
    from engine.results.compact import compact_dir

    need_results_dir(out_dir)
    try:
        done = compact_dir(out_dir, grace_s=grace_s)
    except StoreLockedError as err:
        fail(err)
        raise typer.Exit(3) from None
    except ResultsDirError as err:  # the manifest
        fail(err)
        raise typer.Exit(2) from None
    except StoreFullError as err:
        fail(err)
        raise typer.Exit(5) from None
    except OSError as err:
        if err.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        fail(f"{out_dir}: no space left on device to write a compacted shard (every shard is intact)")
        raise typer.Exit(5) from None
    for path, why in done.skipped[:_SHOWN]:
        warn(f"left as it is: {path.name}: {why}")
    if len(done.skipped) > _SHOWN:
        warn(f"... and {len(done.skipped) - _SHOWN} more shard(s) left as they are")
    waiting = (f"; the {done.waiting} shard(s) compacted stay on disk for {grace_s:g} s (readers may still read "
               "them; the next compaction or run removes them)") if done.waiting else ""
    console.print(f"{out_dir}: {done.inputs} shard(s) compacted into {done.outputs} ({done.rows} rows); "
                  f"{done.removed} removed{waiting}", soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("compact")(compact)
