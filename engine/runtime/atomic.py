"""The one atomic write: a hidden temp file beside the target, fsync the file, rename, fsync the folder.

A reader (or a rerun after SIGKILL) sees either the old file or the whole new one,
never a torn one; a crash leaves at most a hidden temp file named the framesweep way,
`.NAME.fs-<pid>-<thread>-<8 hex>.tmp`, that `clean_stale_temps` removes (and nothing
else: a user's own `.notes.tmp` beside it is never touched). Every writer of durable
state uses this module: result shards, the manifest, the frame cache, predictions,
synthetic media and tiny checkpoints.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import stat
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_dir", "atomic_write", "clean_stale_temps", "exclusive_lock", "file_sha256", "fsync_dir",
           "is_own_temp", "temp_name"]

# framesweep's temp names: `.NAME.fs-<pid>-<thread id>-<8 hex>.tmp`. Before the `fs-` tag they were
# `.NAME.<pid>-<thread id>-<hex>.tmp`; those too are recognised, so a temp left by an older version is cleaned
_OWN_TEMP = re.compile(r"\..+\.(?:fs-)?\d+-\d+-[0-9a-f]+\.tmp")


def fsync_dir(path: Path | str) -> None:
    """Make a rename inside `path` durable (a no-op where the filesystem refuses directory fsync)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def temp_name(final: Path, suffix: str = ".tmp") -> Path:
    """A hidden, unique temp path beside `final` (same filesystem, so the rename is atomic), named so that
    `clean_stale_temps` can tell it from anyone else's file: `.NAME.fs-<pid>-<thread>-<8 hex>.tmp` (another
    `suffix` for a temp that `clean_stale_temps` must leave alone, e.g. a folder its owner cleans)."""
    tag = f"fs-{os.getpid()}-{threading.get_ident()}-{uuid.uuid4().hex[:8]}"
    return final.with_name(f".{final.name}.{tag}{suffix}")


def atomic_write(final: Path | str, data: bytes | str | Callable[[BinaryIO], object], *,
                 durable: bool = True, sync_dir: bool = True) -> Path:
    """Write `data` (bytes, text, or a function writing to a binary file) to `final` atomically.

    Args:
        final: The target path; its folder is created.
        data: The content, or `write(fh)`.
        durable: fsync the file and the folder (False only for caches that may be rebuilt).
        sync_dir: fsync the folder after the rename (False when the caller writes many files
            into one folder and fsyncs it once at the end with `fsync_dir`).
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(final)
    try:
        with open(tmp, "wb") as fh:
            if callable(data):
                data(fh)
            else:
                fh.write(data.encode() if isinstance(data, str) else data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, final)
        if durable and sync_dir:
            fsync_dir(final.parent)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return final


@contextmanager
def atomic_dir(final: Path | str) -> Iterator[Path]:
    """Build a folder in a hidden temp folder beside `final`; on success it replaces `final` whole.

    Every file and folder built is fsynced before the rename, so a crash leaves either the old
    folder or the whole new one. An old `final` is renamed aside first and removed after: it is
    missing only between two renames, never while it is deleted file by file."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    old: Path | None = None
    try:
        yield tmp
        for path in sorted(tmp.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            if path.is_file() and not path.is_symlink():
                with open(path, "rb") as fh:
                    os.fsync(fh.fileno())
            elif path.is_dir():
                fsync_dir(path)
        fsync_dir(tmp)
        if final.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{final.name}.old.", dir=final.parent))
            os.replace(final, old / final.name)
        os.replace(tmp, final)
        fsync_dir(final.parent)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


@contextmanager
def exclusive_lock(path: Path | str, timeout_s: float | None = None) -> Iterator[None]:
    """Hold an exclusive lock on file `path` (created if missing; not inherited by child processes): one process
    at a time. Waits as long as it takes, or raises TimeoutError after `timeout_s`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if timeout_s is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        else:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"{path} held by another process for {timeout_s:.0f}s") from None
                    time.sleep(0.2)
        yield
    finally:
        os.close(fd)


def is_own_temp(name: str) -> bool:
    """Whether a file name is one `temp_name` gives (this version's or an older one's)."""
    return _OWN_TEMP.fullmatch(name) is not None


def clean_stale_temps(folder: Path | str, also: re.Pattern[str] | None = None) -> list[Path]:
    """Remove the temp files a killed framesweep writer left in `folder`: regular files named as `temp_name`
    names them (or matching `also`, a caller's older convention), nothing else; call only while holding the
    folder's lock."""
    removed = []
    for p in Path(folder).glob(".*.tmp"):
        if not (is_own_temp(p.name) or (also is not None and also.fullmatch(p.name))):
            continue
        try:
            if stat.S_ISREG(p.lstat().st_mode):
                p.unlink()
                removed.append(p)
        except OSError:
            pass
    return removed


def file_sha256(path: Path | str) -> str:
    """SHA-256 of a file's bytes (hashlib.file_digest: no Python loop over chunks)."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()
