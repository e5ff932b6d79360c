"""What the results store removes, opens and trusts: only its own temp files, only regular shards, only pages whose
checksums match."""

from __future__ import annotations

import os
import re
import stat
import threading
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from engine.cli.app import app
from engine.results import ResultsDir
from engine.results.schema import ResultRow
from engine.results.store import CorruptShardError, ResultStore
from engine.runtime.atomic import atomic_write, clean_stale_temps, is_own_temp, temp_name


def row(item: str, budget: str = "text") -> ResultRow:
    return ResultRow(sweep_id="s", model_id="m", model_family="qwen2_5_vl", dataset="d", dataset_version="v",
                     item_id=item, video_id="v1", task_kind="mcq", budget_id=budget, frames=0, policy="uniform",
                     seed=0, correct=True)

def _committed(out: Path):  # type: ignore[no-untyped-def]
    """What a rerun reads as committed (every row counts: these directories have no manifest)."""
    from engine.results.committed import read_committed
    from engine.results.directory import ResultsDir

    return read_committed(ResultsDir.open(out))



def test_temp_names_are_framesweeps_own_and_cleanup_touches_nothing_else(tmp_path: Path) -> None:
    own = temp_name(tmp_path / "manifest.json")
    assert re.fullmatch(r"\.manifest\.json\.fs-\d+-\d+-[0-9a-f]{8}\.tmp", own.name) and is_own_temp(own.name)
    own.write_text("{")  # what a killed atomic_write leaves
    old = tmp_path / ".manifest.json.12-34-abcdef01.tmp"  # an older framesweep's temp name
    old.write_text("{")
    mine = [tmp_path / n for n in (".notes.tmp", ".x.tmp", ".draft.fs.tmp", "notes.1-2-ab.tmp")]
    for p in mine:
        p.write_text("keep me")
    fifo = tmp_path / ".queue.fs-1-2-abcdef01.tmp"
    os.mkfifo(fifo)  # named like ours but not a file a writer left: never unlinked
    assert sorted(clean_stale_temps(tmp_path)) == sorted([own, old])
    assert all(p.read_text() == "keep me" for p in mine) and fifo.exists()


def test_atomic_write_leaves_only_the_target(tmp_path: Path) -> None:
    atomic_write(tmp_path / "a.json", b"{}")
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_a_users_hidden_tmp_files_survive_run_and_doctor(tmp_path: Path) -> None:
    with ResultStore(tmp_path) as st:  # what `run` opens (and `doctor`, below)
        st.add([row("a")])
    notes, draft = tmp_path / ".notes.tmp", tmp_path / "results" / ".draft.tmp"
    notes.write_text("my notes")
    draft.write_text("my draft")
    stale = temp_name(tmp_path / "results" / "part-x.parquet")
    stale.write_bytes(b"PAR1 torn")  # a commit killed mid-write
    with ResultStore(tmp_path) as st:
        assert _committed(tmp_path).done == {("m", "d", "a", "text")}
    assert not stale.exists()
    stale.write_bytes(b"PAR1 torn")
    res = CliRunner().invoke(app, ["doctor", str(tmp_path)])
    assert res.exit_code == 0 and "every shard reads" in res.output, res.output
    assert notes.read_text() == "my notes" and draft.read_text() == "my draft" and not stale.exists()


def _within(seconds: float, fn, fifo: Path):  # type: ignore[no-untyped-def]
    """`fn()` run in a thread that must finish within `seconds`: a reader that opens the FIFO blocks, so the
    test fails (and unblocks it by opening the FIFO's other end) instead of hanging."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as err:  # noqa: BLE001 - handed to the test thread
            box["error"] = err

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # the blocked open returns
        worker.join(10)
        pytest.fail(f"{fn} blocked on the FIFO {fifo.name}")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]


def test_a_fifo_named_like_a_shard_is_named_never_opened_and_quarantined(tmp_path: Path) -> None:
    with ResultStore(tmp_path) as st:
        st.add([row("a")])
    (tmp_path / "manifest.json").write_text('{"sweep_id": "s"}')
    fifo = tmp_path / "results" / "part-zz-fifo.parquet"
    os.mkfifo(fifo)
    with pytest.raises(CorruptShardError, match=r"part-zz-fifo\.parquet: unreadable result shard \(not a regular "
                                                r"file but a FIFO; never opened\)"):
        _within(30, lambda: ResultsDir.open(tmp_path).scan(), fifo)
    runner = CliRunner()
    for cmd in (["status", str(tmp_path)], ["metrics", str(tmp_path), "--n-boot", "0"]):
        res = _within(60, lambda cmd=cmd: runner.invoke(app, cmd), fifo)
        assert res.exit_code == 2 and fifo.name in res.output and "Traceback" not in res.output, res.output
    res = _within(60, lambda: runner.invoke(app, ["doctor", str(tmp_path)]), fifo)
    assert res.exit_code == 0 and "1 bad shard(s) moved to quarantine/" in res.output, res.output
    assert stat.S_ISFIFO((tmp_path / "quarantine" / fifo.name).lstat().st_mode) and not fifo.exists()
    assert ResultsDir.open(tmp_path).scan().collect()["item_id"].to_list() == ["a"]


def test_a_fifo_among_the_predictions_is_named_never_opened(tmp_path: Path) -> None:
    from engine.adaptive.predictions import scan_predictions

    (tmp_path / "predictions").mkdir()
    fifo = tmp_path / "predictions" / "part-zz-fifo.parquet"
    os.mkfifo(fifo)
    with pytest.raises(CorruptShardError, match=r"part-zz-fifo\.parquet: unreadable prediction shard \(not a regular file but a FIFO"):
        _within(30, lambda: scan_predictions(tmp_path), fifo)


def _flip_until_silent(shard: Path, column: str, want: list[str]) -> list[str]:
    """Flip one bit at a time in `column`'s pages (from the chunk's end, where the page payload is) until Polars
    reads the shard without an error but with other values in `column`; leave that flip in place. Returns
    what Polars then reads."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(shard).metadata
    chunk = meta.row_group(0).column(meta.schema.to_arrow_schema().names.index(column))
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    end = start + chunk.total_compressed_size
    data = shard.read_bytes()
    for pos in range(end - 1, start, -1):
        for bit in range(8):
            flipped = bytearray(data)
            flipped[pos] ^= 1 << bit
            shard.write_bytes(bytes(flipped))
            try:
                got = pl.read_parquet(shard)[column].to_list()
            except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError):
                continue
            if got != want:
                return got
    raise AssertionError(f"no single bit flip in {column} of {shard.name} read back silently changed")


def test_bit_flips_in_a_key_columns_data_page_are_found_by_doctor(tmp_path: Path) -> None:
    items = [f"item-{i:05d}" for i in range(900)]
    with ResultStore(tmp_path) as st:
        st.add([row(i) for i in items])
    (shard,) = (tmp_path / "results").glob("part-*.parquet")
    got = _flip_until_silent(shard, "item_id", items)
    changed = sum(a != b for a, b in zip(got, items, strict=True))
    # every check before doctor passes: the footer, and a whole read by Polars, with keys changed
    assert ResultsDir.open(tmp_path).scan().collect().height == 900 and changed > 0
    res = CliRunner().invoke(app, ["doctor", str(tmp_path)])
    assert res.exit_code == 0 and "1 bad shard(s) moved to quarantine/" in res.output, res.output
    assert re.search(r"column item_id, row group 0: OSError: .*CRC checksum verification failed", res.output), \
        res.output
    assert (tmp_path / "quarantine" / shard.name).exists() and ResultsDir.open(tmp_path).scan().collect().height == 0


def test_shards_without_page_checksums_still_read_and_pass_doctor(tmp_path: Path) -> None:
    from engine.results.schema import rows_to_frame
    from engine.results.store import doctor, shard_problem

    (tmp_path / "results").mkdir()
    old = tmp_path / "results" / "part-old.parquet"
    rows_to_frame([row("a"), row("b")]).write_parquet(old, compression="zstd")  # Polars' writer: no checksums
    assert shard_problem(old, full=True) is None and doctor(tmp_path) == []
    assert sorted(ResultsDir.open(tmp_path).scan().collect()["item_id"]) == ["a", "b"]
