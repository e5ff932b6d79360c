"""A synthetic video benchmark: real H.264 files whose answers depend on the frames.

Each video shows a background that changes colour once halfway through, a black
shape drawn still on the left for the whole clip, and a white square that flashes
k times on the right. Questions (several per video, all multiple choice):

- ``flash_count``: how many times the white square flashes (1-4);
- ``first_colour``: which background colour comes first;
- ``static_shape``: what black shape is drawn.

Everything is a pure function of (seed, video index), so the same settings give
byte-identical annotations and identical frames.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from PIL import Image, ImageDraw
from pydantic import Field

from engine.datasets._base import ItemScore, default_score
from engine.datasets.registry import register_adapter
from engine.datasets.spec import DatasetBase
from engine.items import Item, option_letters
from engine.runtime.atomic import atomic_write
from engine.runtime.output import write_json_lines
from engine.runtime.paths import cache_dir

__all__ = ["SyntheticBenchmark", "SyntheticDatasetSpec", "VideoScript", "render_frames", "write_h264"]


class SyntheticDatasetSpec(DatasetBase):
    """The embedded synthetic video benchmark (real H.264 files, known answers)."""

    name: Literal["synthetic"] = Field(description="Adapter name.")
    root: Path | None = Field(
        default=None, description="Where the videos are written; null: a cache folder keyed by the settings."
    )
    n_videos: int = Field(default=6, ge=1, le=10_000, description="Number of videos.")
    seed: int = Field(default=0, ge=0, description="Seed (from 0): the same seed gives the same videos and answers.")
    seconds: float = Field(default=8.0, gt=0, le=3600, description="Video length in seconds.")
    fps: int = Field(default=8, ge=1, le=120, description="Frames per second.")
    width: int = Field(default=128, ge=16, le=4096, description="Frame width (even).")
    height: int = Field(default=96, ge=16, le=4096, description="Frame height (even).")
    questions: list[Literal["flash_count", "first_colour", "static_shape"]] = Field(
        default_factory=lambda: ["flash_count", "first_colour", "static_shape"],
        min_length=1,
        description="Question kinds asked about each video.",
    )


log = logging.getLogger(__name__)

VERSION = "synthetic-v1"
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


def _script(spec: SyntheticDatasetSpec, index: int) -> VideoScript:
    rng = np.random.default_rng([spec.seed, index])
    c = rng.choice(len(COLOURS), size=2, replace=False)
    names = list(COLOURS)
    return VideoScript(
        video_id=f"syn{spec.seed}-{index:04d}",
        colours=(names[c[0]], names[c[1]]),
        shape=SHAPES[int(rng.integers(len(SHAPES)))],
        flashes=int(rng.integers(1, 5)),
        n_frames=max(2, round(spec.seconds * spec.fps)),
        fps=spec.fps,
        width=spec.width - spec.width % 2,
        height=spec.height - spec.height % 2,
    )


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


def _mcq(question: str, options: list[str], answer: str, rng: np.random.Generator) -> tuple[str, tuple[str, ...], str]:
    order = [options[i] for i in rng.permutation(len(options))]
    letters = option_letters(len(order))
    text = MCQ_INSTRUCTION + question + "\n" + "\n".join(f"{lt}. {o}" for lt, o in zip(letters, order)) + "\nThe best answer is:"
    return text, tuple(order), letters[order.index(answer)]


class SyntheticBenchmark:
    """Adapter for the synthetic benchmark (writes its videos when missing)."""

    name = "synthetic"
    version = VERSION

    def __init__(self, spec: SyntheticDatasetSpec) -> None:
        self.spec = spec
        if spec.root is not None:
            self.root = Path(spec.root)
        else:
            key = hashlib.sha256(spec.model_dump_json(exclude={"root", "questions"}).encode()).hexdigest()[:12]
            self.root = cache_dir() / "synthetic" / f"{VERSION}-{key}"

    def scripts(self) -> list[VideoScript]:
        return [_script(self.spec, i) for i in range(self.spec.n_videos)]

    def ensure_videos(self) -> None:
        """Write every missing video file and the annotation file."""
        self.root.mkdir(parents=True, exist_ok=True)
        for s in self.scripts():
            path = self.root / f"{s.video_id}.mp4"
            if not path.exists():
                write_h264(path, render_frames(s), s.fps, s.width, s.height)
        ann = self.root / "annotations.jsonl"
        write_json_lines(ann, (_item_record(i) for i in self._items()))

    def _items(self) -> Iterator[Item]:
        for index, s in enumerate(self.scripts()):
            rng = np.random.default_rng([self.spec.seed, index, 1])
            for kind in self.spec.questions:
                if kind == "flash_count":
                    q = "How many times does the white square flash?"
                    prompt, opts, ans = _mcq(q, ["1", "2", "3", "4"], str(s.flashes), rng)
                elif kind == "first_colour":
                    q = "Which colour is the background at the start of the video?"
                    prompt, opts, ans = _mcq(q, list(COLOURS), s.colours[0], rng)
                else:
                    q = "Which black shape is drawn on the left?"
                    prompt, opts, ans = _mcq(q, list(SHAPES), s.shape, rng)
                yield Item(
                    dataset=self.name,
                    dataset_version=self.version,
                    item_id=f"{s.video_id}/{kind}",
                    video_id=s.video_id,
                    video_path=self.root / f"{s.video_id}.mp4",
                    question=q,
                    options=opts,
                    answer=ans,
                    kind="mcq",
                    task_type=kind,
                    category=kind,
                    duration="short",
                    prompt=prompt,
                )

    def items(self) -> Iterator[Item]:
        self.ensure_videos()
        yield from self._items()

    def score(self, item: Item, response: str) -> ItemScore:
        """Video-MME's letter extraction for the multiple-choice questions."""
        return default_score(item, response)


def _item_record(item: Item) -> dict[str, object]:
    return {
        "item_id": item.item_id,
        "video_id": item.video_id,
        "video": f"{item.video_id}.mp4",
        "question": item.question,
        "options": list(item.options),
        "answer": item.answer,
        "task_type": item.task_type,
    }


@register_adapter("synthetic")
def _factory(spec: SyntheticDatasetSpec) -> SyntheticBenchmark:
    return SyntheticBenchmark(spec)
