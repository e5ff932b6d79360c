"""`OUT/.lock`: one driver writes a results directory at a time.

The lock is an exclusive `flock` on `OUT/.lock`, taken before any other work and held until the
driver closes its store. A lock lives on the file, not on the name: if `.lock` is deleted while a
driver holds it, a second driver can create a new `.lock` and take that. So before each commit the
holder checks (`DirLock.check`) that `OUT/.lock` is still the file it locked (same device and
inode). When the name is gone and nobody has made a new one, the holder takes a new `.lock`
(exclusive create, then `flock`) and goes on; when another file is there, another driver may be
writing, and the holder stops without committing (`StoreLockLostError`, exit 3).

A lock that cannot be made at all is one sentence naming `OUT/.lock`: no space (`StoreFullError`, exit 5), a
directory in its place, a read-only file system or a folder this user cannot write (`LockFileError`, a
`ResultsDirError`: exit 2). `DirLock.problem` says the same without taking the lock, for the commands that check
OUT before they start.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
from pathlib import Path

from engine.results.errors import ResultsDirError, StoreFullError, StoreLockedError, StoreLockLostError

__all__ = ["DirLock", "LockFileError"]

log = logging.getLogger(__name__)

_FULL = (errno.ENOSPC, errno.EDQUOT)


class LockFileError(ResultsDirError, OSError):
    """`OUT/.lock` cannot be made or opened: a directory in its place, a read-only or unwritable folder (the message
    names it and what to do). An `OSError` too, as the lock's failures were: a caller that let them pass still
    does."""


class DirLock:
    """The exclusive lock of one results directory (`acquire`, `check` before each commit, `release`)."""

    def __init__(self, out_dir: str | Path) -> None:
        self.out_dir = Path(out_dir)
        self.path = self.out_dir / ".lock"
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock, or raise `StoreLockedError` naming its holder (`StoreFullError` on a full disk,
        `LockFileError` when no lock file can be opened here)."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise self._os_error(err) from err
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 256, 0).decode(errors="replace").strip()
            os.close(fd)
            raise StoreLockedError(
                f"{self.out_dir} is being written by another framesweep driver ({holder or 'unknown'}); "
                "wait for it to finish or use another --out directory"
            ) from None
        self._fd = fd
        self._sign()

    def _sign(self) -> None:
        """Write who holds the lock into it (what a refused driver prints)."""
        assert self._fd is not None
        try:
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, f"pid {os.getpid()} on {os.uname().nodename}\n".encode(), 0)
        except OSError as err:
            self.release()
            raise self._os_error(err) from err

    def _os_error(self, err: OSError) -> Exception:
        if err.errno in _FULL:
            return StoreFullError(err.errno, f"{self.path}: no space left on device to take the directory's lock "
                                  "(nothing was started; free space and rerun)")
        return LockFileError(self._why(err.errno, err.strerror))

    def _why(self, code: int | None, strerror: str | None) -> str:
        if code == errno.EISDIR:
            return f"{self.path} is a directory where framesweep's lock file goes; remove it and rerun"
        if code == errno.EROFS:
            return f"{self.out_dir} is on a read-only file system: its lock ({self.path.name}) cannot be taken"
        if code in (errno.EACCES, errno.EPERM):
            return f"{self.path}: permission denied: this user cannot take the directory's lock"
        return f"{self.path}: the directory's lock cannot be taken ({strerror or 'error ' + str(code)})"

    def problem(self) -> str | None:
        """Why the lock could not be taken here, found without taking it (None: it can be tried; another driver may
        still hold it)."""
        if self.path.is_dir():
            return self._why(errno.EISDIR, None)
        try:
            if os.statvfs(self.out_dir).f_flag & os.ST_RDONLY:
                return self._why(errno.EROFS, None)
        except OSError as err:
            return self._why(err.errno, err.strerror)
        target = self.path if self.path.exists() else self.out_dir
        if not os.access(target, os.W_OK | (0 if target is self.path else os.X_OK)):
            return self._why(errno.EACCES, None)
        return None

    def check(self) -> None:
        """Make sure `OUT/.lock` is still the file this driver locked, before a commit.

        Raises:
            StoreLockLostError: another file is there now (another driver may be writing), or the name is
                gone and a new lock cannot be taken.
        """
        assert self._fd is not None, "check() without the lock"
        mine = os.fstat(self._fd)
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            now = None
        if now is not None and (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino):
            return
        if now is None and self._retake():
            log.warning("%s was deleted while this driver held it; it is taken again (no other driver had made "
                        "a new one)", self.path)
            return
        raise StoreLockLostError(
            f"{self.path} was {'deleted' if now is None else 'replaced'} while this driver held it and another "
            "driver may be writing here now, so this one stopped without committing its unsaved rows (rerun when "
            "no other driver runs)")

    def _retake(self) -> bool:
        """Create and lock a new `.lock` when no other driver made one first (exclusive create)."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError:  # another driver created it first, or it cannot be created
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        old, self._fd = self._fd, fd
        if old is not None:
            os.close(old)  # the deleted file's lock goes with its last descriptor
        try:
            self._sign()
        except OSError:
            return False
        return True

    def release(self) -> None:
        """Let go of the lock (a no-op when not held)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
