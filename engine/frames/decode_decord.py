"""The decord decoder: one batched read over the union indices, scaled while decoding.

decord trusts the container's frame count, so the real count, the timestamps
and the rotation come from the demuxed stream index (`engine.frames.index`),
and decord's own index is mapped onto it by timestamp when the two disagree.
decord's `VideoReader(width=, height=)` scales in its filter graph; frames it
returns unrotated are turned upright here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from engine.frames.base import DecodeError, DecodeRequest, FrameBatch, VideoInfo, register_decoder
from engine.frames.decode_pyav import stored_size, upright
from engine.frames.index import StreamIndex, stream_index
from engine.frames.resize import resize_frame

__all__ = ["DecordDecoder"]


def _decord_rows(vr: Any, index: StreamIndex, wanted: np.ndarray) -> np.ndarray:
    """decord's frame numbers for our indices (identical unless the container's index lies)."""
    if len(vr) == index.info.n_frames:
        return wanted
    starts = np.asarray(vr.get_frame_timestamp(list(range(len(vr)))))[:, 0]
    ours = index.timestamps(wanted) + float(starts.min())
    rows = np.clip(np.searchsorted(starts, ours - 1e-4), 0, len(vr) - 1)
    return rows.astype(np.int64)


class _PaddedRows(Exception):
    """decord handed back rows with padding (a bug at some output widths)."""


@register_decoder("decord")
class DecordDecoder:
    """decord's `VideoReader.get_batch` over the union indices."""

    name = "decord"
    package = "decord"

    def __init__(self, num_threads: int = 0) -> None:
        self.num_threads = num_threads

    def _reader(self, path: Path, size: tuple[int, int] | None) -> Any:
        try:
            import decord
        except ImportError as err:  # pragma: no cover - depends on the platform's wheels
            raise DecodeError(f"decord is not installed: {err}") from err
        kw: dict[str, int] = {"num_threads": self.num_threads}
        if size is not None:
            kw.update(width=size[0], height=size[1])  # decord rotates itself: displayed (w, h)
        try:
            return decord.VideoReader(str(path), **kw)
        except Exception as err:
            raise DecodeError(f"{path}: {type(err).__name__}: {err}") from err

    def probe(self, path: Path) -> VideoInfo:
        return stream_index(path).info

    def decode_frames(self, request: DecodeRequest) -> FrameBatch:
        """decord scales to one size per reader: frames in `also` are decoded at `size` too and views
        resize them (so, unlike pyav, a smaller size's pixels depend on `size`)."""
        path, size = request.path, request.size
        index = stream_index(path)
        info = index.info
        asked = np.unique(np.concatenate([request.indices, *request.also.values()]))
        got = asked[asked < info.n_frames]
        want = (info.width, info.height) if size is None else (int(size[0]), int(size[1]))
        scale = want != (info.width, info.height)
        if not got.size:
            frames = np.empty((0, want[1], want[0], 3), np.uint8)
        else:
            try:
                frames = self._batch(Path(path), index, got, want if scale else None)
            except _PaddedRows:
                # decord returns padded rows for some widths (e.g. 48 px: shape (h, w, 4)) and then
                # refuses the batch: decode at the stored size and resize here instead.
                full = self._batch(Path(path), index, got, None)
                frames = np.stack([resize_frame(f, want) for f in full])
        if frames.shape[1:] != (want[1], want[0], 3):
            raise DecodeError(f"{path}: decord returned frames of shape {frames.shape[1:]}, "
                              f"expected {(want[1], want[0], 3)}")
        stamps = index.timestamps(got)
        return FrameBatch(got, np.ascontiguousarray(frames), stamps, info, np.setdiff1d(asked, got), {},
                          dict(zip(got.tolist(), stamps.tolist())))

    def _batch(self, path: Path, index: StreamIndex, got: np.ndarray, size: tuple[int, int] | None) -> np.ndarray:
        info = index.info
        vr = self._reader(path, size)
        try:
            frames = vr.get_batch([int(i) for i in _decord_rows(vr, index, got)]).asnumpy()
        except Exception as err:
            if "must exactly match" in str(err):
                raise _PaddedRows() from err
            raise DecodeError(f"{path}: {type(err).__name__}: {err}") from err
        if frames.shape[3] != 3:
            raise _PaddedRows()
        want = size or (info.width, info.height)
        turned = stored_size(want, info.rotation)
        if frames.shape[1:3] != (want[1], want[0]) and frames.shape[1:3] == (turned[1], turned[0]):
            frames = np.stack([upright(f, info.rotation) for f in frames])  # a decord that ignores rotation
        return frames
