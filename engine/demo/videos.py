"""The synthetic benchmark's vocabulary and its video writer: what a video shows, its frames, H.264.

Each video shows a background that changes colour once halfway through, a black shape drawn still on
the left for the whole clip, and a white square that flashes k times on the right (`VideoScript`). The
adapter that asks questions about them is `engine.datasets.synthetic`; the tiny checkpoints' tokenizers
are trained on the same words (`engine.demo.tiny`). `write_h264` also writes the test suite's and the
benchmarks' own clips.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from engine.runtime.atomic import atomic_write

__all__ = ["COLOURS", "MCQ_INSTRUCTION", "SHAPES", "VideoScript", "render_frames", "write_h264"]

COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 40, 40),
    "green": (40, 180, 60),
    "blue": (40, 70, 220),
    "yellow": (230, 210, 40),
}
SHAPES = ("circle", "square", "triangle", "cross")
MCQ_INSTRUCTION = (
    "Select the best answer to the following multiple-choice question based on the video. "
    "Respond with only the letter (A, B, C, or D) of the correct option.\n"
)


@dataclass(frozen=True)
class VideoScript:
    """What one synthetic video shows."""

    video_id: str
    colours: tuple[str, str]
    shape: str
    flashes: int
    n_frames: int
    fps: int
    width: int
    height: int

    def flash_on(self) -> np.ndarray:
        """Boolean per frame: is the white square visible."""
        on = np.zeros(self.n_frames, dtype=bool)
        span = self.n_frames / (2 * self.flashes + 1)  # off, on, off, on, ..., off
        for k in range(self.flashes):
            start = round((2 * k + 1) * span)
            stop = max(start + 1, round((2 * k + 2) * span))
            on[start:stop] = True
        return on


def _draw_shape(draw: ImageDraw.ImageDraw, shape: str, box: tuple[int, int, int, int]) -> None:
    x0, y0, x1, y1 = box
    if shape == "circle":
        draw.ellipse(box, fill=(0, 0, 0))
    elif shape == "square":
        draw.rectangle(box, fill=(0, 0, 0))
    elif shape == "triangle":
        draw.polygon([((x0 + x1) // 2, y0), (x1, y1), (x0, y1)], fill=(0, 0, 0))
    else:
        w = max(2, (x1 - x0) // 4)
        cx, cy = (x0 + x1) // 2, (y0 + y1) // 2
        draw.rectangle((cx - w, y0, cx + w, y1), fill=(0, 0, 0))
        draw.rectangle((x0, cy - w, x1, cy + w), fill=(0, 0, 0))


def render_frames(s: VideoScript) -> Iterator[np.ndarray]:
    """Yield the video's RGB frames (H, W, 3) uint8, in order."""
    on = s.flash_on()
    side = min(s.width, s.height) // 3
    shape_box = (s.width // 8, (s.height - side) // 2, s.width // 8 + side, (s.height + side) // 2)
    flash_box = (s.width - s.width // 8 - side, (s.height - side) // 2, s.width - s.width // 8, (s.height + side) // 2)
    for t in range(s.n_frames):
        img = Image.new("RGB", (s.width, s.height), COLOURS[s.colours[0] if t < s.n_frames // 2 else s.colours[1]])
        draw = ImageDraw.Draw(img)
        _draw_shape(draw, s.shape, shape_box)
        if on[t]:
            draw.rectangle(flash_box, fill=(255, 255, 255))
        yield np.asarray(img)


def write_h264(path: Path, frames: Iterator[np.ndarray], fps: int, width: int, height: int, gop: int = 0,
               options: dict[str, str] | None = None) -> None:
    """Encode RGB frames as an H.264 MP4 (PyAV/libx264), written atomically.

    By default: CRF 18, preset veryfast, a keyframe every `gop` frames (2 s), no B-frames;
    `options` (libx264's, e.g. {"crf": "18"} alone for its defaults) replaces these.
    """
    import av

    def encode(fh: Any) -> None:
        with av.open(fh, mode="w", format="mp4") as container:
            stream = container.add_stream("libx264", rate=fps)
            stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
            stream.options = dict(options) if options is not None else {
                "crf": "18", "preset": "veryfast", "g": str(gop or 2 * fps), "bf": "0"}
            for arr in frames:
                for packet in stream.encode(av.VideoFrame.from_ndarray(arr, format="rgb24")):
                    container.mux(packet)
            for packet in stream.encode():
                container.mux(packet)

    atomic_write(path, encode)
