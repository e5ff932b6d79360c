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
    assert st.done_keys() == {("m", "d", "a", "text")}
    st.close()


def test_errors_are_kept_and_retried(tmp_path: Path) -> None:
    with ResultStore(tmp_path) as st:
        st.add([row("a", "text"), row("b", "text", status="error")])
    with ResultStore(tmp_path) as st:
        assert st.done_keys() == {("m", "d", "a", "text")}  # the error is not done: a rerun retries it
        assert st.attempts()[("m", "d", "b", "text")] == 1
        st.add([row("b", "text", attempt=2)])
    all_rows = scan_results(tmp_path).collect()
    assert all_rows.height == 3
    latest = latest_rows(scan_results(tmp_path)).collect().sort("item_id")
    assert latest["status"].to_list() == ["ok", "ok"] and latest["attempt"].to_list() == [1, 2]


def test_second_writer_is_refused(tmp_path: Path) -> None:
    with ResultStore(tmp_path):
        with pytest.raises(StoreLockedError, match="another framesweep driver"):
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
