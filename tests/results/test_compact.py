"""Shard compaction: every row kept exactly once at every step, whoever reads and whenever the compactor dies.

The compactor runs in real processes killed with SIGKILL between its steps (write the compacted shard, fsync,
rename it into place, fsync the folder, remove the inputs); a reader in another process reads while it works."""

from __future__ import annotations

import asyncio
import hashlib
import json
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from helpers.specs import small_spec_dict
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

from engine.backends.base import BackendBase, EngineRequest, EngineResult
from engine.cli.app import app
from engine.config import parse_spec
from engine.metrics.status import sweep_status
from engine.results import ResultsDir, own_rows
from engine.results import compact as compact_module
from engine.results.compact import compact, compact_dir
from engine.results.manifest import write_manifest
from engine.results.pages import encode_shard
from engine.results.schema import ResultRow, rows_to_frame
from engine.results.shards import COMPACTED_FROM, is_compacted, live_shards
from engine.results.store import ResultStore
from engine.sweep.scheduler import Sweep

ROOT = Path(__file__).resolve().parents[2]
BUDGETS = ("f8", "f16")
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _row(item: int, budget: str, *, sweep: str = "s", ok: bool = True, attempt: int = 1, at: int = 0) -> ResultRow:
    return ResultRow(sweep_id=sweep, model_id="m", model_family="qwen2_5_vl", dataset="d", dataset_version="1",
                     item_id=f"q{item:04d}", video_id=f"v{item // 3}", task_kind="mcq", budget_id=budget,
                     frames=int(budget[1:]), policy="uniform", seed=0, frame_indices=[0, 4], pred="A", answer="A",
                     correct=ok, status="ok" if ok else "error", error_type=None if ok else "TimeoutError",
                     error=None if ok else "no reply", error_kind=None if ok else "transient", attempt=attempt,
                     answer_fingerprint=f"fp-{budget}", finished_at=T0 + timedelta(seconds=at))


def _sweep_dir(out: Path, shards: int, per: int = 2) -> int:
    """`shards` committed shards of sweep `s` (some keys first failing, then answered in a later shard), a
    shard of another sweep and one mixing both; returns the number of items."""
    items = shards * per // len(BUDGETS)
    write_manifest(out, {"sweep_id": "s", "expected_by_dataset": {"d": {"m": dict.fromkeys(BUDGETS, items)}}})
    jobs = [(i, b) for i in range(items) for b in BUDGETS]
    with ResultStore(out) as st:
        for k in range(shards):
            batch = jobs[k * per:(k + 1) * per]
            if k % 5 == 1:  # the key failed first (an error row of an earlier attempt), then was answered
                st.add([_row(i, b, ok=False, at=k) for i, b in batch])
                st.commit()
            st.add([_row(i, b, attempt=2 if k % 5 == 1 else 1, at=k + 1) for i, b in batch])
            st.commit()
    results = out / "results"
    (results / "part-zz-foreign.parquet").write_bytes(encode_shard(rows_to_frame([_row(0, "f8", sweep="other")])))
    (results / "part-zz-mixed.parquet").write_bytes(
        encode_shard(rows_to_frame([_row(1, "f8", sweep="other"), _row(9999, "f8")])))
    return items


def _rows(out: Path) -> pl.DataFrame:
    """Every row a reader sees (all attempts, every live shard), in a fixed order."""
    return ResultsDir.open(out).scan().collect().sort(["sweep_id", "item_id", "budget_id", "attempt", "status"])


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_compaction_keeps_every_row_once_and_leaves_other_sweeps_shards_alone(tmp_path: Path) -> None:
    _sweep_dir(tmp_path, shards=40)
    before, latest = _rows(tmp_path), own_rows(tmp_path)[0].collect().sort(["item_id", "budget_id"])
    foreign = {p.name: _digest(p) for p in (tmp_path / "results").glob("part-zz-*")}
    inputs = [p for p in live_shards(tmp_path) if p.name not in foreign]
    with ResultStore(tmp_path) as st:
        done = compact(st)  # the default grace: the inputs stay on disk, readers leave them out
    assert (done.inputs, done.outputs, done.removed, done.waiting) == (len(inputs), 1, 0, len(inputs))
    assert sorted(p.name for p, _ in done.skipped) == sorted(foreign)
    assert all(p.exists() for p in inputs)
    (compacted,) = [p for p in live_shards(tmp_path) if is_compacted(p)]
    assert sorted(p.name for p in live_shards(tmp_path)) == sorted([compacted.name, *foreign])
    assert_frame_equal(_rows(tmp_path), before)  # every attempt of every key, once, error_kind and fingerprints too
    assert_frame_equal(own_rows(tmp_path)[0].collect().sort(["item_id", "budget_id"]), latest)
    assert sorted(p.name for p in own_rows(tmp_path)[1]) == sorted(foreign)  # still named, still not counted
    assert {p.name: _digest(p) for p in (tmp_path / "results").glob("part-zz-*")} == foreign  # untouched
    # the compacted shard keeps a CRC-32 in every page header and names what it holds
    shard = pq.ParquetFile(compacted)
    assert sorted(json.loads(shard.metadata.metadata[COMPACTED_FROM.encode()])) == sorted(p.name for p in inputs)
    assert pq.read_table(compacted, page_checksum_verification=True).num_rows == before.height - 3
    # on demand, with no grace: the inputs go; what a reader sees does not change
    assert compact_dir(tmp_path, grace_s=0).removed == len(inputs)
    assert not any(p.exists() for p in inputs)
    assert_frame_equal(_rows(tmp_path), before)


_KILLER = r"""
import os, pathlib, signal, sys
from engine.results.compact import compact
from engine.results.store import ResultStore
import engine.runtime.atomic as atomic

point, out = sys.argv[1], sys.argv[2]

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

store = ResultStore(out)  # the lock taken before any step is patched
if point == "before-fsync":  # the compacted shard's bytes written to its temp file, not yet fsynced
    os.fsync = die
elif point == "before-rename":  # fsynced, not yet renamed into results/
    os.replace = die
elif point == "before-dir-fsync":  # renamed into results/ (visible), the folder not yet fsynced
    atomic.fsync_dir = die
elif point.startswith("after-removing-"):  # that many inputs removed
    k, real, n = int(point.rsplit("-", 1)[1]), pathlib.Path.unlink, [0]
    def unlink(self, missing_ok=False):
        if n[0] == k:
            die()
        n[0] += 1
        real(self, missing_ok=missing_ok)
    pathlib.Path.unlink = unlink
compact(store, grace_s=0)
store.close()
"""


@pytest.mark.parametrize("point", ["before-fsync", "before-rename", "before-dir-fsync", "after-removing-0",
                                   "after-removing-7", "after-removing-29", "not-killed"])
@pytest.mark.engine
def test_a_compactor_killed_at_any_step_loses_and_duplicates_nothing(tmp_path: Path, point: str) -> None:
    items = _sweep_dir(tmp_path, shards=30)
    before = _rows(tmp_path)
    done = subprocess.run([sys.executable, "-c", _KILLER, point, str(tmp_path)], check=False, capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert done.returncode == (0 if point == "not-killed" else -signal.SIGKILL), done.stderr[-3000:]
    compacted = [p for p in (tmp_path / "results").glob("part-*.parquet") if is_compacted(p)]
    assert len(compacted) == (0 if point in ("before-fsync", "before-rename") else 1)
    # a reader now: each row once (the inputs still on disk are left out), status counts every job
    assert_frame_equal(_rows(tmp_path), before)
    assert sweep_status(tmp_path).done == items * len(BUDGETS) + 1  # + the mixed shard's own row
    # the next holder of the lock cleans up what the kill left and compacts again: still every row once
    compact_dir(tmp_path, grace_s=0)
    assert_frame_equal(_rows(tmp_path), before)
    left = sorted(p.name for p in (tmp_path / "results").iterdir())
    assert [n for n in left if not is_compacted(Path(n))] == ["part-zz-foreign.parquet", "part-zz-mixed.parquet"]
    assert len(left) == 3, left  # one compacted shard, no temp file, no input


_SLOW = r"""
import os, pathlib, sys, time
from engine.results.compact import compact
from engine.results.shards import remove_superseded
from engine.results.store import ResultStore

out, grace = sys.argv[1], float(sys.argv[2])
real_replace, real_unlink = os.replace, pathlib.Path.unlink

def replace(a, b):  # a reader gets time to read before and after the rename
    time.sleep(1.0)
    real_replace(a, b)
    time.sleep(1.0)

def unlink(self, missing_ok=False):
    time.sleep(0.05)
    real_unlink(self, missing_ok=missing_ok)

os.replace, pathlib.Path.unlink = replace, unlink
with ResultStore(out) as store:
    compact(store, grace_s=grace)  # the inputs stay: the compacted shard is younger than the grace
    time.sleep(grace + 0.5)
    with store.maintenance:
        remove_superseded(out, grace)
"""


@pytest.mark.engine
def test_a_reader_while_compacting_sees_every_row_exactly_once(tmp_path: Path) -> None:
    items = _sweep_dir(tmp_path, shards=60)
    before = _rows(tmp_path)
    n_inputs = len(live_shards(tmp_path)) - 2  # all but the other sweep's two
    child = subprocess.Popen([sys.executable, "-c", _SLOW, str(tmp_path), "4"], cwd=ROOT,
                             stderr=subprocess.PIPE, text=True)
    seen = set()
    try:
        while child.poll() is None:
            names = [p.name for p in (tmp_path / "results").glob("part-*.parquet")]
            compacted = any(is_compacted(Path(n)) for n in names)
            seen.add((compacted, len(names) - 2 - compacted))  # (a compacted shard there, inputs on disk)
            assert_frame_equal(_rows(tmp_path), before)  # never a row twice, never one missing
            assert sweep_status(tmp_path).done == items * len(BUDGETS) + 1  # + the mixed shard's own row
    finally:
        child.wait(timeout=300)
    assert child.returncode == 0, child.stderr.read()[-3000:]
    assert (False, n_inputs) in seen and (True, n_inputs) in seen  # before the rename, and after it
    assert any(c and 0 < k < n_inputs for c, k in seen)  # while the inputs were being removed
    assert_frame_equal(_rows(tmp_path), before)


class _Answers(BackendBase):
    """Answers at once, a little later each batch: what is checked is the store under the pipeline."""

    name = "answers"

    async def generate(self, requests: list[EngineRequest]) -> list[EngineResult]:
        await asyncio.sleep(0.3)  # several commits during the sweep
        return [EngineResult(r.request_id, text="A", letter_logprobs={"A": 0.0}) for r in requests]


def test_a_sweeps_driver_compacts_as_it_commits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compact_module, "COMPACT_AT", 2)
    d = small_spec_dict(tmp_path / "out")
    d["dataset"]["n_videos"] = 6
    d["store"]["commit_interval_s"] = 0.05
    summary = asyncio.run(Sweep(parse_spec(d), backends={"tiny": _Answers()}).run())
    out = tmp_path / "out"
    names = [p.name for p in live_shards(out)]
    assert any(is_compacted(Path(n)) for n in names), names
    latest = own_rows(out)[0].collect()
    assert latest.height == summary.jobs_total == latest.select(["item_id", "budget_id"]).n_unique()
    assert_frame_equal(ResultsDir.open(out).scan().collect().sort(["item_id", "budget_id"]),
                       latest.sort(["item_id", "budget_id"]), check_row_order=True)  # each row once


def test_compact_command_refuses_a_locked_or_missing_directory(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["compact", str(tmp_path / "nowhere")])
    assert res.exit_code == 2 and "no results/ directory" in res.output, res.output
    _sweep_dir(tmp_path, shards=4)
    with ResultStore(tmp_path):  # a sweep writing here
        res = runner.invoke(app, ["compact", str(tmp_path)])
    assert res.exit_code == 3 and "being written by another framesweep driver" in res.output, res.output
    res = runner.invoke(app, ["compact", str(tmp_path), "--grace-s", "0"])
    assert res.exit_code == 0, res.output
    assert "shard(s) compacted into 1" in res.output and "part-zz-foreign.parquet: rows of another sweep" in res.output


def test_a_damaged_shard_is_left_for_doctor_not_laundered(tmp_path: Path) -> None:
    _sweep_dir(tmp_path, shards=6)
    victim = sorted(p for p in live_shards(tmp_path) if "zz" not in p.name)[2]
    data = bytearray(victim.read_bytes())
    meta = pq.ParquetFile(victim).metadata
    chunk = meta.row_group(0).column(meta.schema.to_arrow_schema().names.index("item_id"))
    end = (chunk.dictionary_page_offset or chunk.data_page_offset) + chunk.total_compressed_size
    data[end - 2] ^= 0x10  # one bit in the column chunk's last page payload: its CRC-32 no longer matches
    victim.write_bytes(bytes(data))
    done = compact_dir(tmp_path, grace_s=0)
    assert [(p, why) for p, why in done.skipped if p == victim and "CRC" in why], done.skipped
    assert victim in live_shards(tmp_path)  # read as it is (never inside a compacted shard): `doctor` finds it
    res = CliRunner().invoke(app, ["doctor", str(tmp_path)])
    assert res.exit_code == 0 and victim.name in res.output, res.output


@pytest.mark.engine
@pytest.mark.parametrize("point", ["after-removing-5", "after-removing-13", "after-removing-14"])
def test_a_killed_cleanup_of_compactions_of_compactions_keeps_every_row_once(tmp_path: Path, point: str) -> None:
    """A compacted shard is compacted again with newer shards; the cleanup removes both generations' inputs,
    the older compacted shard last (it is what hides its own inputs), and is killed part-way."""
    _sweep_dir(tmp_path, shards=6)  # 6 own shards + 1 error-only shard
    compact_dir(tmp_path)  # C1, its 7 inputs kept on disk for the grace
    with ResultStore(tmp_path) as st:
        for k in range(7):
            st.add([_row(5000 + k, b) for b in BUDGETS])
            st.commit()
    compact_dir(tmp_path)  # C2 holds C1 and the 7 newer shards
    before = _rows(tmp_path)
    # the other sweep's 2, C1's 7 inputs, C1, the 7 newer, C2: 14 plain shards go first, then C1
    assert len(list((tmp_path / "results").glob("part-*.parquet"))) == 2 + 7 + 1 + 7 + 1
    done = subprocess.run([sys.executable, "-c", _KILLER, point, str(tmp_path)], check=False, capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert done.returncode == -signal.SIGKILL, done.stderr[-3000:]
    assert_frame_equal(_rows(tmp_path), before)
    compact_dir(tmp_path, grace_s=0)
    assert_frame_equal(_rows(tmp_path), before)
    assert len(list((tmp_path / "results").iterdir())) == 3  # C2 and the other sweep's two shards


def test_shards_left_as_they_are_do_not_set_off_a_compaction_after_every_commit(tmp_path: Path) -> None:
    _sweep_dir(tmp_path, shards=0)  # the other sweep's shard and the mixed one only
    with ResultStore(tmp_path) as st:
        first = compact_module.compact_if_due(st, at=2)
        assert first is not None and first.outputs == 0 and len(first.skipped) == 2
        assert compact_module.compact_if_due(st, at=2) is None  # not read again at the next commit
