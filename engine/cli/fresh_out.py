"""What a run made in OUT and was refused in before it recorded anything: removed again.

`run` takes OUT before it reads its items (`engine.results.store.ResultStore` makes `OUT/results/`
and `OUT/.lock`), so a run that stops there (a wrong `--data`, items that do not load) would leave an
empty results folder behind, which later reads as a results directory. `NewInOut` notes what of OUT
does not exist before the run (OUT and its missing parents, `results/`, `.lock`); `discard` removes
those again after such a failure, holding OUT's lock meanwhile: a folder only while it is empty (it
holds nothing else the run or anyone else put there), never what existed before, and nothing once
another driver holds OUT.

A folder that holds another sweep is refused before the run touches it (`refuse_foreign`: its manifest
read, no lock taken, no log written); the store refuses it again under the lock, for a manifest
written meanwhile.
"""

from __future__ import annotations

import logging
from pathlib import Path

from engine.results.errors import ForeignSweepError, ManifestError, StoreLockedError
from engine.results.lock import DirLock
from engine.results.manifest import read_manifest

__all__ = ["NewInOut", "refuse_foreign"]

log = logging.getLogger(__name__)


class NewInOut:
    """What of a results folder OUT did not exist before a run (see the module docstring)."""

    def __init__(self, out: Path) -> None:
        self.out = Path(out)
        self.folders: list[Path] = []
        """OUT's missing folders, deepest first: `results/`, OUT, its missing parents."""
        self.lock_file = False
        here = self.out.absolute()
        try:
            self.lock_file = not (here / ".lock").exists()
            for folder in (here / "results", here):
                if not folder.exists():
                    self.folders.append(folder)
            while not here.parent.exists() and here.parent != here:
                here = here.parent
                self.folders.append(here)
        except OSError:  # a name the file system refuses: the run fails on it before making anything
            self.folders, self.lock_file = [], False

    def discard(self) -> None:
        """Remove what was not there before, while OUT's lock is this process's: the `.lock` file, then each
        folder while it is empty (deepest first)."""
        if not self.out.is_dir() or not (self.folders or self.lock_file):
            return
        lock = DirLock(self.out)
        try:
            lock.acquire()
        except (StoreLockedError, OSError):  # another driver took it meanwhile: it is theirs now
            return
        try:
            if self.lock_file:
                (self.out / ".lock").unlink(missing_ok=True)
            for folder in self.folders:
                folder.rmdir()  # fails on a folder that holds anything: it stays, and so do its parents
        except OSError as err:
            log.info("left %s as it is (%s)", self.out, err)
        finally:
            lock.release()


def refuse_foreign(out: Path, sweep_id: str) -> None:
    """Raise `ForeignSweepError` when OUT's manifest names another sweep, before anything is written there (an
    unreadable manifest is left to the run, which names it)."""
    try:
        other = read_manifest(out).get("sweep_id")
    except (ManifestError, OSError):
        return
    if other is not None and other != sweep_id:
        raise ForeignSweepError(f"{out} holds sweep {other!r}, not {sweep_id!r}; use another --out directory (or "
                                "the spec's sweep_id); nothing was written there")
