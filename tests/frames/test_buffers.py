"""Recycled frame memory: reused only once nothing references the frames, within its bounds."""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pytest

from engine.frames import buffers as buffers_mod
from engine.frames.buffers import FrameBuffers
from engine.frames.decode import DecodeRequest, decode_video

TINY = Path(__file__).resolve().parents[1] / "assets" / "tiny.mp4"
SHAPE = (4, 64, 96, 3)
NBYTES = int(np.prod(SHAPE))


def test_memory_returns_only_when_every_view_is_gone() -> None:
    pool = FrameBuffers(min_bytes=1)
    frames = pool.empty(SHAPE)
    frames[...] = 7
    view, row, picked = frames[1:3], frames[2], frames[[0, 3]]  # slices share memory; fancy index copies
    import torch

    tensor = torch.from_numpy(frames[3])
    mem = memoryview(frames[0])
    del frames, picked
    gc.collect()
    assert pool.free_bytes() == 0  # slices, a tensor and a memoryview still read the memory
    del view, row
    gc.collect()
    assert pool.free_bytes() == 0
    del tensor
    gc.collect()
    assert pool.free_bytes() == 0
    mem.release()
    del mem
    gc.collect()
    assert pool.free_bytes() == NBYTES
    again = pool.empty(SHAPE)
    assert (pool.reused, pool.fresh) == (1, 1) and pool.free_bytes() == 0
    assert again.shape == SHAPE and again.dtype == np.uint8 and again.flags.c_contiguous and again.flags.writeable


def test_bounds_best_fit_and_small_requests() -> None:
    pool = FrameBuffers(max_free=2, max_free_bytes=10 * NBYTES, min_bytes=NBYTES // 4, max_waste=1.5)
    small = pool.empty((1, 8, 8, 3))  # under min_bytes: a plain array, never pooled
    assert small.base is None and pool.fresh == 0
    a, b, c = (pool.empty(SHAPE) for _ in range(3))
    del a, b, c
    gc.collect()
    assert pool.free_bytes() == 2 * NBYTES  # at most max_free blocks kept
    big = pool.empty((8, 64, 96, 3))  # no free block is large enough: fresh
    assert pool.fresh == 4 and pool.reused == 0
    del big
    gc.collect()
    half = pool.empty((2, 64, 96, 3))
    assert (pool.fresh, pool.reused) == (5, 0)  # the free blocks are more than 1.5x too large for it
    del half
    gc.collect()
    # the oldest block went back to the system to keep max_free: one of 2x and the half-size one remain
    assert pool.free_bytes() == 2 * NBYTES + NBYTES // 2
    tight = FrameBuffers(max_free=8, max_free_bytes=NBYTES, min_bytes=1)
    x, y = tight.empty(SHAPE), tight.empty(SHAPE)
    del x, y
    gc.collect()
    assert tight.free_bytes() == NBYTES  # the byte bound holds too


def test_a_decode_reuses_memory_of_frames_gone_and_leaves_live_frames_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    pool = FrameBuffers(min_bytes=1)
    monkeypatch.setattr("engine.frames.decode_pyav.FRAME_BUFFERS", pool)
    assert buffers_mod.FRAME_BUFFERS is not pool  # only the decoder's pool is replaced
    idx = np.arange(0, 48, 3)
    first = decode_video(DecodeRequest(TINY, idx, "pyav"))
    kept = first.frames.copy()
    second = decode_video(DecodeRequest(TINY, idx[::-1].copy(), "pyav"))  # first is alive: fresh memory
    assert pool.reused == 0 and not np.shares_memory(first.frames, second.frames)
    assert np.array_equal(second.frames, kept) and np.array_equal(first.frames, kept)
    del first, second
    gc.collect()
    third = decode_video(DecodeRequest(TINY, idx, "pyav"))  # the memory of the frames gone is reused
    assert pool.reused == 1
    assert np.array_equal(third.frames, kept)
