"""What the results store removes, opens and trusts: only its own temp files, only regular shards, only pages whose
checksums match."""

from __future__ import annotations

import os
import re
from pathlib import Path

from typer.testing import CliRunner

from engine.cli.app import app
from engine.results.schema import ResultRow
from engine.results.store import ResultStore
from engine.runtime.atomic import atomic_write, clean_stale_temps, is_own_temp, temp_name


def row(item: str, budget: str = "text") -> ResultRow:
    return ResultRow(sweep_id="s", model_id="m", model_family="qwen2_5_vl", dataset="d", dataset_version="v",
                     item_id=item, video_id="v1", task_kind="mcq", budget_id=budget, frames=0, policy="uniform",
                     seed=0, correct=True)


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
        assert st.done_keys() == {("m", "d", "a", "text")}
    assert not stale.exists()
    stale.write_bytes(b"PAR1 torn")
    res = CliRunner().invoke(app, ["doctor", str(tmp_path)])
    assert res.exit_code == 0 and "every shard reads" in res.output, res.output
    assert notes.read_text() == "my notes" and draft.read_text() == "my draft" and not stale.exists()
