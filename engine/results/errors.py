"""What reading or writing a results directory can fail with; each message names the file and what to do.

The CLI maps them to `run`'s exit codes: 2 `ResultsDirError` (a directory that cannot be read:
`NoResultsDirError`, `CorruptShardError` and `ManifestError`, one of them), `ForeignSweepError`; 3 `StoreLockedError` (and `StoreLockLostError`); 5 `StoreFullError`.
"""

from __future__ import annotations

__all__ = ["CorruptShardError", "ForeignSweepError", "ManifestError", "NoResultsDirError", "ResultsDirError",
           "StoreFullError", "StoreLockLostError", "StoreLockedError"]


class StoreLockedError(RuntimeError):
    """Another driver holds this results directory."""


class StoreLockLostError(StoreLockedError):
    """The directory's `.lock` was deleted or replaced while this driver held it: another driver may be writing,
    so nothing more is committed."""


class StoreFullError(OSError):
    """A commit (or taking the lock, or writing the manifest) failed for lack of space; committed shards stay
    readable, the rows stay buffered."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()  # the sentence alone, without "[Errno 28]"


class ForeignSweepError(RuntimeError):
    """The results directory belongs to another sweep."""


class ResultsDirError(RuntimeError):
    """A results directory cannot be read (`engine.results.directory`); the message names what and where."""


class NoResultsDirError(ResultsDirError):
    """No such directory, or no `results/` in it: not a framesweep results directory."""


class CorruptShardError(ResultsDirError):
    """A committed shard cannot be read (or not as the result schema); the message names the file."""


class ManifestError(CorruptShardError):
    """`manifest.json` cannot be read as a framesweep manifest; the message names the file and the field.

    A kind of unreadable file of the results directory, so every command that names an unreadable shard
    (exit 2) names a damaged manifest the same way."""
