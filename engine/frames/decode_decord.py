"""The decord decoder (random access by frame index, one batched read)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.frames.decode import DecodeError, VideoInfo, register_decoder


@register_decoder("decord")
class DecordDecoder:
    """decord's `VideoReader.get_batch` over the union indices."""

    name = "decord"

    def _reader(self, path: Path):  # type: ignore[no-untyped-def]
        try:
            import decord
        except ImportError as err:  # pragma: no cover - depends on the platform's wheels
            raise DecodeError(f"decord is not installed: {err}") from err
        try:
            return decord.VideoReader(str(path), num_threads=1)
        except Exception as err:
            raise DecodeError(f"{path}: {type(err).__name__}: {err}") from err

    def probe(self, path: Path) -> VideoInfo:
        vr = self._reader(path)
        h, w = vr[0].shape[:2] if len(vr) else (0, 0)
        return VideoInfo(len(vr), float(vr.get_avg_fps()), w, h)

    def decode(self, path: Path, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray, VideoInfo]:
        vr = self._reader(path)
        n = len(vr)
        if n == 0:
            raise DecodeError(f"{path}: no frames")
        h, w = vr[0].shape[:2]
        info = VideoInfo(n, float(vr.get_avg_fps()), w, h)
        idx = np.minimum(indices, n - 1)
        try:
            frames = vr.get_batch(list(map(int, idx))).asnumpy()
            stamps = np.asarray([vr.get_frame_timestamp(int(i))[0] for i in idx])
        except Exception as err:
            raise DecodeError(f"{path}: {type(err).__name__}: {err}") from err
        return frames, stamps, info
