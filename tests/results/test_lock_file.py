"""`OUT/.lock` that cannot be made: a directory in its place, a read-only file system. One sentence naming it, exit
2, from `run`, `doctor` and `compact` alike (they were tracebacks: IsADirectoryError, OSError EROFS)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers.mounts import read_only, tmpfs
from helpers.specs import small_spec_dict, write_toml
from helpers.sure_results import sure_results
from typer.testing import CliRunner

from engine.cli import app
from engine.cli.run import ending
from engine.results import ResultsDir
from engine.results.lock import DirLock, LockFileError
from engine.results.store import ResultStore

runner = CliRunner()


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sure_results(tmp_path_factory.mktemp("sure") / "out")


def _said(res: object) -> str:
    return " ".join(getattr(res, "output", "").split())


def _run_spec(tmp_path: Path, out: Path) -> Path:
    """A spec on `out` whose model is a server nobody runs: `run` stops at the lock, before it would ask one."""
    d = small_spec_dict(out)
    d["models"][0].update(backend="openai", http={"base_url": "http://127.0.0.1:9"})
    return write_toml(tmp_path / "spec.toml", d)


def test_a_lock_that_is_a_directory_is_named(results: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(results, out)
    (out / ".lock").unlink(missing_ok=True)
    (out / ".lock").mkdir()
    before = ResultsDir.open(out).scan().collect()
    expected = f"{out / '.lock'} is a directory where framesweep's lock file goes; remove it and rerun"
    with pytest.raises(LockFileError, match="is a directory where framesweep's lock file goes") as err:
        DirLock(out).acquire()
    assert ending(err.value) == 2
    with pytest.raises(LockFileError):
        ResultStore(out)
    for args in (["doctor", str(out)], ["compact", str(out)], ["run", str(_run_spec(tmp_path, out))]):
        res = runner.invoke(app, args)
        assert res.exit_code == 2, f"{args[0]}: {res.output}"
        assert expected in _said(res) and "Traceback" not in res.output, f"{args[0]}: {res.output}"
    assert ResultsDir.open(out).scan().collect().equals(before)  # nothing was changed


@pytest.mark.engine  # mounts a tmpfs (`mount`: a process)
def test_doctor_compact_and_run_on_a_read_only_file_system(results: Path, tmp_path: Path) -> None:
    with tmpfs(tmp_path / "ro") as mnt:
        out = mnt / "out"
        shutil.copytree(results, out)
        read_only(mnt)
        assert DirLock(out).problem() == f"{out} is on a read-only file system: its lock (.lock) cannot be taken"
        for command in ("doctor", "compact"):
            res = runner.invoke(app, [command, str(out)])
            assert res.exit_code == 2, f"{command}: {res.output}"
            assert f"{out} is on a read-only file system" in _said(res) and "Traceback" not in res.output
        res = runner.invoke(app, ["run", str(_run_spec(tmp_path, out))])
        assert res.exit_code == 2 and f"store.out_dir: {out} is not writable" in _said(res), res.output
        assert runner.invoke(app, ["status", str(out)]).exit_code == 0  # reading needs no lock
