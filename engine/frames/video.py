"""A decoded video: the union of its planned frames, and pure per-budget views of them."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from engine.frames.base import DecodeError, DecodeRequest, FrameBatch, VideoInfo
from engine.frames.held import BudgetFrames
from engine.frames.resize import resize_frame
from engine.frames.stats import VideoStats
from engine.frames.view import RepeatedFrames

__all__ = ["DecodedVideo"]

Size = tuple[int, int]


@dataclass
class DecodedVideo:
    """The union of a video's planned frames, decoded once.

    Frames live at the decoded size (`frames`, the largest any budget needs) and, for
    budgets at smaller sizes, in a per-size store of index -> frame: filled in the
    decode pass itself (pyav, `DecodeRequest.also`) or by the first view that asks
    (resized once per (frame, size), only the frames asked for).

    Attributes:
        path: The video file.
        decoder: Decoder name.
        indices: Sorted unique frame indices held at the decoded size.
        frames: (K, H, W, 3) uint8 RGB at the decoded size, upright, in `indices` order.
        timestamps: (K,) seconds from the first frame (real pts: right for variable frame rate).
        info: The video's facts (real frame count, fps, displayed size, rotation).
        decode_s: Seconds spent decoding (or reading the frame cache).
        pipeline: "raw" (decoded now) or "cached" (from the on-disk frame cache).
        missing: Indices asked for that do not exist or do not decode; views asking for them fail.
        resizes: Frames resized by views so far (each (frame, size) at most once).
        jpeg: {(w, h): {index: JPEG bytes}} for held frames (the JPEG frame cache fills it, so the
            cached pipeline can send its frames without encoding them again).
        decoded_size: (w, h) of `frames` (None: read from `frames`, else the video's size).
        stats: Low-level statistics of the decoded frames (`engine.frames.stats`; a few numbers that
            travel with the facts, no pixels), None when not computed (the frame cache's frames).
    """

    path: Path
    decoder: str
    indices: np.ndarray
    frames: np.ndarray
    timestamps: np.ndarray
    info: VideoInfo
    decode_s: float
    pipeline: str = "raw"
    missing: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    resizes: int = 0
    jpeg: dict[Size, dict[int, bytes]] = field(default_factory=dict, repr=False)
    decoded_size: Size | None = None
    stats: VideoStats | None = None
    memo: dict[object, object] = field(default_factory=dict, repr=False, compare=False)
    """Values the steps after decoding derive from this video (the request step keeps each budget's media here,
    shared by its questions and models); emptied when frames join or go."""
    _resized: dict[Size, dict[int, np.ndarray]] = field(default_factory=dict, repr=False)
    _times: dict[int, float] = field(default_factory=dict, repr=False)
    _views: dict[tuple[Size, bytes], np.ndarray | RepeatedFrames] = field(default_factory=dict, repr=False)
    _released: bool = field(default=False, repr=False)

    @classmethod
    def from_batch(cls, request: DecodeRequest, batch: FrameBatch, decode_s: float, *, pipeline: str = "raw",
                   jpeg: dict[Size, dict[int, bytes]] | None = None, stats: VideoStats | None = None) -> DecodedVideo:
        """The video one decode pass of `request` gave: `batch`'s frames at the request's size (the stored
        size when it has none), its frames at other sizes (`batch.extra`) and every frame's time
        (`batch.times`); the frame cache adds each size's JPEG bytes (`jpeg`)."""
        info = batch.info
        w, h = request.size or (info.width, info.height)
        return cls(request.path, request.decoder, batch.indices, batch.frames, batch.timestamps, info, decode_s,
                   pipeline=pipeline, missing=batch.missing, jpeg=dict(jpeg or {}), decoded_size=(int(w), int(h)),
                   stats=stats, _resized=dict(batch.extra), _times=dict(batch.times))

    @property
    def size(self) -> Size:
        """(w, h) of the decoded frames."""
        if self.decoded_size is not None:
            return self.decoded_size
        if self.frames.ndim == 4 and self.frames.shape[0]:
            return int(self.frames.shape[2]), int(self.frames.shape[1])
        return self.info.width, self.info.height

    @property
    def node_id(self) -> None:
        """None: the pixels are in this process (`engine.frames.held.HeldVideo`)."""
        return None

    @property
    def fetched_bytes(self) -> int:
        """0: nothing was fetched from elsewhere (whoever decoded the pixels here counted them)."""
        return 0

    def budget(self, indices: np.ndarray, size: Size, *, by_ref: bool = False) -> BudgetFrames:
        """One budget's frames: the shared read-only view (`view` with `shared=True`), and from the frame cache
        their JPEG bytes; the pixels are here, so `by_ref` changes nothing (`engine.frames.held.HeldVideo`)."""
        frames = self.view(indices, size, shared=True)
        return frames, self.view_jpeg(indices, size) if self.pipeline == "cached" else None

    def check(self, indices: np.ndarray) -> list[int]:
        """`indices` as ints; DecodeError naming the frames among them that do not exist or did not decode."""
        if self._released:
            raise RuntimeError(f"{self.path}: frames were released")
        idx = np.asarray(indices, dtype=np.int64)
        lost = np.intersect1d(idx, self.missing)
        if lost.size:
            raise DecodeError(f"{self.path}: frames {lost.tolist()[:10]} do not exist or do not decode "
                              f"(the video has {self.info.n_frames} real frames)")
        return idx.tolist()

    def _rows(self, indices: np.ndarray) -> np.ndarray:
        idx = np.asarray(self.check(indices), dtype=np.int64)
        rows = np.searchsorted(self.indices, idx)
        if rows.size and (rows.max() >= self.indices.size or not np.array_equal(self.indices[rows], idx)):
            raise KeyError("view asks for frames that were not decoded")
        return rows

    def view(self, indices: np.ndarray, size: Size | None = None,
             shared: bool = False) -> np.ndarray | RepeatedFrames:
        """One budget's frames (N, H, W, 3) in `indices` order, at `size` (w, h) or the decoded size.

        Frames at another size come from the per-size store; one not there yet is resized from
        the decoded frame (area filter) the first time any view asks for it, then kept.

        A view is a new array. With `shared=True`, views of the same (indices, size) are one
        read-only value (the questions of one video and budget then hold one copy, not one each):
        at the decoded size one whose frames step evenly through the held ones (all of them, every
        other one, one frame repeated) is no copy at all but a read-only view of them; one whose
        indices repeat frames otherwise (a video shorter than its budget: 0, 0, 1, 1, 2, ...) is a
        `RepeatedFrames` naming each distinct frame once, at any size, so no budget copies a frame
        per position (`np.asarray` gives the array, the same values a copy would hold).
        """
        return self._shared(indices, size) if shared else self._fresh(indices, size)

    def _fresh(self, indices: np.ndarray, size: Size | None) -> np.ndarray:
        """A new array of the frames at `indices`, at `size` (`view` without `shared`)."""
        if size is None or tuple(size) == self.size:
            return self.frames[self._rows(indices)]
        size = (int(size[0]), int(size[1]))
        idx = self.check(indices)
        if not idx:
            return np.empty((0, size[1], size[0], 3), np.uint8)
        done = self._at_size(idx, size)
        return np.stack([done[i] for i in idx])

    def _shared(self, indices: np.ndarray, size: Size | None) -> np.ndarray | RepeatedFrames:
        """The read-only view of (indices, size) every caller shares (`view` with `shared=True`)."""
        at = self.size if size is None else (int(size[0]), int(size[1]))
        idx = np.asarray(indices, dtype=np.int64)
        key = (at, idx.tobytes())
        if key not in self._views:
            held = self._held_view(idx) if at == self.size else None
            if held is None and np.unique(idx).size < idx.size:
                self._views[key] = self._repeated(idx, at)
            else:
                arr = held if held is not None else self._fresh(idx, at)
                arr.setflags(write=False)
                self._views[key] = arr
        return self._views[key]

    def _at_size(self, idx: list[int], size: Size) -> dict[int, np.ndarray]:
        """The per-size store of `size`, holding every frame of `idx` (resized now where missing)."""
        done = self._resized.setdefault(size, {})
        todo = sorted({i for i in idx if i not in done})
        if todo:
            for i, r in zip(todo, self._rows(np.asarray(todo)).tolist()):
                done[i] = resize_frame(self.frames[r], size)
                self.resizes += 1
        return done

    def _repeated(self, idx: np.ndarray, size: Size) -> RepeatedFrames:
        """`idx` (which repeats frames) at `size` as each distinct frame once: read-only views of the held frames
        (decoded, or in the per-size store), none copied."""
        distinct, order = np.unique(np.asarray(self.check(idx), dtype=np.int64), return_inverse=True)
        if size == self.size:
            frames = [self.frames[r] for r in self._rows(distinct).tolist()]
        else:
            store = self._at_size(distinct.tolist(), size)
            frames = [store[i].view() for i in distinct.tolist()]
        for f in frames:
            f.setflags(write=False)  # on the view only: the held frames stay as they are
        return RepeatedFrames(frames, order)

    def _held_view(self, indices: np.ndarray) -> np.ndarray | None:
        """The held frames at `indices` without a copy when their rows step evenly (a slice of `frames`, or
        one frame repeated: stride 0); None when they do not (a gather would copy them)."""
        rows = self._rows(indices)
        if rows.size == 0:
            return None
        step = int(rows[1] - rows[0]) if rows.size > 1 else 1
        if step < 0 or not np.array_equal(rows, rows[0] + step * np.arange(rows.size)):
            return None
        if step:
            return self.frames[rows[0]:rows[-1] + 1:step]
        return np.lib.stride_tricks.as_strided(self.frames[rows[0]], shape=(rows.size, *self.frames.shape[1:]),
                                               strides=(0, *self.frames.strides[1:]), writeable=False)

    def times(self, indices: np.ndarray) -> np.ndarray:
        """Seconds from the first frame of each of `indices` (any decoded frame, at any size)."""
        known = self._times or dict(zip(self.indices.tolist(), self.timestamps.tolist()))
        try:
            return np.asarray([known[i] for i in self.check(indices)], dtype=np.float64)
        except KeyError as err:
            raise KeyError(f"frame {err} was not decoded") from None

    def view_jpeg(self, indices: np.ndarray, size: Size | None = None) -> list[bytes] | None:
        """The JPEG bytes of one budget's frames in `indices` order, or None unless every frame has
        them at this size (the JPEG frame cache stores each size it was asked for)."""
        key = self.size if size is None else (int(size[0]), int(size[1]))
        store = self.jpeg.get(key, {})
        idx = self.check(indices)
        return [store[i] for i in idx] if all(i in store for i in idx) else None

    def covered(self, size: Size) -> np.ndarray:
        """Indices this video already holds at `size` (w, h): decoded there, or converted/resized to it."""
        key = (int(size[0]), int(size[1]))
        held = [np.fromiter(self._resized.get(key, {}), dtype=np.int64)]
        if key == self.size:
            held.append(self.indices)
        return np.unique(np.concatenate(held))

    def held(self) -> dict[Size, np.ndarray]:
        """{(w, h): indices} of every size this video holds frames at (see `covered`)."""
        return {s: self.covered(s) for s in {self.size, *self._resized}}

    def facts(self) -> DecodedVideo:
        """This video without its pixels: its info, indices, timestamps, missing frames, decode time and whatever
        else it records (kilobytes), what a decode actor sends the driver while the frames stay in the object store.
        It holds no pixels: ask the frames of `held()` (taken before) where the pixels are."""
        w, h = self.size
        return replace(self, frames=np.empty((0, h, w, 3), np.uint8), decoded_size=(w, h), jpeg={}, memo={},
                       _resized={}, _views={}, _times=dict(self._times))

    @classmethod
    def merge(cls, parts: list[DecodedVideo]) -> DecodedVideo:
        """One video from the parts of several decode passes (adaptive rounds), leaving the parts unchanged."""
        first = parts[0]
        out = replace(first, _resized={s: dict(d) for s, d in first._resized.items()},
                      jpeg={s: dict(d) for s, d in first.jpeg.items()}, memo={}, _views={},
                      _times=dict(first._times))
        for p in parts[1:]:
            out.absorb(p)
        return out

    def absorb(self, other: DecodedVideo) -> None:
        """Take in frames of the same video decoded later (a later round of adaptive jobs).

        Frames at this video's decoded size join `frames`; frames at another size join that
        size's store, so every later view finds them and nothing is decoded twice.
        """
        if self._released or other._released:
            raise RuntimeError(f"{self.path}: frames were released")
        times = {**dict(zip(self.indices.tolist(), self.timestamps.tolist())), **self._times, **other._times,
                 **dict(zip(other.indices.tolist(), other.timestamps.tolist()))}
        if other.indices.size and other.size == self.size:
            idx = np.concatenate([self.indices, other.indices])
            keep = np.unique(idx, return_index=True)[1]
            frames = np.concatenate([self.frames, other.frames]) if self.frames.size else other.frames
            self.indices, self.frames = idx[keep], frames[keep]
            self.timestamps = np.asarray([times[i] for i in self.indices.tolist()], dtype=np.float64)
        elif other.indices.size:
            store = self._resized.setdefault(other.size, {})
            for i, f in zip(other.indices.tolist(), other.frames):
                store.setdefault(i, f)
        for size, frames_at in other._resized.items():
            self._resized.setdefault(size, {}).update({i: f for i, f in frames_at.items()
                                                        if i not in self._resized.get(size, {})})
        for size, jpegs in other.jpeg.items():
            self.jpeg.setdefault(size, {}).update(jpegs)
        self._times = times
        self.absorb_facts(other)

    def absorb_facts(self, other: DecodedVideo) -> None:
        """Take in what a later decode pass of the same video records beside its frames: missing frames, decode
        time, pipeline, statistics (`absorb` does it; a remote video's facts have nothing else to join)."""
        self.memo.clear()
        self.missing = np.union1d(self.missing, other.missing)
        self.decode_s += other.decode_s
        if other.pipeline == "cached":
            self.pipeline = "cached"
        if other.stats is not None and (self.stats is None or other.stats.frames_used > self.stats.frames_used):
            self.stats = other.stats  # the statistics of the pass that read the most frames

    def release(self, size: Size | None = None) -> None:
        """Free memory: the frames held at another `size`, or (no size) everything this video holds."""
        if size is not None:
            key = (int(size[0]), int(size[1]))
            self._resized.pop(key, None)
            self.jpeg.pop(key, None)
            self._views = {k: v for k, v in self._views.items() if k[0] != key}
            return
        self._resized.clear()
        self._views.clear()
        self.jpeg.clear()
        self.memo.clear()
        h, w = self.frames.shape[1:3] if self.frames.ndim == 4 else (0, 0)
        self.frames = np.empty((0, h, w, 3), np.uint8)
        self._released = True

    @property
    def nbytes(self) -> int:
        """Bytes held by decoded, resized and shared-view frames and JPEG bytes (a view of held frames adds none, nor
        does a `RepeatedFrames` until an engine asks it for one array)."""
        resized = sum(a.nbytes for d in self._resized.values() for a in d.values())
        resized += sum(a.held_bytes if isinstance(a, RepeatedFrames) else a.nbytes for a in self._views.values()
                       if isinstance(a, RepeatedFrames) or not np.may_share_memory(a, self.frames))
        encoded = sum(len(b) for d in self.jpeg.values() for b in d.values())
        return int(self.frames.nbytes + resized + encoded)
