"""The frame cache: round trip, shared by content, and invalid files are misses."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from engine.frames.cache import FrameCache, content_hash
from engine.frames.decode import DECODE_CALLS, DecodeRequest, decode_video

ASSETS = Path(__file__).resolve().parents[1] / "assets"
IDX = np.array([0, 5, 17, 30, 47])


@pytest.fixture
def video(tmp_path: Path) -> Path:
    p = tmp_path / "v.mp4"
    shutil.copy(ASSETS / "tiny.mp4", p)
    return p


def _files(cache: FrameCache) -> list[Path]:
    return sorted(cache.dir.rglob("*.fsf"))


@pytest.mark.parametrize("decoder", ["pyav", "decord"])
def test_lossless_round_trip_and_warm_hits_decode_nothing(video: Path, tmp_path: Path, decoder: str) -> None:
    cache = FrameCache(tmp_path / "cache", "npy")
    raw = decode_video(DecodeRequest(video, IDX, decoder))
    calls = DECODE_CALLS[str(video)]
    cold = decode_video(DecodeRequest(video, IDX, decoder), cache)
    assert DECODE_CALLS[str(video)] == calls + 1 and cache.misses == 5
    warm = decode_video(DecodeRequest(video, IDX, decoder), cache)
    assert DECODE_CALLS[str(video)] == calls + 1 and cache.hits == 5  # no decode on a hit
    for d in (cold, warm):
        assert d.pipeline == "cached" and d.decoder == decoder
        assert np.array_equal(d.frames, raw.frames)
        assert np.allclose(d.timestamps, raw.timestamps)
        assert d.indices.tolist() == IDX.tolist() and d.info == raw.info
    assert len(_files(cache)) == 5


def test_jpeg_cold_and_warm_give_the_same_pixels(video: Path, tmp_path: Path) -> None:
    cache = FrameCache(tmp_path / "cache", "jpeg", quality=95)
    raw = decode_video(DecodeRequest(video, IDX))
    cold = decode_video(DecodeRequest(video, IDX), cache)
    warm = decode_video(DecodeRequest(video, IDX), cache)
    assert np.array_equal(cold.frames, warm.frames)  # a cold miss returns what a read gives back
    assert np.abs(cold.frames.astype(int) - raw.frames).mean() < 3
    assert "jpeg95" in str(cache.dir)
    jpegs = warm.view_jpeg(np.array([47, 0]))
    assert jpegs is not None and all(j[:2] == b"\xff\xd8" for j in jpegs)  # JPEG start-of-image
    assert warm.view_jpeg(np.array([0]), (48, 32)) is None  # only the decoded size is stored
    assert decode_video(DecodeRequest(video, IDX)).view_jpeg(IDX) is None  # the raw pipeline has none


def test_partial_hits_decode_only_the_rest_and_sizes_are_separate(video: Path, tmp_path: Path) -> None:
    cache = FrameCache(tmp_path / "cache", "png")
    decode_video(DecodeRequest(video, IDX[:3]), cache)
    d = decode_video(DecodeRequest(video, IDX), cache)
    assert (cache.hits, cache.misses) == (3, 3 + 2)
    assert np.array_equal(d.frames, decode_video(DecodeRequest(video, IDX)).frames)  # png is lossless
    small = decode_video(DecodeRequest(video, IDX, size=(48, 32)), cache)
    assert small.frames.shape == (5, 32, 48, 3) and cache.misses == 10
    assert np.array_equal(small.frames, decode_video(DecodeRequest(video, IDX, size=(48, 32))).frames)


def test_truncated_or_corrupt_cache_file_is_a_miss(video: Path, tmp_path: Path) -> None:
    cache = FrameCache(tmp_path / "cache", "npy")
    good = decode_video(DecodeRequest(video, IDX), cache)
    files = _files(cache)
    data = files[1].read_bytes()
    files[1].write_bytes(data[: len(data) // 2])  # an interrupted write that somehow landed
    flipped = bytearray(files[2].read_bytes())
    flipped[-10] ^= 0xFF  # a flipped bit in the payload: the CRC catches it
    files[2].write_bytes(bytes(flipped))
    files[3].write_bytes(b"")
    calls = DECODE_CALLS[str(video)]
    again = decode_video(DecodeRequest(video, IDX), cache)
    assert DECODE_CALLS[str(video)] == calls + 1  # the three bad frames were decoded again, in one pass
    assert cache.misses == 5 + 3 and cache.hits == 2
    assert np.array_equal(again.frames, good.frames)
    assert files[1].read_bytes() == data  # rewritten whole
    decode_video(DecodeRequest(video, IDX), cache)
    assert DECODE_CALLS[str(video)] == calls + 1


def test_leftover_temp_files_are_ignored(video: Path, tmp_path: Path) -> None:
    cache = FrameCache(tmp_path / "cache", "npy")
    decode_video(DecodeRequest(video, IDX[:1]), cache)
    frame_dir = _files(cache)[0].parent
    (frame_dir / f".{5:07d}.fsf.123.456.tmp").write_bytes(b"FSWF half a frame")
    d = decode_video(DecodeRequest(video, IDX[:2]), cache)
    assert d.indices.tolist() == [0, 5] and cache.misses == 2


def test_cache_is_keyed_by_content_not_path(video: Path, tmp_path: Path) -> None:
    cache = FrameCache(tmp_path / "cache", "npy")
    decode_video(DecodeRequest(video, IDX), cache)
    twin = tmp_path / "elsewhere" / "renamed.mp4"
    twin.parent.mkdir()
    shutil.copy(video, twin)
    calls = DECODE_CALLS[str(twin)]
    d = decode_video(DecodeRequest(twin, IDX), cache)
    assert DECODE_CALLS[str(twin)] == calls and d.frames.shape[0] == 5
    assert content_hash(twin) == content_hash(video)
    # an edited file (new bytes, new mtime) is a different video
    with open(twin, "ab") as f:
        f.write(b"\0")
    os.utime(twin, ns=(1, 1))
    assert content_hash(twin) != content_hash(video)


def test_frames_that_do_not_exist_are_recorded_not_cached(tmp_path: Path) -> None:
    path = ASSETS / "lying_count.mp4"
    cache = FrameCache(tmp_path / "cache", "npy")
    d = decode_video(DecodeRequest(path, np.array([0, 40])), cache)
    assert d.indices.tolist() == [0] and d.missing.tolist() == [40]
    assert len(_files(cache)) == 1
    calls = DECODE_CALLS[str(path)]
    again = decode_video(DecodeRequest(path, np.array([0, 40])), cache)
    assert again.missing.tolist() == [40] and DECODE_CALLS[str(path)] == calls  # known absent: no pass


def test_unknown_format_fails(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="known"):
        FrameCache(tmp_path, "webp")  # type: ignore[arg-type]


def test_other_sizes_are_cached_per_size_and_match_the_raw_pipeline(video: Path, tmp_path: Path) -> None:
    cache = FrameCache(tmp_path / "cache", "npy")
    also = {(24, 16): np.array([5, 11])}  # 11 is needed only at the small size
    raw = decode_video(DecodeRequest(video, IDX, "pyav", (48, 32), also))
    calls = DECODE_CALLS[str(video)]
    cold = decode_video(DecodeRequest(video, IDX, "pyav", (48, 32), also), cache)
    warm = decode_video(DecodeRequest(video, IDX, "pyav", (48, 32), also), cache)
    assert DECODE_CALLS[str(video)] == calls + 1 and (cache.misses, cache.hits) == (7, 7)
    for d in (cold, warm):
        assert np.array_equal(d.frames, raw.frames)
        assert np.array_equal(d.view(np.array([11, 5]), (24, 16)), raw.view(np.array([11, 5]), (24, 16)))
        assert np.allclose(d.times(np.array([11])), [11 / 24])
        assert d.resizes == 0
    with pytest.raises(KeyError):
        raw.view(np.array([11]))  # only held at the small size


def test_jpeg_bytes_for_every_cached_size(video: Path, tmp_path: Path) -> None:
    cache = FrameCache(tmp_path / "cache", "jpeg")
    d = decode_video(DecodeRequest(video, IDX, "pyav", None, {(48, 32): IDX[:2]}), cache)
    assert len(d.view_jpeg(IDX) or []) == 5 and len(d.view_jpeg(IDX[:2], (48, 32)) or []) == 2
    assert d.view_jpeg(IDX, (48, 32)) is None  # not all of them were asked at that size
