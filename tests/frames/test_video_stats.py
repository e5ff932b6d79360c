"""Low-level video statistics from the frames a decode pass already holds: hand-made frames, hand-computed values,
and the real decode path carrying them (a decoded video's facts keep them; no second pass)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.frames.base import VideoInfo
from engine.frames.decode import DECODE_CALLS, DecodeRequest, decode_video
from engine.frames.stats import VideoStats, frame_stats, luma

ASSETS = Path(__file__).resolve().parents[1] / "assets"
INFO = VideoInfo(n_frames=300, fps=30.0, width=640, height=360)


def _gray(*levels: int, w: int = 8, h: int = 4) -> np.ndarray:
    return np.stack([np.full((h, w, 3), v, np.uint8) for v in levels])


def test_brightness_motion_and_cuts_of_uniform_frames() -> None:
    """Lumas 0, 0.2, 1.0: brightness 0.4, no contrast; differences 0.2 and 0.8: motion 0.5, both above the cut
    threshold (0.15), neither static."""
    s = frame_stats(_gray(0, 51, 255), INFO)
    assert s.brightness == pytest.approx(0.4) and s.contrast == pytest.approx(0.0)
    assert s.motion_energy == pytest.approx(0.5) and s.scene_cuts == 2 and s.static_share == 0.0
    assert (s.duration_s, s.fps, s.width, s.height, s.n_frames, s.frames_used) == (10.0, 30.0, 640, 360, 300, 3)


def test_small_changes_are_static_large_ones_cuts() -> None:
    """Levels 100, 101, 121, 161: differences 1/255 (static, < 0.01), 20/255 (neither), 40/255 = 0.157 (a cut)."""
    s = frame_stats(_gray(100, 101, 121, 161), INFO)
    assert s.motion_energy == pytest.approx(61 / 255 / 3)
    assert s.scene_cuts == 1 and s.static_share == pytest.approx(1 / 3)
    assert s.brightness == pytest.approx((100 + 101 + 121 + 161) / 255 / 4)


def test_contrast_is_each_frames_luma_deviation() -> None:
    """Half black, half white: luma std 0.5; two identical frames: no motion, all static."""
    half = np.zeros((2, 4, 8, 3), np.uint8)
    half[:, :, 4:] = 255
    s = frame_stats(half, INFO)
    assert s.contrast == pytest.approx(0.5) and s.brightness == pytest.approx(0.5)
    assert (s.motion_energy, s.scene_cuts, s.static_share) == (0.0, 0, 1.0)


def test_one_frame_has_no_pairwise_statistics_and_large_frames_are_reduced() -> None:
    s = frame_stats(_gray(51), INFO)
    assert (s.motion_energy, s.scene_cuts, s.static_share) == (None, None, None)
    assert s.brightness == pytest.approx(0.2)
    assert luma(np.full((720, 1280, 3), 51, np.uint8)).shape == (36, 64)  # every 20th pixel: 64 on the long side
    assert luma(np.zeros((2, 100, 130, 3), np.uint8)).shape == (2, 34, 44)  # every 3rd: ceil(130 / 3) = 44


def test_a_decode_pass_carries_the_statistics_of_its_frames() -> None:
    """A raw decode pass computes them from the frames it decoded (the same pass: one decode call), and a decoded video's
    facts (what a decode actor sends the driver instead of pixels) keep them."""
    path = ASSETS / "tiny.mp4"
    before = DECODE_CALLS[str(path)]
    idx = np.arange(0, 48, 4)
    video = decode_video(DecodeRequest(path, idx))
    assert DECODE_CALLS[str(path)] == before + 1
    s = video.stats
    assert isinstance(s, VideoStats) and s.frames_used == idx.size
    assert s == frame_stats(video.frames, video.info)
    assert (s.n_frames, s.width, s.height) == (48, 96, 64) and s.duration_s == pytest.approx(2.0)
    assert video.facts().stats == s  # the pixel-free copy a decode actor returns


def _sweep(tmp_path: Path, budgets: list[dict]) -> None:
    import asyncio

    from helpers.specs import small_spec_dict
    from test_scheduler_media import FakeEngine

    from engine.config import parse_spec
    from engine.sweep import Sweep

    d = small_spec_dict(tmp_path / "out", budgets=budgets)
    asyncio.run(Sweep(parse_spec(d), backends={"tiny": FakeEngine()}).run())


def test_a_sweep_keeps_each_videos_statistics_beside_its_rows_and_a_rerun_adds_to_them(tmp_path: Path) -> None:
    """One row per (dataset, video), committed as parts under OUT/video_stats; a rerun that decodes more frames
    adds a part, and readers keep the statistics read from the most frames."""
    import polars as pl

    from engine.results import ResultsDir
    from engine.results.video_stats import with_video_stats

    _sweep(tmp_path, [{"frames": 0}, {"frames": 2}, {"frames": 4}])
    stats = ResultsDir.open(tmp_path / "out").video_stats().collect().sort("video_id")
    rows = ResultsDir.open(tmp_path / "out").scan().collect()
    assert stats["video_id"].to_list() == sorted(set(rows["video_id"])) and stats.height == 3
    assert set(stats["dataset"]) == {"synthetic"}
    # 32 frames, uniform 2 -> {0, 31}, uniform 4 -> {0, 10, 21, 31}: one pass over their union, 4 frames
    assert set(stats["frames_used"]) == {4} and set(stats["n_frames"]) == {32}
    assert set(stats["duration_s"]) == {4.0} and set(stats["pixels"]) == {96 * 64}
    assert stats["motion_energy"].is_not_null().all() and stats["brightness"].is_between(0, 1).all()
    _sweep(tmp_path, [{"frames": 0}, {"frames": 2}, {"frames": 4}, {"frames": 8}])  # resumes: decodes f8 only
    again = ResultsDir.open(tmp_path / "out").video_stats().collect()
    assert again.height == 3 and set(again["frames_used"]) == {8}
    assert len(list((tmp_path / "out" / "video_stats").glob("part-*.parquet"))) == 2
    joined = with_video_stats(ResultsDir.open(tmp_path / "out").scan(), ResultsDir.open(tmp_path / "out").video_stats()).collect()
    assert joined["video_motion_energy"].is_not_null().all()
    assert joined.select(pl.col("video_pixels").unique()).to_series().to_list() == [96 * 64]


def test_stats_are_not_written_once_the_directory_lock_is_lost(tmp_path: Path) -> None:
    from engine.results import ResultsDir
    from engine.results.video_stats import VideoStatsLog, stats_row

    log = VideoStatsLog(tmp_path)
    log.add([stats_row("d", "v", frame_stats(_gray(0, 51), INFO))])

    def lost() -> None:
        raise RuntimeError("the lock is another driver's")

    with pytest.raises(RuntimeError, match="another driver"):
        log.commit(lost)
    assert log.buffered == 1 and not (tmp_path / "video_stats").exists()
    assert log.commit() == 1
    (tmp_path / "results").mkdir()  # a results directory with no row yet
    got = ResultsDir.open(tmp_path).video_stats().collect()
    assert got.select("dataset", "video_id", "frames_used", "scene_cuts").rows() == [("d", "v", 2, 1)]


def test_metrics_and_report_of_a_sweep_read_its_video_statistics(tmp_path: Path) -> None:
    """`framesweep metrics` joins OUT/video_stats to the rows: every group of the synthetic sweep has the low-level
    analysis over its 9 items (3 videos), and `framesweep report` shows it."""
    import json

    from typer.testing import CliRunner

    from engine.cli import app

    _sweep(tmp_path, [{"frames": 0}, {"frames": 2}, {"frames": 4}])
    res = CliRunner().invoke(app, ["metrics", str(tmp_path / "out"), "--n-boot", "20", "--json",
                                   str(tmp_path / "m.json")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "m.json").read_text())
    low = doc["groups"][0]["low_level"]
    assert (low["n_items"], low["n_with_stats"]) == (9, 9)
    names = {s["statistic"] for s in low["statistics"]}
    assert {"motion_energy", "brightness", "contrast", "duration_s"} <= names
    res = CliRunner().invoke(app, ["report", str(tmp_path / "out"), "--n-boot", "20", "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    assert 'id="table-low-level-0"' in (tmp_path / "r.html").read_text()


def test_a_remote_video_keeps_the_statistics_of_its_largest_pass() -> None:
    """A decode actor's pixel-free facts carry the statistics to the driver; a later round's pass (an adaptive
    policy's) that read more frames replaces them, one that read fewer does not. No Ray: the handles only."""
    from engine.frames.remote import DecodedPart, RemoteVideo

    path = ASSETS / "tiny.mp4"
    small, large = decode_video(DecodeRequest(path, np.arange(0, 48, 16))), decode_video(DecodeRequest(path, np.arange(1, 48, 4)))

    def remote(video):  # type: ignore[no-untyped-def]
        return RemoteVideo(DecodedPart(video.facts(), video.held(), video.nbytes, None, "w"), object())

    first = remote(small)
    assert first.stats == small.stats and small.stats is not None and small.stats.frames_used == 3
    first.absorb(remote(large))
    assert first.stats == large.stats and first.stats.frames_used == 12
    bigger_first = remote(large)
    bigger_first.absorb(remote(small))
    assert bigger_first.stats == large.stats
