"""Media paths: every path an annotation names is resolved under a declared root, or rejected."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from engine.datasets.errors import DatasetError, Problem

__all__ = ["check_root", "find_media", "resolve_under"]


def resolve_under(root: Path, relative: str | os.PathLike[str], *, source: str | Path, row: int | None,
                  item_id: str | None = None) -> Path:
    """`root / relative` with every symlink resolved; raise `DatasetError` if it is not inside `root`.

    The root itself is resolved first (a symlinked root is fine); then the joined path is
    resolved (symlinks of the parts that exist, then ``..``), and must lie inside it. An
    absolute `relative`, ``..`` that climbs out, or a symlink inside the root pointing
    outside it are all rejected, naming the annotation file, row and item (fatal, whatever
    `strict` says). An empty path is a bad row (skipped and counted with ``strict = false``).
    The file need not exist: a missing file is the scheduler's error row, not the adapter's.
    """
    text = os.fspath(relative)
    if not text.strip() or "\x00" in text:
        raise DatasetError([Problem(str(source), row, f"empty or invalid media path {text!r}", item_id,
                                    fatal="\x00" in text)])
    base = Path(root).resolve()
    path = (base / text).resolve()
    if path == base or path.is_relative_to(base):
        return path
    reason = f"media path {text!r} escapes its root {base} (resolves to {path})"
    raise DatasetError([Problem(str(source), row, reason, item_id, fatal=True)])


def find_media(root: Path, stem: str, exts: Sequence[str], *, source: str | Path, row: int | None,
               item_id: str | None = None) -> Path:
    """The first of `root/stem+ext` that exists (each checked with `resolve_under`), else the first one."""
    paths = [resolve_under(root, f"{stem}{ext}", source=source, row=row, item_id=item_id) for ext in exts]
    return next((p for p in paths if p.exists()), paths[0])


def check_root(root: Path | None, what: str) -> list[Problem]:
    """A fatal problem when a declared media root is missing or not a folder."""
    if root is None:
        return []
    if not Path(root).is_dir():
        return [Problem(str(root), None, f"{what} does not exist or is not a folder", fatal=True)]
    return []
