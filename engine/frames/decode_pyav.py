"""The PyAV (FFmpeg) decoder: one forward pass, seeking only over whole GOPs nobody needs.

Frames are named by their pts through the stream index (`engine.frames.index`),
so indices stay right after a seek, with B-frames and with variable frame rate.
The decoder seeks (to the keyframe at or before the next needed frame) only when
that keyframe lies past the frame it would decode next, by at least `min_skip`
frames (a seek flushes the decoder, so skipping one or two frames does not pay):
seeking before every frame is ~14x slower than one sequential pass. Inside a GOP it must decode
through, the decoder skips every frame that nobody asked for and no other frame references
(skip_frame=NONREF, set per packet): exact, and with B-frames about half the unneeded frames.
Downscaling happens in the
colour conversion (swscale, area filter), never on a full-size RGB copy, and
each frame is converted straight into its row of the output array. Frames a
smaller budget needs (`also`) are converted to that size from the same decoded
picture, so a frame at a size is the same whichever other sizes a sweep asks for.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from engine.frames.base import DecodeError, DecodeRequest, FrameBatch, VideoInfo, register_decoder
from engine.frames.buffers import FRAME_BUFFERS
from engine.frames.index import StreamIndex, stream_index

__all__ = ["PyAVDecoder"]

log = logging.getLogger(__name__)


def upright(arr: np.ndarray, rotation: int) -> np.ndarray:
    """Turn a stored frame by the display rotation (counter-clockwise degrees)."""
    return np.ascontiguousarray(np.rot90(arr, k=rotation // 90)) if rotation else arr


def stored_size(size: tuple[int, int], rotation: int) -> tuple[int, int]:
    """The (w, h) to scale a stored frame to so that, turned upright, it is `size`."""
    return (size[1], size[0]) if rotation in (90, -90) else size


def _frames(container: Any, stream: Any, path: Path,
            unneeded: Callable[[int], bool] | None = None) -> Iterator[Any]:
    """Decoded frames in presentation order; a packet that does not decode is skipped.

    With `unneeded` (a packet's pts -> True when nobody needs its frame), the decoder is told to
    skip such a packet's frame when no other frame references it (FFmpeg's skip_frame=NONREF, set
    per packet): such a frame cannot change any other frame's pixels, so skipping it is exact.
    Typical H.264 with B-frames has about half its frames non-referenced.
    """
    import av

    ctx = stream.codec_context
    mode = ctx.skip_frame
    for packet in container.demux(stream):
        if packet.is_corrupt:  # a partial packet (truncated file): not a frame, as in the index
            continue
        if unneeded is not None:
            want = "NONREF" if packet.pts is not None and unneeded(packet.pts) else "DEFAULT"
            if want != mode:
                ctx.skip_frame = mode = want
        try:
            frames = packet.decode()
        except av.FFmpegError as err:
            log.warning("%s: packet at pts %s does not decode: %s", path, packet.pts, err)
            continue
        yield from frames


# Frames tagged BT.601 or untagged, limited range: OpenCV's I420 conversion matches swscale's
# (within rounding) at about half the cost; anything else goes through swscale with its tags.
_FAST_COLORSPACES = {2, 5, 6}  # unspecified, BT470BG, SMPTE170M
_FAST_RANGES = {0, 1}  # unspecified, MPEG (limited)


class _Converter:
    """A decoded picture -> upright RGB at one size, straight from the decoder's YUV picture."""

    def __init__(self, info: VideoInfo, size: tuple[int, int] | None) -> None:
        from av.video.reformatter import VideoReformatter

        self.rotation = info.rotation
        self.fmt: dict[str, Any] = {"format": "rgb24", "threads": 1}
        self.scaled = size is not None and tuple(size) != (info.width, info.height)
        if size is not None and self.scaled:
            w, h = stored_size(size, self.rotation)
            self.fmt.update(width=w, height=h, interpolation="AREA")
        self.reformatter = VideoReformatter()  # keeps its swscale context across frames
        self._scratch: np.ndarray | None = None

    def _fast(self, frame: Any) -> bool:
        return (not self.scaled and frame.format.name == "yuv420p" and frame.width % 2 == 0
                and frame.height % 2 == 0 and int(frame.colorspace) in _FAST_COLORSPACES
                and int(frame.color_range) in _FAST_RANGES)

    def _i420(self, frame: Any) -> np.ndarray:
        """The frame's planes packed into one reused I420 buffer (no allocation per frame)."""
        w, h = frame.width, frame.height
        if self._scratch is None or self._scratch.shape != (h * 3 // 2, w):
            self._scratch = np.empty((h * 3 // 2, w), np.uint8)
        flat = self._scratch.reshape(-1)
        at = 0
        for plane, (pw, ph) in zip(frame.planes, ((w, h), (w // 2, h // 2), (w // 2, h // 2))):
            src = np.frombuffer(plane, np.uint8).reshape(ph, plane.line_size)[:, :pw]
            flat[at:at + pw * ph].reshape(ph, pw)[...] = src
            at += pw * ph
        return self._scratch

    def _rgb(self, frame: Any, dst: np.ndarray | None = None) -> np.ndarray:
        if self._fast(frame):
            return cv2.cvtColor(self._i420(frame), cv2.COLOR_YUV2RGB_I420, dst=dst)
        rgb = self.reformatter.reformat(frame, **self.fmt).to_ndarray()
        if dst is not None:
            dst[...] = rgb
            return dst
        return rgb

    def into(self, frame: Any, dst: np.ndarray) -> None:
        """Convert into `dst` (no intermediate copy when possible)."""
        if not self.rotation:
            self._rgb(frame, dst)
        else:
            dst[...] = upright(self._rgb(frame), self.rotation)

    def new(self, frame: Any) -> np.ndarray:
        return upright(self._rgb(frame), self.rotation)


Sink = Callable[[int, Any], None]


class _Pipeline:
    """Runs `convert(i, frame)` on one worker thread, in order, at most `depth` frames behind."""

    def __init__(self, convert: Sink, depth: int = 16) -> None:
        self._convert = convert
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rgb")
        self._pending: deque[Future[None]] = deque()
        self._depth = depth

    def submit(self, i: int, frame: Any) -> None:
        self._pending.append(self._pool.submit(self._convert, i, frame))
        while len(self._pending) > self._depth:
            self._pending.popleft().result()  # bounded: at most `depth` decoded pictures held

    def finish(self) -> None:
        try:
            while self._pending:
                self._pending.popleft().result()
        finally:
            self._pool.shutdown(wait=True)

    def abort(self) -> None:
        for f in self._pending:
            f.cancel()
        self._pool.shutdown(wait=True)


class _Pass:
    """One decode pass over sorted needed indices, handing each needed frame to `sink` once."""

    def __init__(self, container: Any, stream: Any, index: StreamIndex, path: Path, min_skip: int,
                 skip_unneeded: bool = True) -> None:
        self.c, self.s, self.index, self.path = container, stream, index, path
        self.seeks = 0
        self.min_skip = max(1, min_skip)
        self.skip_unneeded = skip_unneeded
        self.frames_out = 0  # pictures the decoder handed out (skipped ones are not among them)

    def run(self, needed: np.ndarray, sink: Sink, done: set[int], allow_seek: bool) -> None:
        want = set(needed.tolist())
        by_pts = self.index.index_of

        def unneeded(pts: int) -> bool:
            i = by_pts(pts)
            return i is None or i not in want or i in done

        skip = unneeded if self.skip_unneeded else None
        frames: Iterator[Any] | None = None
        pos = 0  # presentation index of the next frame the decoder will hand out
        for target in needed.tolist():
            if target in done:
                continue
            key = self.index.keyframe_before(target)
            jump = allow_seek and key - pos >= self.min_skip
            if frames is None or jump:
                if jump:
                    self.c.seek(int(self.index.pts[key]), backward=True, any_frame=False, stream=self.s)
                    self.seeks, pos = self.seeks + 1, key
                frames = _frames(self.c, self.s, self.path, skip)
            for frame in frames:
                self.frames_out += 1
                i = self.index.index_of(frame.pts)
                if i is None:
                    continue
                pos = i + 1
                if i in want and i not in done:
                    sink(i, frame)
                    done.add(i)
                if i >= target:
                    break
            else:
                return  # end of stream: whatever is still missing does not decode


@register_decoder("pyav")
class PyAVDecoder:
    """PyAV (FFmpeg): one forward pass over the needed frames, in decode order."""

    name = "pyav"
    package = "av"

    def __init__(self, thread_type: str = "SLICE", min_skip: int = 8, pipeline_min_frames: int | None = None,
                 skip_unneeded: bool = True) -> None:
        # SLICE: each video decodes on one thread (FFmpeg adds threads only for multi-slice streams).
        # A sweep decodes several videos at once (decode.threads, decode actors), and on the 2-core
        # machine here FFmpeg's frame threading (AUTO) made even a lone decode 30-50% slower.
        self.thread_type = thread_type
        # from this many frames, colour conversion runs on a second thread beside the decoder (off by
        # default: with two cores that gave no speedup here; on idle spare cores it can)
        self.pipeline_min_frames = pipeline_min_frames
        self.min_skip = min_skip  # seek only to skip at least this many frames (a seek flushes the decoder)
        # let the decoder skip unreferenced frames nobody asked for (exact: nothing depends on them)
        self.skip_unneeded = skip_unneeded
        self.last_seeks = 0  # seeks made by the last decode_frames call (tests check we seek sparingly)
        self.last_frames_out = 0  # pictures decoded by the last decode_frames call (skipped ones excluded)

    def probe(self, path: Path) -> VideoInfo:
        return stream_index(path).info

    def _pass(self, path: Path, index: StreamIndex, needed: np.ndarray, sink: Sink, done: set[int],
              thread_type: str, allow_seek: bool) -> int:
        import av

        with av.open(str(path)) as c:
            stream = c.streams.video[0]
            stream.thread_type = thread_type
            one = _Pass(c, stream, index, path, self.min_skip, self.skip_unneeded)
            one.run(needed, sink, done, allow_seek)
            self.last_frames_out += one.frames_out
            return one.seeks

    def decode_frames(self, request: DecodeRequest) -> FrameBatch:
        """Decode the request's `indices` at its `size`; frames listed in `also` are converted to those sizes
        too, each straight from the decoded picture in the same pass (so a frame at a size never depends on
        which other sizes were asked for)."""
        path, size = request.path, request.size
        index = stream_index(path)
        info = index.info
        w, h = size if size else (info.width, info.height)
        extra_want = request.frames_at((w, h))
        asked = extra_want.pop((w, h))
        wanted = np.unique(np.concatenate([asked, *extra_want.values()]))
        main = asked[asked < info.n_frames]
        # frames land here directly (no stacking copy), in memory recycled from videos already gone
        buf = FRAME_BUFFERS.empty((main.size, h, w, 3))
        slot = {i: k for k, i in enumerate(main.tolist())}
        conv = _Converter(info, size)
        extra: dict[tuple[int, int], tuple[_Converter, set[int], dict[int, np.ndarray]]] = {
            s: (_Converter(info, s), set(ix.tolist()), {}) for s, ix in extra_want.items()}

        def convert(i: int, frame: Any) -> None:
            if i in slot:
                conv.into(frame, buf[slot[i]])
            for c, want, out in extra.values():
                if i in want:
                    out[i] = c.new(frame)

        done: set[int] = set()
        needed = wanted[wanted < info.n_frames]
        # Optionally, colour conversion runs on a second thread while the decoder goes on.
        piped = self.pipeline_min_frames is not None and needed.size >= self.pipeline_min_frames
        pipe = _Pipeline(convert) if piped else None
        try:
            sink = pipe.submit if pipe is not None else convert
            self.last_frames_out = 0
            self.last_seeks = self._pass(Path(path), index, needed, sink, done, self.thread_type, True)
            rest = np.asarray([i for i in needed.tolist() if i not in done], dtype=np.int64)
            if rest.size:
                # A broken packet can lose in-flight frames under frame threading, and a seek can land
                # oddly on unusual files: fetch the rest in a plain sequential pass (broken files only).
                log.info("%s: %d frames not decoded in the first pass; trying sequentially", path, rest.size)
                self._pass(Path(path), index, rest, sink, done, "SLICE", False)
            if pipe is not None:
                pipe.finish()
        except Exception as err:  # av.error.* and OSError: the decoder's own message
            if pipe is not None:
                pipe.abort()
            raise DecodeError(f"{path}: {type(err).__name__}: {err}") from err
        if wanted.size and not done:
            raise DecodeError(f"{path}: none of the {wanted.size} planned frames could be decoded")
        got = np.asarray(sorted(done.intersection(slot)), dtype=np.int64)
        frames = buf if got.size == main.size else buf[[slot[i] for i in got.tolist()]]
        all_done = np.asarray(sorted(done), dtype=np.int64)
        return FrameBatch(got, frames, index.timestamps(got), info, np.setdiff1d(wanted, all_done),
                          {s: out for s, (_, _, out) in extra.items()},
                          dict(zip(all_done.tolist(), index.timestamps(all_done).tolist())))
