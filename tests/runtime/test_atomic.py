"""The one atomic write helper of the project (`engine.runtime.atomic`), on real files."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.runtime.atomic import atomic_dir, atomic_write, exclusive_lock, file_sha256


def test_atomic_dir_replaces_a_folder_whole_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    final = tmp_path / "ckpt"
    with atomic_dir(final) as tmp:
        (tmp / "sub").mkdir()
        (tmp / "config.json").write_text("1")
        (tmp / "sub" / "w.bin").write_bytes(b"a")
        assert not final.exists()  # nothing at the final path until the build is done
    assert (final / "config.json").read_text() == "1" and (final / "sub" / "w.bin").read_bytes() == b"a"
    with atomic_dir(final) as tmp:
        (tmp / "config.json").write_text("2")
        assert (final / "config.json").read_text() == "1"  # the old folder serves while the new one is built
    assert sorted(p.name for p in final.iterdir()) == ["config.json"] and (final / "config.json").read_text() == "2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]  # no temp or old folder left


def test_a_failed_build_leaves_the_old_folder_as_it_was(tmp_path: Path) -> None:
    final = tmp_path / "ckpt"
    with atomic_dir(final) as tmp:
        (tmp / "config.json").write_text("1")
    with pytest.raises(RuntimeError, match="boom"), atomic_dir(final) as tmp:
        (tmp / "config.json").write_text("half")
        raise RuntimeError("boom")
    assert (final / "config.json").read_text() == "1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]


def test_atomic_write_and_file_sha256(tmp_path: Path) -> None:
    import hashlib

    path = atomic_write(tmp_path / "a" / "x.json", b'{"k": 1}')
    assert path.read_bytes() == b'{"k": 1}' and file_sha256(path) == hashlib.sha256(b'{"k": 1}').hexdigest()
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["x.json"]


def test_exclusive_lock_waits_out_a_holder_or_times_out_naming_the_file(tmp_path: Path) -> None:
    """One holder at a time (a second open file description of the lock file, as another process has); with a
    timeout the wait ends in TimeoutError naming the file, and the holder's own errors pass through unchanged."""
    lock = tmp_path / "sub" / "x.lock"
    with exclusive_lock(lock):
        assert lock.is_file()
        with pytest.raises(TimeoutError, match=r"x\.lock held by another process"), exclusive_lock(lock, 0.3):
            pass
    with exclusive_lock(lock, 0.3):  # released: taken at once
        pass
    with pytest.raises(KeyError), exclusive_lock(lock, 0.3):
        raise KeyError("the holder's own error")
