"""One shard engine for every table of a results directory: result rows, video statistics and predictions are
named, written with page checksums, read, compacted and quarantined by the same code; a directory written in the
old layout (video-stats parts stamped to the second, prediction shards without a sequence number, no page
checksums) still reads, compacts and passes `doctor`."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

from engine.adaptive.predictions import scan_predictions, write_predictions
from engine.cli.app import app
from engine.results import CorruptShardError, ResultsDir
from engine.results import store as store_module
from engine.results.compact import compact_dir
from engine.results.manifest import write_manifest
from engine.results.schema import PREDICTION_SCHEMA, VIDEO_STATS_SCHEMA, ResultRow
from engine.results.shards import is_compacted, live_shards
from engine.results.store import ResultStore, doctor
from engine.results.tables import PREDICTIONS, RESULTS, VIDEO_STATS
from engine.results.video_stats import VideoStatsLog

NAME = re.compile(r"part-\d{8}T\d{12}-\d+-[0-9a-f]{8}-\d{5}\.parquet")
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _stats(video: str, frames_used: int = 8) -> dict:
    return {"dataset": "d", "video_id": video, "duration_s": 10.0, "fps": 25.0, "width": 64, "height": 48,
            "pixels": 64 * 48, "n_frames": 250, "frames_used": frames_used, "motion_energy": 0.5, "scene_cuts": 1,
            "brightness": 0.4, "contrast": 0.2, "static_share": 0.1}


def _prediction(item: str) -> dict:
    return {"predictor_id": "p", "dataset": "d", "item_id": item, "video_id": "v0", "instruction": "how many?",
            "raw_answer": "8", "predicted_frames": 8, "parse_status": "exact", "finished_at": T0}


def _row(item: str) -> ResultRow:
    return ResultRow(sweep_id="s", model_id="m", model_family="qwen2_5_vl", dataset="d", dataset_version="1",
                     item_id=item, video_id="v0", task_kind="mcq", budget_id="f8", frames=8, policy="uniform",
                     seed=0, frame_indices=[0], pred="A", answer="A", correct=True, status="ok", attempt=1,
                     finished_at=T0)


def _directory(out: Path, shards: int = 3) -> None:
    """A results directory of sweep `s` with `shards` shards in each of its three tables."""
    write_manifest(out, {"sweep_id": "s"})
    log = VideoStatsLog(out)
    with ResultStore(out) as store:
        for k in range(shards):
            store.add([_row(f"q{k}")])
            store.commit()
            log.add([_stats(f"v{k}")])
            log.commit(store.check_lock)
            write_predictions(out, pl.DataFrame([_prediction(f"q{k}")], schema=PREDICTION_SCHEMA))


def _garbage(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"PAR1 not a parquet file")
    return path


def test_every_tables_shards_share_one_name_and_carry_page_checksums(tmp_path: Path) -> None:
    _directory(tmp_path, shards=1)
    for table in (RESULTS, VIDEO_STATS, PREDICTIONS):
        [shard] = live_shards(tmp_path, table.folder)
        assert NAME.fullmatch(shard.name), (table.folder, shard.name)
        # the writer (pyarrow's, with a CRC-32 per page) names itself in the footer; Polars' writer put none there
        assert "parquet-cpp-arrow" in pq.ParquetFile(shard).metadata.created_by, table.folder


def test_a_corrupt_video_stats_shard_is_named_by_readers_and_quarantined_by_doctor(tmp_path: Path) -> None:
    _directory(tmp_path, shards=2)
    bad = _garbage(tmp_path / "video_stats" / "part-20250101T000000000000-1-deadbeef-00001.parquet")
    with pytest.raises(CorruptShardError, match=rf"{bad.name}: unreadable video-stats shard .*framesweep doctor"):
        ResultsDir.open(tmp_path).video_stats()  # before: left out with a log line, the metrics silently thinner
    result = CliRunner().invoke(app, ["doctor", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert bad.name in result.output and "1 bad shard(s) moved to quarantine/" in result.output
    assert (tmp_path / "quarantine" / "video_stats" / bad.name).is_file() and not bad.exists()
    assert ResultsDir.open(tmp_path).video_stats().collect().height == 2  # the good shards still read


def test_a_corrupt_prediction_shard_is_quarantined_beside_the_others(tmp_path: Path) -> None:
    _directory(tmp_path, shards=2)
    bad = _garbage(tmp_path / "predictions" / "part-20250101T000000000000-1-deadbeef-00001.parquet")
    moved = doctor(tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p, _ in moved] == [f"quarantine/predictions/{bad.name}"]
    assert scan_predictions(tmp_path).collect().height == 2


def test_compaction_compacts_every_table_and_readers_see_the_same_rows(tmp_path: Path) -> None:
    _directory(tmp_path, shards=3)
    opened = ResultsDir.open(tmp_path)
    before = (opened.scan().collect(), opened.video_stats().collect(), scan_predictions(tmp_path).collect())
    report = compact_dir(tmp_path, grace_s=0)
    assert (report.inputs, report.outputs, report.rows, report.removed) == (9, 3, 9, 9)
    for table in (RESULTS, VIDEO_STATS, PREDICTIONS):
        [shard] = live_shards(tmp_path, table.folder)
        assert is_compacted(shard), table.folder
    again = ResultsDir.open(tmp_path)
    after = (again.scan().collect(), again.video_stats().collect(), scan_predictions(tmp_path).collect())
    for old, new in zip(before, after, strict=True):
        assert_frame_equal(old.sort(old.columns[:3]), new.sort(new.columns[:3]))


def test_a_corrupt_video_stats_shard_is_never_compacted(tmp_path: Path) -> None:
    _directory(tmp_path, shards=2)
    bad = _garbage(tmp_path / "video_stats" / "part-20250101T000000000000-1-deadbeef-00001.parquet")
    report = compact_dir(tmp_path, grace_s=0)
    assert [(p.name, why.startswith("unreadable")) for p, why in report.skipped] == [(bad.name, True)]
    assert bad.is_file()  # left for `doctor`, its bytes never laundered into a new checksum


def _old_layout(out: Path) -> None:
    """A directory as main wrote it before the tables shared one writer: Polars-written video-stats parts
    stamped to the second, prediction shards `part-<stamp>-<pid>-<token>.parquet`, no page checksums."""
    write_manifest(out, {"sweep_id": "s"})
    with ResultStore(out) as store:
        store.add([_row("q0")])
        store.commit()
    (out / "video_stats").mkdir()
    for k, name in enumerate(["part-20250101T000000-11-aaaaaaaa-00001.parquet",
                              "part-20250101T000001-11-aaaaaaaa-00002.parquet"]):
        pl.DataFrame([{**_stats("v0", frames_used=8 * (k + 1)), "written_at": T0}],
                     schema=VIDEO_STATS_SCHEMA).write_parquet(out / "video_stats" / name)
    (out / "predictions").mkdir()
    for k, name in enumerate(["part-20250101T000000000000-11-bbbbbbbb.parquet",
                              "part-20250101T000001000000-11-cccccccc.parquet"]):
        pl.DataFrame([_prediction(f"q{k}")], schema=PREDICTION_SCHEMA).write_parquet(out / "predictions" / name,
                                                                                   compression="zstd")


def test_a_directory_in_the_old_layout_reads_compacts_and_passes_doctor(tmp_path: Path) -> None:
    _old_layout(tmp_path)
    stats = ResultsDir.open(tmp_path).video_stats().collect()
    assert stats.select("video_id", "frames_used").rows() == [("v0", 16)]  # the pass read from the most frames
    assert scan_predictions(tmp_path).collect().height == 2
    assert doctor(tmp_path) == []
    report = compact_dir(tmp_path, grace_s=0)
    assert (report.inputs, report.outputs) == (4, 2)
    assert_frame_equal(ResultsDir.open(tmp_path).video_stats().collect(), stats)
    assert scan_predictions(tmp_path).collect().sort("item_id")["item_id"].to_list() == ["q0", "q1"]


def test_the_next_holder_of_the_lock_cleans_every_tables_leftovers(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer killed mid-write leaves a hidden temp file, a compaction killed before its last step the shards it
    holds: the next holder of the lock removes both, in video_stats/ and predictions/ as in results/."""
    _directory(tmp_path, shards=2)
    compact_dir(tmp_path)  # the inputs stay for the grace period
    temps = [VIDEO_STATS.dir(tmp_path) / ".part-x.parquet.fs-1-2-0123abcd.tmp",
             PREDICTIONS.dir(tmp_path) / ".part-y.parquet.fs-1-2-0123abcd.tmp"]
    for t in temps:
        t.write_bytes(b"half a shard")
    held = [p for t in (VIDEO_STATS, PREDICTIONS) for p in t.dir(tmp_path).glob("part-*.parquet") if not is_compacted(p)]
    assert len(held) == 4
    monkeypatch.setattr(store_module, "GRACE_S", 0.0)  # the grace period over
    ResultStore(tmp_path).close()
    assert not any(t.exists() for t in temps) and not any(p.exists() for p in held)
