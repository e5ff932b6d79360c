"""The results store: atomic shards, resume keys, errors as data, one writer at a time."""

from pathlib import Path

import polars as pl
import pytest

from engine.results.schema import RESULT_SCHEMA, ResultRow, rows_to_frame
from engine.results.store import ResultStore, StoreLockedError, latest_rows, scan_results


def row(item: str, budget: str, status: str = "ok", attempt: int = 1) -> ResultRow:
    return ResultRow(sweep_id="s", model_id="m", model_family="qwen2_5_vl", dataset="d", dataset_version="v",
                     item_id=item, video_id="v1", task_kind="mcq", budget_id=budget, frames=0, policy="uniform",
                     seed=0, status=status, attempt=attempt, correct=status == "ok" or None,
                     option_probs=[0.5, None, 0.5], frame_indices=[1, 2])

def _committed(out: Path):  # type: ignore[no-untyped-def]
    """What a rerun reads as committed (every row counts: these directories have no manifest)."""
    from engine.results.committed import read_committed
    from engine.results.directory import ResultsDir

    return read_committed(ResultsDir.open(out))



def test_schema_round_trip(tmp_path: Path) -> None:
    with ResultStore(tmp_path) as st:
        st.add([row("a", "text"), row("b", "text")])
    df = scan_results(tmp_path).collect()
    assert df.schema == pl.Schema(RESULT_SCHEMA)
    assert df.height == 2 and df["option_probs"].to_list()[0] == [0.5, None, 0.5]
    assert rows_to_frame([]).schema == pl.Schema(RESULT_SCHEMA)


def test_commit_is_atomic_and_temp_files_are_ignored(tmp_path: Path) -> None:
    st = ResultStore(tmp_path)
    st.add([row("a", "text")])
    assert scan_results(tmp_path).collect().height == 0  # buffered is not durable
    assert st.commit() == 1
    # a crash mid-write leaves only a hidden temp file: readers and resume never see it
    (tmp_path / "results" / ".part-x.parquet.tmp").write_bytes(b"PAR1 half a file")
    assert scan_results(tmp_path).collect().height == 1
    assert _committed(tmp_path).done == {("m", "d", "a", "text")}
    st.close()


def test_errors_are_kept_and_retried(tmp_path: Path) -> None:
    with ResultStore(tmp_path) as st:
        st.add([row("a", "text"), row("b", "text", status="error")])
    with ResultStore(tmp_path) as st:
        assert _committed(tmp_path).done == {("m", "d", "a", "text")}  # the error is not done: a rerun retries it
        assert _committed(tmp_path).attempts[("m", "d", "b", "text")] == 1
        st.add([row("b", "text", attempt=2)])
    all_rows = scan_results(tmp_path).collect()
    assert all_rows.height == 3
    latest = latest_rows(scan_results(tmp_path)).collect().sort("item_id")
    assert latest["status"].to_list() == ["ok", "ok"] and latest["attempt"].to_list() == [1, 2]


def test_second_writer_is_refused(tmp_path: Path) -> None:
    with ResultStore(tmp_path), pytest.raises(StoreLockedError, match="another framesweep driver"):
        ResultStore(tmp_path)
    ResultStore(tmp_path).close()  # free again once the first one closed


def test_manifest_keeps_creation_time(tmp_path: Path) -> None:
    import json

    with ResultStore(tmp_path) as st:
        st.write_manifest({"sweep_id": "s"})
        first = json.loads((tmp_path / "manifest.json").read_text())
        st.write_manifest({"sweep_id": "s", "x": 1})
    second = json.loads((tmp_path / "manifest.json").read_text())
    assert second["created_at"] == first["created_at"] and second["x"] == 1


def test_stale_temp_files_of_a_killed_commit_are_removed_at_open(tmp_path: Path) -> None:
    with ResultStore(tmp_path) as st:
        st.add([row("a", "text")])
    stale = tmp_path / "results" / ".part-20240101T000000000000-1-abcd-00001.parquet.tmp"
    stale.write_bytes(b"")  # what a SIGKILL during a commit leaves
    manifest_tmp = tmp_path / ".manifest.json.1-2-abcdef.tmp"
    manifest_tmp.write_text("{")
    ResultStore(tmp_path, lock=False).close()  # a reader without the lock leaves them alone
    assert stale.exists()
    with ResultStore(tmp_path) as st:
        assert not stale.exists() and not manifest_tmp.exists()
        assert _committed(tmp_path).done == {("m", "d", "a", "text")}


def test_a_corrupt_shard_is_named_and_doctor_quarantines_it(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from engine.cli.app import app
    from engine.results.store import CorruptShardError, doctor

    with ResultStore(tmp_path) as st:
        st.add([row("a", "text")])
        st.commit()
        st.add([row("b", "text")])
    good, bad = sorted((tmp_path / "results").glob("part-*.parquet"))
    bad.write_bytes(bad.read_bytes()[:100])  # truncated
    (tmp_path / "manifest.json").write_text('{"sweep_id": "s"}')
    with pytest.raises(CorruptShardError, match=rf"{bad.name}: unreadable result shard .*framesweep doctor"):
        scan_results(tmp_path)
    runner = CliRunner()
    for cmd in (["status", str(tmp_path)], ["metrics", str(tmp_path), "--n-boot", "0"]):
        res = runner.invoke(app, cmd)
        assert res.exit_code == 2 and bad.name in res.output and "Traceback" not in res.output, res.output
    res = runner.invoke(app, ["doctor", str(tmp_path)])
    assert res.exit_code == 0 and "1 bad shard(s) moved to quarantine/" in res.output, res.output
    assert (tmp_path / "quarantine" / bad.name).exists() and good.exists() and not bad.exists()
    assert scan_results(tmp_path).collect()["item_id"].to_list() == ["a"]
    assert doctor(tmp_path) == []  # nothing left to move


def test_narrower_integer_columns_are_read_upcast(tmp_path: Path) -> None:
    with ResultStore(tmp_path) as st:
        st.add([row("a", "text")])
    narrow = rows_to_frame([row("b", "text")]).with_columns(pl.col("seed").cast(pl.Int32),
                                                             pl.col("frames").cast(pl.Int16))
    narrow.write_parquet(tmp_path / "results" / "part-other-tool.parquet")
    df = scan_results(tmp_path).collect()
    assert df.schema["seed"] == pl.Int64 and sorted(df["item_id"]) == ["a", "b"]
    wrong = rows_to_frame([row("c", "text")]).with_columns(pl.col("seed").cast(pl.String))
    wrong.write_parquet(tmp_path / "results" / "part-wrong.parquet")
    from engine.results.store import CorruptShardError

    with pytest.raises(CorruptShardError, match="part-wrong.parquet: .*column seed is String, not Int64"):
        scan_results(tmp_path)


@pytest.mark.engine
def test_disk_full_fails_loudly_and_keeps_committed_shards(tmp_path: Path) -> None:
    """A real full filesystem: a small tmpfs (needs mount permission; skipped without it)."""
    import subprocess

    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
                      capture_output=True, check=False).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    st = None
    try:
        from engine.results.store import StoreFullError

        st = ResultStore(mnt)
        st.add([row("a", "text")])
        assert st.commit() == 1
        big = [row(f"i{i}", "text") for i in range(3000)]
        for r in big:
            r.response = f"{r.item_id} " + "x" * 200 + str(hash(r.item_id))  # incompressible enough
        st.add(big)
        with pytest.raises(StoreFullError, match="no space left on device"):
            st.commit()
        assert st.buffered == 3000  # kept for a retry
        assert scan_results(mnt).collect()["item_id"].to_list() == ["a"]  # committed shards intact
        assert not list((mnt / "results").glob(".*.tmp"))
    finally:
        if st is not None:
            st._buffer.clear()
            st.close()
        subprocess.run(["umount", str(mnt)], check=False)


def test_wider_or_unsigned_integer_columns_are_named_and_quarantined(tmp_path: Path) -> None:
    """An integer column that cannot be read losslessly as the schema's (wider, as pandas writes `frames` as
    Int64; or unsigned of the same width) is named like any unreadable shard, not a Polars SchemaError."""
    from typer.testing import CliRunner

    from engine.cli.app import app
    from engine.results.store import CorruptShardError

    with ResultStore(tmp_path) as st:
        st.add([row("a", "text")])
    (tmp_path / "manifest.json").write_text('{"sweep_id": "s"}')
    results = tmp_path / "results"
    # narrower, and unsigned strictly narrower, still read (upcast)
    rows_to_frame([row("n", "text")]).with_columns(pl.col("seed").cast(pl.UInt32), pl.col("frames").cast(pl.UInt16)) \
        .write_parquet(results / "part-narrow.parquet")
    wide = results / "part-wide.parquet"
    rows_to_frame([row("w", "text")]).with_columns(pl.col("frames").cast(pl.Int64)).write_parquet(wide)
    with pytest.raises(CorruptShardError, match=r"part-wide.parquet: unreadable result shard \(column frames is "
                                                r"Int64, not Int32\).*framesweep doctor"):
        scan_results(tmp_path)
    wide.unlink()
    unsigned = results / "part-unsigned.parquet"
    rows_to_frame([row("u", "text")]).with_columns(pl.col("seed").cast(pl.UInt64)).write_parquet(unsigned)
    with pytest.raises(CorruptShardError, match=r"part-unsigned.parquet: .*column seed is UInt64, not Int64"):
        scan_results(tmp_path)
    rows_to_frame([row("w", "text")]).with_columns(pl.col("frames").cast(pl.Int64)).write_parquet(wide)
    runner = CliRunner()
    for cmd in (["status", str(tmp_path)], ["metrics", str(tmp_path), "--n-boot", "0"]):
        res = runner.invoke(app, cmd)
        assert res.exit_code == 2 and "Traceback" not in res.output, res.output
        assert "part-unsigned.parquet" in res.output or "part-wide.parquet" in res.output, res.output
    res = runner.invoke(app, ["doctor", str(tmp_path)])
    assert res.exit_code == 0 and "2 bad shard(s) moved to quarantine/" in res.output, res.output
    assert "column frames is Int64, not Int32" in res.output and "column seed is UInt64, not Int64" in res.output
    assert sorted(p.name for p in (tmp_path / "quarantine").iterdir()) == ["part-unsigned.parquet", "part-wide.parquet"]
    df = scan_results(tmp_path).collect()
    assert sorted(df["item_id"]) == ["a", "n"] and df.schema["seed"] == pl.Int64 and df.schema["frames"] == pl.Int32
    assert runner.invoke(app, ["status", str(tmp_path)]).exit_code == 0


def _corrupt_data_pages(path: Path) -> None:
    """Flip every byte between the leading magic and the footer: the footer (schema, row groups) still reads."""
    data = bytearray(path.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little")
    for i in range(4, len(data) - 8 - footer):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


def test_corrupt_data_pages_behind_a_valid_footer_are_named(tmp_path: Path) -> None:
    """The footer check passes; the first collect fails. Every command names the shard (exit 2, as for a bad
    footer) instead of a raw Polars error naming no file; doctor quarantines it."""
    from typer.testing import CliRunner

    from engine.cli.app import app
    from engine.results.store import CorruptShardError, shard_problem

    with ResultStore(tmp_path) as st:
        st.add([row("a", "text")])
        st.commit()
        st.add([row("b", "text"), row("c", "text", status="error")])
    good, bad = sorted((tmp_path / "results").glob("part-*.parquet"))
    _corrupt_data_pages(bad)
    (tmp_path / "manifest.json").write_text('{"sweep_id": "s"}')
    assert shard_problem(bad) is None and shard_problem(bad, full=True)  # the footer reads, the pages do not
    scan_results(tmp_path)  # the footer check passes
    # what `run` reads before any work
    from engine.results.directory import ResultsDir

    def rows() -> None:
        results = ResultsDir.open(tmp_path)
        with results.reading():
            results.rows().collect()

    for read in (lambda: _committed(tmp_path), lambda: ResultsDir.open(tmp_path).foreign, rows):
        with pytest.raises(CorruptShardError, match=rf"{bad.name}: unreadable result shard .*framesweep doctor"):
            read()
    runner = CliRunner()
    for cmd in (["status", str(tmp_path)], ["metrics", str(tmp_path), "--n-boot", "0"],
                ["report", str(tmp_path), "--n-boot", "0", "-o", str(tmp_path / "r.html")]):
        res = runner.invoke(app, cmd, env={"COLUMNS": "200"})
        assert res.exit_code == 2, (cmd, res.output)
        assert bad.name in res.output and "framesweep doctor" in res.output and good.name not in res.output
        assert "Traceback" not in res.output and isinstance(res.exception, SystemExit)  # exited, did not raise
    res = runner.invoke(app, ["doctor", str(tmp_path)])
    assert res.exit_code == 0 and "1 bad shard(s) moved to quarantine/" in res.output, res.output
    assert (tmp_path / "quarantine" / bad.name).exists() and good.exists()
    res = runner.invoke(app, ["status", str(tmp_path)], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "1 done" in res.output, res.output
    assert runner.invoke(app, ["metrics", str(tmp_path), "--n-boot", "0"]).exit_code == 0


def test_the_readme_names_every_result_column() -> None:
    """The results page's column list is the user's schema reference: a column added to the schema must be named
    there."""
    import re

    text = (Path(__file__).resolve().parents[2] / "docs" / "results-format.md").read_text()
    section = text[text.index("`OUT/results/part-*.parquet` holds"):text.index("One results directory holds one sweep")]
    named = set(re.findall(r"[a-z_]+", " ".join(re.findall(r"`([^`]+)`", section))))
    assert sorted(set(RESULT_SCHEMA) - named) == []


def test_a_deleted_lock_is_taken_again_before_the_next_commit(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """`.lock` deleted while a driver holds it, and nobody made a new one: the driver takes a new `.lock` at its next
    commit and goes on; a second driver is refused again (before the fix it took the new file and wrote too)."""
    st = ResultStore(tmp_path)
    st.add([row("a", "text")])
    assert st.commit() == 1
    (tmp_path / ".lock").unlink()
    st.add([row("b", "text")])
    assert st.commit() == 1
    assert "was deleted while this driver held it; it is taken again" in caplog.text
    with pytest.raises(StoreLockedError, match="another framesweep driver"):
        ResultStore(tmp_path)
    st.close()
    assert sorted(scan_results(tmp_path).collect()["item_id"]) == ["a", "b"]


def test_a_replaced_lock_stops_the_driver_without_committing(tmp_path: Path) -> None:
    """`.lock` deleted and taken by a second driver meanwhile: the first one's next commit (and its manifest write)
    stops with one sentence (exit 3 in the CLI) and commits nothing more; the second one writes on."""
    from engine.results.store import StoreLockLostError

    first = ResultStore(tmp_path)
    first.add([row("a", "text")])
    first.commit()
    (tmp_path / ".lock").unlink()
    second = ResultStore(tmp_path)  # what a second `framesweep run` does now
    first.add([row("b", "text")])
    with pytest.raises(StoreLockLostError, match=r"\.lock was replaced while this driver held it .* stopped without "
                                                 r"committing"):
        first.commit()
    with pytest.raises(StoreLockLostError):
        first.write_manifest({"sweep_id": "s"})
    first.close()  # releases its old file; commits nothing
    assert scan_results(tmp_path).collect()["item_id"].to_list() == ["a"]
    assert not list((tmp_path / "results").glob(".*.tmp"))
    second.add([row("c", "text")])
    second.close()
    assert sorted(scan_results(tmp_path).collect()["item_id"]) == ["a", "c"]


def _full_tmpfs(mnt: Path) -> None:
    """A tmpfs with no inode left (needs mount permission; the test is skipped without it)."""
    import subprocess

    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,nr_inodes=8", "tmpfs", str(mnt)],
                      capture_output=True, check=False).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    (mnt / "out" / "results").mkdir(parents=True)
    for i in range(16):
        try:
            (mnt / f"filler{i}").touch()
        except OSError:
            return
    raise AssertionError("the tmpfs did not fill up")


@pytest.mark.engine
def test_disk_full_while_taking_the_lock_is_one_sentence_and_exit_5(tmp_path: Path) -> None:
    """A real full filesystem (no inode left): taking the lock fails as StoreFullError; `framesweep run` exits 5 with
    one sentence naming the lock file, before any item is loaded or engine started (it was a raw OSError
    traceback, after the engines had started)."""
    import subprocess
    import sys

    from helpers.specs import small_spec_dict, write_toml

    from engine.results.store import StoreFullError

    mnt = tmp_path / "small"
    _full_tmpfs(mnt)
    try:
        with pytest.raises(StoreFullError, match=r"\.lock: no space left on device to take the directory's lock"):
            ResultStore(mnt / "out")
        d = small_spec_dict(mnt / "out")
        d["dataset"]["root"] = str(tmp_path / "videos")  # made when the items load: they must not
        spec = write_toml(tmp_path / "spec.toml", d)
        res = subprocess.run([sys.executable, "-m", "engine.cli", "run", str(spec)], capture_output=True, text=True,
                             timeout=120)
        assert res.returncode == 5, res.stdout + res.stderr
        assert "no space left on device to take the directory's lock" in res.stderr
        assert "Traceback" not in res.stderr and "Errno" not in res.stderr
        assert not (tmp_path / "videos").exists()  # the lock came first: no item was loaded
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
