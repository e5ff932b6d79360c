"""Media paths stay inside their root, symlinks resolved; errors name file, row and item."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.datasets._paths import resolve_under
from engine.datasets.errors import DatasetError


def test_inside_root_and_missing_file_ok(tmp_path: Path) -> None:
    root = tmp_path / "media"
    (root / "sub").mkdir(parents=True)
    assert resolve_under(root, "sub/a.mp4", source="ann.json", row=0) == (root / "sub" / "a.mp4").resolve()
    assert resolve_under(root, "sub/../b.mp4", source="ann.json", row=0) == (root / "b.mp4").resolve()


@pytest.mark.parametrize("relative", ["../x.mp4", "sub/../../x.mp4", "/etc/passwd", "missing/../../../x.mp4"])
def test_escapes_rejected(tmp_path: Path, relative: str) -> None:
    root = tmp_path / "media"
    (root / "sub").mkdir(parents=True)
    with pytest.raises(DatasetError) as err:
        resolve_under(root, relative, source="ann.json", row=7, item_id="q-1")
    (problem,) = err.value.problems
    assert (problem.source, problem.row, problem.item_id, problem.fatal) == ("ann.json", 7, "q-1", True)
    assert str(err.value).splitlines()[1] == f"  ann.json: row 7 (item q-1): {problem.reason}"
    assert "escapes its root" in problem.reason


def test_symlinks(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "v.mp4").write_bytes(b"")
    real_root = tmp_path / "real"
    real_root.mkdir()
    (real_root / "inside.mp4").write_bytes(b"")
    os.symlink(outside / "v.mp4", real_root / "link.mp4")       # a file link pointing out
    os.symlink(outside, real_root / "dirlink")                   # a folder link pointing out
    os.symlink(real_root / "inside.mp4", real_root / "ok.mp4")  # a link staying inside
    root_link = tmp_path / "rootlink"
    os.symlink(real_root, root_link)                             # the root itself may be a link
    for rel in ("link.mp4", "dirlink/v.mp4"):
        with pytest.raises(DatasetError, match="escapes its root"):
            resolve_under(root_link, rel, source="a.parquet", row=1)
    assert resolve_under(root_link, "ok.mp4", source="a.parquet", row=1) == (real_root / "inside.mp4").resolve()


def test_empty_path_rejected(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="empty or invalid media path"):
        resolve_under(tmp_path, "", source="a.json", row=0)
