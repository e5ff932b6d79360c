"""Bad media raises DecodeError carrying the decoder's own message, for every decoder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.frames.cache import FrameCache
from engine.frames.decode import DecodeError, DecodeRequest, decode_video, get_decoder

ASSETS = Path(__file__).resolve().parents[1] / "assets"
BAD = {
    "truncated.mp4": "Invalid data",  # the index (moov, written last) is cut off
    "random.mp4": "Invalid data",
    "empty.mp4": "Invalid data",
    "audio_only.mp4": "no video stream",
    "missing.mp4": "No such file|not found",
}


@pytest.mark.parametrize("decoder", ["pyav", "decord"])
@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_media_raises_decode_error(name: str, decoder: str) -> None:
    path = ASSETS / name
    with pytest.raises(DecodeError, match=BAD[name]) as probe_err:
        get_decoder(decoder).probe(path)
    assert str(path) in str(probe_err.value)
    with pytest.raises(DecodeError, match=BAD[name]):
        decode_video(DecodeRequest(path, np.array([0, 1]), decoder))


@pytest.mark.parametrize("name", ["truncated.mp4", "random.mp4", "audio_only.mp4"])
def test_bad_media_through_the_frame_cache(name: str, tmp_path: Path) -> None:
    with pytest.raises(DecodeError, match=BAD[name]):
        decode_video(DecodeRequest(ASSETS / name, np.array([0])), FrameCache(tmp_path, "npy"))


def test_the_assets_are_small() -> None:
    assert all(p.stat().st_size < 50_000 for p in ASSETS.iterdir())
