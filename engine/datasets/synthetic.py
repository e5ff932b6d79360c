"""A synthetic video benchmark: real H.264 files whose answers depend on the frames.

The adapter and its spec class, registered here beside the other benchmarks; what a video shows and how it
is written are the demo package's (`engine.demo.videos`: a background that changes colour once halfway
through, a black shape drawn still on the left, a white square that flashes k times on the right).
Questions (several per video, all multiple choice):

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
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field

from engine.datasets._base import ItemScore, default_score
from engine.datasets.registry import register_adapter
from engine.datasets.spec import DatasetBase
from engine.demo.videos import COLOURS, MCQ_INSTRUCTION, SHAPES, VideoScript, render_frames, write_h264
from engine.items import Item, option_letters
from engine.runtime.output import write_json_lines
from engine.runtime.paths import cache_dir

__all__ = ["SyntheticBenchmark", "SyntheticDatasetSpec"]


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
