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

__all__ = ["COLOURS", "MCQ_INSTRUCTION", "QUESTIONS", "SHAPES", "TEXTURES", "VideoScript", "answer_of", "mcq_text",
           "render_frames", "seen_script", "texture_patch", "write_h264"]

COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 40, 40),
    "green": (40, 180, 60),
    "blue": (40, 70, 220),
    "yellow": (230, 210, 40),
}
SHAPES = ("circle", "square", "triangle", "cross")
TEXTURES = ("horizontal stripes", "vertical stripes", "checks", "plain grey")
"""The small patch's fills: one-pixel stripes or checks, or their average grey, so that halving the frame
(area filter, even offset) turns all four into the same grey: the fine detail a low resolution loses."""
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
    flash_starts: tuple[int, ...] = ()
    """Each flash's first frame (v2, brief flashes); empty: v1's flashes, evenly spread over the clip."""
    flash_frames: int = 0
    """Each v2 flash's length in frames."""
    texture: str | None = None
    """The small patch at the bottom centre (one of `TEXTURES`); None: no patch (v1)."""

    def flash_on(self) -> np.ndarray:
        """Boolean per frame: is the white square visible."""
        on = np.zeros(self.n_frames, dtype=bool)
        if self.flash_starts:
            for start in self.flash_starts:
                on[start:start + self.flash_frames] = True
            return on
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


PATCH = 20
"""The texture patch's side in pixels."""


def texture_patch(texture: str, side: int = PATCH) -> np.ndarray:
    """The (side, side, 3) uint8 fill of one of `TEXTURES`."""
    y, x = np.mgrid[0:side, 0:side]
    if texture == "horizontal stripes":
        v = (y % 2) * 255.0
    elif texture == "vertical stripes":
        v = (x % 2) * 255.0
    elif texture == "checks":
        v = ((x + y) % 2) * 255.0
    elif texture == "plain grey":
        v = np.full((side, side), 127.5)
    else:
        raise ValueError(f"unknown texture {texture!r}; known: {', '.join(TEXTURES)}")
    return np.repeat(np.rint(v).astype(np.uint8)[..., None], 3, axis=2)


def render_frames(s: VideoScript) -> Iterator[np.ndarray]:
    """Yield the video's RGB frames (H, W, 3) uint8, in order."""
    on = s.flash_on()
    patch = texture_patch(s.texture) if s.texture is not None else None
    py, px = s.height - 4 - PATCH, (s.width - PATCH) // 4 * 2  # bottom centre, even offsets
    side = min(s.width, s.height) // 3
    shape_box = (s.width // 8, (s.height - side) // 2, s.width // 8 + side, (s.height + side) // 2)
    flash_box = (s.width - s.width // 8 - side, (s.height - side) // 2, s.width - s.width // 8, (s.height + side) // 2)
    for t in range(s.n_frames):
        img = Image.new("RGB", (s.width, s.height), COLOURS[s.colours[0] if t < s.n_frames // 2 else s.colours[1]])
        draw = ImageDraw.Draw(img)
        _draw_shape(draw, s.shape, shape_box)
        if on[t]:
            draw.rectangle(flash_box, fill=(255, 255, 255))
        if patch is None:
            yield np.asarray(img)
        else:
            frame = np.array(img)
            frame[py:py + PATCH, px:px + PATCH] = patch
            yield frame


QUESTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "flash_count": ("How many times does the white square flash?", ("1", "2", "3", "4")),
    "first_colour": ("Which colour is the background at the start of the video?", tuple(COLOURS)),
    "last_colour": ("Which colour is the background at the end of the video?", tuple(COLOURS)),
    "static_shape": ("Which black shape is drawn on the left?", SHAPES),
    "texture": ("What pattern fills the small patch at the bottom?", TEXTURES),
}
"""Question kind -> (question, its options in the canonical order)."""


def answer_of(s: VideoScript, kind: str) -> str:
    """The right option of question `kind` about video `s`."""
    answers = {"flash_count": str(s.flashes), "first_colour": s.colours[0], "last_colour": s.colours[1],
               "static_shape": s.shape, "texture": s.texture}
    value = answers[kind]
    if value is None:
        raise ValueError(f"video {s.video_id} has no texture patch to ask about")
    return value


def mcq_text(question: str, options: tuple[str, ...] | list[str]) -> str:
    """The multiple-choice prompt text: instruction, question, lettered options, answer cue."""
    letters = "ABCDEFGHIJ"
    return (MCQ_INSTRUCTION + question + "\n" + "\n".join(f"{lt}. {o}" for lt, o in zip(letters, options))
            + "\nThe best answer is:")


SEEN_FRAMES, SEEN_FPS, SEEN_SIZE = 64, 8, (112, 84)
"""v2 videos: 8 s at 8 fps, 112 x 84 (multiples of 28, so Qwen-VL processors send them unresized)."""
FLASH_FRAMES, FLASH_GAP = 5, 6
"""v2 flashes last 5 frames, at least 6 frames apart: 16 uniform frames see every flash, 4 see about a quarter."""


def seen_script(rng: np.random.Generator, video_id: str) -> VideoScript:
    """One v2 video drawn from `rng`: colours, shape, texture, and 1-4 brief flashes at random times."""
    c = rng.choice(len(COLOURS), size=2, replace=False)
    names = list(COLOURS)
    shape = SHAPES[int(rng.integers(len(SHAPES)))]
    texture = TEXTURES[int(rng.integers(len(TEXTURES)))]
    k = int(rng.integers(1, 5))
    slack = (SEEN_FRAMES - 4) - (k * FLASH_FRAMES + (k - 1) * FLASH_GAP)
    cuts = np.sort(rng.integers(0, slack + 1, size=k))
    extra = np.diff(np.concatenate([[0], cuts]))
    starts, pos = [], 2
    for i in range(k):
        pos += int(extra[i])
        starts.append(pos)
        pos += FLASH_FRAMES + FLASH_GAP
    return VideoScript(video_id=video_id, colours=(names[c[0]], names[c[1]]), shape=shape, flashes=k,
                       n_frames=SEEN_FRAMES, fps=SEEN_FPS, width=SEEN_SIZE[0], height=SEEN_SIZE[1],
                       flash_starts=tuple(starts), flash_frames=FLASH_FRAMES, texture=texture)


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
