"""The on-disk frame cache: the "cached" pipeline, shared by later sweeps and models.

Decoded frames are stored one file per (video content, decoder, size, frame index):

    <root>/v1-<fmt>/<sha[:2]>/<sha>/info.json                 the video's facts
    <root>/v1-<fmt>/<sha[:2]>/<sha>/<decoder>/<W>x<H>/<index>.fsf

A frame at a size is what a raw decode pass (`decode_video` without a cache) gives for it
at that size (pyav: converted from the decoded picture, whatever other sizes a sweep needs), so raw and cached
pipelines differ only by the storage format.

`sha` is the SHA-256 of the video file's bytes, computed once per (path, size,
mtime) and remembered on disk, so a renamed or copied video still hits and an
edited one misses. The format is declared in the directory name: `jpeg` (quality
95, lossy), `png` or `npy` (both lossless). Each `.fsf` file is a fixed header
(magic, version, format, width, height, timestamp, payload length, CRC-32) and
the payload; it is written to a temporary file, fsynced and renamed into place,
and read back only if the magic, the length and the CRC all check, so an
interrupted write, a truncated or a corrupted file is a miss, never a frame.

Frames decoded on a miss are returned as they read back from the cache (a JPEG
round trip), so a sweep sees the same pixels whether the cache was cold or warm.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Literal

import cv2
import numpy as np

from engine.frames.base import DecodeRequest, FrameBatch, VideoInfo, file_key, get_decoder
from engine.frames.decode import DecodedVideo, decode_video
from engine.runtime.atomic import atomic_write, file_sha256, fsync_dir
from engine.runtime.output import json_line
from engine.runtime.paths import cache_dir

__all__ = ["CACHE_VERSION", "FrameCache", "FrameFormat", "content_hash"]

log = logging.getLogger(__name__)

CACHE_VERSION = 1
FrameFormat = Literal["jpeg", "png", "npy"]
_FORMAT_CODE: dict[str, int] = {"jpeg": 1, "png": 2, "npy": 3}
_MAGIC = b"FSWF"
_HEADER = struct.Struct("<4sBBHIIdQI")  # magic, version, format, reserved, w, h, timestamp, length, crc32
_HASH_MEMO: dict[tuple[str, int, int], str] = {}
_Entry = tuple[np.ndarray, float, bytes]  # frame, timestamp, encoded payload
_hash_lock = threading.Lock()
_IMREAD_RGB: int | None = getattr(cv2, "IMREAD_COLOR_RGB", None)  # OpenCV >= 4.10
_READERS: tuple[int, ThreadPoolExecutor] | None = None  # (pid, pool): a forked child starts its own


def _readers() -> ThreadPoolExecutor:
    """The threads that read cached frames (one per core, at most 4), started on first use."""
    global _READERS
    with _hash_lock:
        if _READERS is None or _READERS[0] != os.getpid():
            _READERS = (os.getpid(), ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1)),
                                                        thread_name_prefix="frame-cache"))
        return _READERS[1]


def content_hash(path: Path | str, memo_dir: Path | None = None) -> str:
    """SHA-256 of the file's bytes, hashed once per (path, size, mtime) and remembered in `memo_dir`."""
    p = Path(path)
    key = file_key(p)
    with _hash_lock:
        if key in _HASH_MEMO:
            return _HASH_MEMO[key]
    memo = memo_dir / f"{hashlib.sha1(key[0].encode()).hexdigest()}.json" if memo_dir else None
    if memo is not None and memo.exists():
        try:
            rec = json.loads(memo.read_text())
            if (rec["path"], rec["size"], rec["mtime_ns"]) == key:
                with _hash_lock:
                    _HASH_MEMO[key] = rec["sha256"]
                return str(rec["sha256"])
        except (OSError, ValueError, KeyError):
            pass
    digest = file_sha256(p)
    with _hash_lock:
        _HASH_MEMO[key] = digest
    if memo is not None:
        rec = {"path": key[0], "size": key[1], "mtime_ns": key[2], "sha256": digest}
        atomic_write(memo, json_line(rec))
    return digest


class FrameCache:
    """Decoded frames on disk, keyed by video content hash, decoder, frame index and size.

    Args:
        root: Cache root (default: `<framesweep cache>/frames`).
        fmt: `jpeg` (lossy, quality `quality`), `png` or `npy` (lossless).
        quality: JPEG quality.
    """

    def __init__(self, root: Path | str | None = None, fmt: FrameFormat = "jpeg", quality: int = 95) -> None:
        if fmt not in _FORMAT_CODE:
            raise ValueError(f"unknown frame cache format {fmt!r}; known: {', '.join(_FORMAT_CODE)}")
        self.fmt, self.quality = fmt, quality
        base = Path(root) if root is not None else cache_dir() / "frames"
        self.dir = base / f"v{CACHE_VERSION}-{fmt}{quality if fmt == 'jpeg' else ''}"
        self.hits = 0
        self.misses = 0

    # -- one frame file -------------------------------------------------------------------------

    def _encode(self, frame: np.ndarray) -> bytes:
        if self.fmt == "npy":
            return np.ascontiguousarray(frame).tobytes()
        bgr = cv2.cvtColor(frame, cv2.COLOR_RGB2BGR)
        params = [cv2.IMWRITE_JPEG_QUALITY, self.quality] if self.fmt == "jpeg" else [cv2.IMWRITE_PNG_COMPRESSION, 3]
        ok, buf = cv2.imencode(".jpg" if self.fmt == "jpeg" else ".png", bgr, params)
        if not ok:
            raise RuntimeError("frame encoding failed")
        return buf.tobytes()

    def _decode(self, payload: bytes, w: int, h: int) -> np.ndarray | None:
        if self.fmt == "npy":
            return np.frombuffer(payload, np.uint8).reshape(h, w, 3) if len(payload) == w * h * 3 else None
        if _IMREAD_RGB is not None:  # the codec writes RGB itself: the same pixels, no channel swap after
            rgb = cv2.imdecode(np.frombuffer(payload, np.uint8), _IMREAD_RGB)
            return None if rgb is None or rgb.shape[:2] != (h, w) else rgb
        bgr = cv2.imdecode(np.frombuffer(payload, np.uint8), cv2.IMREAD_COLOR)
        if bgr is None or bgr.shape[:2] != (h, w):
            return None
        return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)

    def _pack(self, frame: np.ndarray, timestamp: float) -> bytes:
        payload = self._encode(frame)
        h, w = frame.shape[:2]
        head = _HEADER.pack(_MAGIC, CACHE_VERSION, _FORMAT_CODE[self.fmt], 0, w, h, timestamp, len(payload),
                            zlib.crc32(payload))
        return head + payload

    def _unpack(self, data: bytes, size: tuple[int, int]) -> tuple[np.ndarray, float, bytes] | None:
        """The frame, its timestamp and its encoded payload, or None unless every check passes."""
        if len(data) < _HEADER.size:
            return None
        magic, version, code, _, w, h, ts, length, crc = _HEADER.unpack_from(data)
        payload = data[_HEADER.size:]
        if (magic, version, code, (w, h)) != (_MAGIC, CACHE_VERSION, _FORMAT_CODE[self.fmt], size):
            return None
        if len(payload) != length or zlib.crc32(payload) != crc:
            return None
        frame = self._decode(payload, w, h)
        return None if frame is None else (frame, float(ts), payload)

    def _read(self, path: Path, size: tuple[int, int]) -> tuple[np.ndarray, float, bytes] | None:
        try:
            data = path.read_bytes()
        except OSError:
            return None
        got = self._unpack(data, size)
        if got is None:
            log.warning("%s: invalid frame cache file (interrupted write or corruption); treated as a miss", path)
        return got

    # -- videos -----------------------------------------------------------------------------------

    def video_dir(self, digest: str) -> Path:
        return self.dir / digest[:2] / digest

    def _info(self, digest: str, path: Path, decoder: str) -> VideoInfo:
        f = self.video_dir(digest) / "info.json"
        try:
            return VideoInfo(**json.loads(f.read_text()))
        except (OSError, ValueError, TypeError):
            info = get_decoder(decoder).probe(path)
            atomic_write(f, json_line(asdict(info)))
            return info

    def get_or_decode(self, request: DecodeRequest) -> DecodedVideo:
        """The request's frames (`indices` at `size`, `also` at other sizes), from the cache or decoded once.

        Every (frame, size) not in the cache (or whose file fails its checks) is decoded in one raw
        pass and written. The result carries `pipeline="cached"` and, for `jpeg`, each frame's JPEG
        bytes (`DecodedVideo.view_jpeg`). Callers go through `engine.frames.decode.decode_video`.
        """
        t0 = time.perf_counter()
        p, decoder = request.path, request.decoder
        digest = content_hash(p, self.dir / "hashes")
        info = self._info(digest, p, decoder)
        main = request.size or (info.width, info.height)
        want = request.frames_at((info.width, info.height))
        # Frames past the real count do not exist: recorded as missing without a decode pass.
        missing = np.unique(np.concatenate([ix[ix >= info.n_frames] for ix in want.values()]))
        want = {s: ix[ix < info.n_frames] for s, ix in want.items()}
        found = {s: self._lookup(digest, decoder, s, ix) for s, ix in want.items()}
        todo = {s: np.asarray([i for i in ix.tolist() if i not in found[s]], dtype=np.int64) for s, ix in want.items()}
        n_hit = sum(len(f) for f in found.values())
        n_miss = sum(int(t.size) for t in todo.values())
        self.hits, self.misses = self.hits + n_hit, self.misses + n_miss
        if n_miss:
            missing = np.union1d(missing, self._fill(request, digest, info, todo, found))
        got = np.asarray(sorted(found[main]), dtype=np.int64)
        frames = (np.stack([found[main][i][0] for i in got.tolist()]) if got.size
                  else np.empty((0, main[1], main[0], 3), np.uint8))
        stamps = np.asarray([found[main][i][1] for i in got.tolist()], dtype=np.float64)
        batch = FrameBatch(got, frames, stamps, info, missing,
                           extra={s: {i: v[0] for i, v in f.items()} for s, f in found.items() if s != main},
                           times={i: v[1] for f in found.values() for i, v in f.items()})
        jpeg = {s: {i: v[2] for i, v in f.items()} for s, f in found.items()} if self.fmt == "jpeg" else None
        return DecodedVideo.from_batch(request, batch, time.perf_counter() - t0, pipeline="cached", jpeg=jpeg)

    def _frame_dir(self, digest: str, decoder: str, size: tuple[int, int]) -> Path:
        return self.video_dir(digest) / decoder / f"{size[0]}x{size[1]}"

    def _lookup(self, digest: str, decoder: str, size: tuple[int, int], indices: np.ndarray) -> dict[int, _Entry]:
        frame_dir = self._frame_dir(digest, decoder, size)
        wanted = indices.tolist()

        def one(i: int) -> _Entry | None:
            f = frame_dir / f"{i:07d}.fsf"
            return self._read(f, size) if f.exists() else None

        # a warm read is JPEG decoding: cv2 and zlib release the GIL, so the frames are read on a few threads
        got = list(_readers().map(one, wanted)) if len(wanted) > 1 else [one(i) for i in wanted]
        return {i: g for i, g in zip(wanted, got) if g is not None}

    def _fill(self, request: DecodeRequest, digest: str, info: VideoInfo, todo: dict[tuple[int, int], np.ndarray],
              found: dict[tuple[int, int], dict[int, _Entry]]) -> np.ndarray:
        """Decode every missing (frame, size) in one raw pass, write each, and add what a read gives back."""
        full = (info.width, info.height)
        main = request.size or full
        also = {s: ix for s, ix in todo.items() if s != main and ix.size}
        fresh = decode_video(DecodeRequest(request.path, todo[main], request.decoder, None if main == full else main,
                                           also))
        decoder = request.decoder
        for s, ix in todo.items():
            ok = np.setdiff1d(ix, fresh.missing)
            if not ok.size:
                continue
            frame_dir = self._frame_dir(digest, decoder, s)
            for i, frame, ts in zip(ok.tolist(), fresh.view(ok, s), fresh.times(ok).tolist()):
                data = self._pack(frame, ts)
                atomic_write(frame_dir / f"{i:07d}.fsf", data, sync_dir=False)
                back = self._unpack(data, s)  # what a later read returns (a JPEG round trip)
                if back is not None:
                    found[s][i] = back
            fsync_dir(frame_dir)
        return fresh.missing

