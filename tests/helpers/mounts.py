"""A small tmpfs of a test's own, to fill up or make read-only: real ENOSPC and EROFS (mounting needs root; a test
that asks for one is skipped without it, and starts processes: `mount`, `umount`)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def tmpfs(where: Path, size: str = "4m") -> Iterator[Path]:
    """`where` as a tmpfs of `size` while inside (skipped where it cannot be mounted)."""
    where.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True,
                      check=False).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


def fill(where: Path) -> None:
    """Take every byte the file system has left (a file `filler` in `where`)."""
    chunk = b"\0" * 65536
    with open(where / "filler", "wb", buffering=0) as f:
        try:
            while True:
                f.write(chunk)
        except OSError:
            pass
    with open(where / "filler", "ab", buffering=0) as f:
        try:
            while True:
                f.write(b"\0")
        except OSError:
            pass


def read_only(where: Path) -> None:
    """Mount the tmpfs at `where` read-only from now on."""
    r = subprocess.run(["mount", "-o", "remount,ro", str(where)], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
