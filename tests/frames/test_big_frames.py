"""Large frames: a video over `[decode] max_source_pixels` is refused before decoding; views of held frames that
step evenly (all of them, every other one, one frame repeated) are no copy, nor are views repeating frames unevenly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.config import DecodeSpec
from engine.frames.decode import DecodeRequest, SourceTooLargeError, check_source_size, decode_video, get_decoder
from engine.frames.view import RepeatedFrames

ASSETS = Path(__file__).resolve().parents[1] / "assets"
TINY = ASSETS / "tiny.mp4"  # 48 frames, 96x64


def test_the_cap_refuses_a_frame_over_it_naming_file_and_size() -> None:
    info = get_decoder("pyav").probe(TINY)
    with pytest.raises(SourceTooLargeError, match=r"tiny\.mp4: 96x64 \(0\.0 MP per frame, 0 MiB as RGB\) is over "
                                                  r"\[decode\] max_source_pixels = 6143: refused before decoding"):
        check_source_size(TINY, info, 96 * 64 - 1)
    check_source_size(TINY, info, 96 * 64)  # at the cap: decoded
    check_source_size(TINY, info, None)  # no cap
    assert DecodeSpec().max_source_pixels == 7680 * 4320  # 8K UHD passes by default, 10,000 x 10,000 does not


def test_views_that_step_evenly_through_the_held_frames_are_no_copy() -> None:
    held = np.arange(0, 48, 2)
    d = decode_video(DecodeRequest(TINY, held, "pyav"))
    cases = {
        "all held": held,
        "every other held": held[::2],
        "one frame repeated": np.array([10, 10, 10, 10, 10, 10]),
        "a run": held[3:9],
    }
    for name, idx in cases.items():
        v = d.view(idx, shared=True)
        assert np.shares_memory(v, d.frames), name
        assert not v.flags.writeable and v.shape == (idx.size, 64, 96, 3), name
        assert np.array_equal(v, d.view(idx)), name  # the same pixels as a copied view
    before = d.nbytes
    uneven = np.array([0, 0, 2, 2, 2, 4])  # a short video's repeats: each distinct frame named once, no copy
    v = d.view(uneven, shared=True)
    assert isinstance(v, RepeatedFrames) and all(np.shares_memory(f, d.frames) for f in v.frames)
    assert d.view(uneven, shared=True) is v and d.nbytes == before  # views of held frames add nothing
    assert np.array_equal(v, d.view(uneven))  # the same pixels; the array an engine asks for is made once
    assert d.nbytes == before + v.nbytes == before + v.held_bytes
