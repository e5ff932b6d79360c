"""Recycled memory for decoded frames: a video's frame array reuses the memory of one that is gone.

A union of a few hundred frames is hundreds of MB (442 frames at 640x360: 305 MB). Fresh
memory costs page faults and zeroing by the kernel on first touch, and with transparent huge
pages the kernel may first compact memory: measured here, writing 305 MB into a fresh array
took 0.06 s (huge pages at hand) to 0.44 s (compaction), against 0.02 s into memory already
touched, while decoding the whole 60 s clip takes ~0.8 s. A sweep decodes video after video at
the same sizes, so the memory of a video whose frames are no longer referenced anywhere is
handed to the next decode.

Safety rests on reference counting: each array handed out is a view of a private owner array
over the pooled block, and every numpy view, torch tensor, PIL image or memoryview made from it
keeps that owner alive. The block goes back to the pool only when the owner is collected, i.e.
when nothing can read or write those frames any more.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

__all__ = ["FRAME_BUFFERS", "FrameBuffers"]


class FrameBuffers:
    """A small pool of large uint8 blocks, best fit, bounded in count and bytes.

    Args:
        max_free: Blocks kept for reuse at most.
        max_free_bytes: Bytes kept for reuse at most (what the pool may hold beyond live frames).
        min_bytes: Requests below this get a plain new array (small arrays are cheap).
        max_waste: A free block serves a request only if it is at most this many times larger.
    """

    def __init__(self, max_free: int = 16, max_free_bytes: int = 2 << 30, min_bytes: int = 8 << 20,
                 max_waste: float = 1.5) -> None:
        self.max_free, self.max_free_bytes = max_free, max_free_bytes
        self.min_bytes, self.max_waste = min_bytes, max_waste
        self._free: list[np.ndarray] = []
        self._lock = threading.Lock()
        self.reused = 0  # requests served from the pool (tests and benchmarks read these)
        self.fresh = 0

    def empty(self, shape: tuple[int, ...]) -> np.ndarray:
        """An uninitialised uint8 array of `shape` (C order), on recycled memory when one fits."""
        n = int(np.prod(shape, dtype=np.int64))
        if n < self.min_bytes:
            return np.empty(shape, np.uint8)
        block = self._take(n)
        # The owner reads the block through a memoryview, so every view made from the owner names
        # the owner as its base (numpy stops collapsing bases at a non-array): while any lives,
        # the owner lives, and the block stays out of the pool.
        # (numpy's stubs give ndarray `__buffer__` on Python 3.12+ only)
        owner = np.frombuffer(memoryview(block), np.uint8)  # type: ignore[arg-type]
        weakref.finalize(owner, self._give_back, block).atexit = False
        return owner[:n].reshape(shape)

    def _take(self, n: int) -> np.ndarray:
        with self._lock:
            fits = [k for k, b in enumerate(self._free) if n <= b.size <= n * self.max_waste]
            if fits:
                self.reused += 1
                return self._free.pop(min(fits, key=lambda k: self._free[k].size))  # best fit
            self.fresh += 1
        return np.empty(n, np.uint8)  # numpy asks the kernel for huge pages for large arrays

    def _give_back(self, block: np.ndarray) -> None:
        with self._lock:
            self._free.append(block)
            # keep the most recent blocks within the bounds (the oldest go back to the system)
            while len(self._free) > self.max_free or sum(b.size for b in self._free) > self.max_free_bytes:
                self._free.pop(0)

    def free_bytes(self) -> int:
        with self._lock:
            return sum(b.size for b in self._free)


FRAME_BUFFERS = FrameBuffers()  # shared by this process's decoders
