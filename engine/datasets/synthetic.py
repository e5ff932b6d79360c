"""A synthetic video benchmark: real H.264 files whose answers depend on the frames.

The adapter and its spec class, registered here beside the other benchmarks; what a video shows and how it
is written are the demo package's (`engine.demo.videos`: a background that changes colour once halfway
through, a black shape drawn still on the left, a white square that flashes k times on the right).
Questions (several per video, all multiple choice):

- ``flash_count``: how many times the white square flashes (1-4): needs the whole clip;
- ``first_colour`` / ``last_colour``: the background colour at the start / the end: needs the first or last frames;
- ``static_shape``: what black shape is drawn: any one frame;
- ``texture`` (version 2): what fills the small patch at the bottom (one-pixel stripes, checks or grey): fine
  detail that half the resolution turns into the same grey for all four.

Version 1 (the default) has evenly spread flashes and shuffled options. Version 2 is what the trained tiny model
(`tiny:qwen2_5_vl_seen`) learned: 8 s at 8 fps, 112 x 84, 1-4 flashes of 5 frames at random times (16 frames
see every one, 4 about a quarter), the texture patch, and options in one fixed order per question kind.

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
from pydantic import Field, model_validator

from engine.datasets._base import ItemScore, default_score
from engine.datasets.registry import register_adapter
from engine.datasets.spec import DatasetBase
from engine.demo.videos import (
    COLOURS,
    MCQ_INSTRUCTION,
    QUESTIONS,
    SHAPES,
    VideoScript,
    answer_of,
    mcq_text,
    render_frames,
    seen_script,
    write_h264,
)
from engine.items import Item, option_letters
from engine.runtime.output import write_json_lines
from engine.runtime.paths import cache_dir

__all__ = ["SyntheticBenchmark", "SyntheticDatasetSpec"]


SEEN_QUESTIONS = ("flash_count", "first_colour", "last_colour", "static_shape", "texture")


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
    questions: list[Literal["flash_count", "first_colour", "last_colour", "static_shape", "texture"]] = Field(
        default_factory=lambda: ["flash_count", "first_colour", "static_shape"],
        min_length=1,
        description="Question kinds asked about each video (version 2's default: all five; `texture` needs version 2).",
    )
    version: Literal[1, 2] = Field(
        default=1,
        description="1: evenly spread flashes, shuffled options; 2: the videos the trained tiny model knows "
        "(8 s, 8 fps, 112x84, brief flashes, a texture patch, fixed option order; seconds, fps, width and "
        "height are then fixed).",
    )

    @model_validator(mode="before")
    @classmethod
    def _version_2_questions(cls, data: object) -> object:
        if isinstance(data, dict) and data.get("version") == 2 and "questions" not in data:
            return {**data, "questions": list(SEEN_QUESTIONS)}
        return data

    @model_validator(mode="after")
    def _version_settings(self) -> SyntheticDatasetSpec:
        if self.version == 2:
            fixed = sorted({"seconds", "fps", "width", "height"} & self.model_fields_set)
            if fixed:
                raise ValueError(f"synthetic version 2 videos are 8 s at 8 fps, 112x84 (what the trained model "
                                 f"learned): remove {', '.join(fixed)}")
        elif "texture" in self.questions:
            raise ValueError("the texture question needs version = 2 (version 1 videos have no texture patch)")
        return self


log = logging.getLogger(__name__)

VERSION = "synthetic-v1"


def _script(spec: SyntheticDatasetSpec, index: int) -> VideoScript:
    rng = np.random.default_rng([spec.seed, index])
    if spec.version == 2:
        return seen_script(rng, f"syn{spec.seed}v2-{index:04d}")
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

    def __init__(self, spec: SyntheticDatasetSpec) -> None:
        self.spec = spec
        self.version = f"synthetic-v{spec.version}"
        if spec.root is not None:
            self.root = Path(spec.root)
        else:
            # version 1's folder name predates the version field: keep it, so its videos are found again
            exclude = {"root", "questions"} | ({"version"} if spec.version == 1 else set())
            key = hashlib.sha256(spec.model_dump_json(exclude=exclude).encode()).hexdigest()[:12]
            self.root = cache_dir() / "synthetic" / f"{self.version}-{key}"

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
                if self.spec.version == 2:  # one fixed option order per kind: what the trained model learned
                    q, opts = QUESTIONS[kind]
                    prompt, ans = mcq_text(q, opts), "ABCD"[opts.index(answer_of(s, kind))]
                elif kind == "flash_count":
                    q = "How many times does the white square flash?"
                    prompt, opts, ans = _mcq(q, ["1", "2", "3", "4"], str(s.flashes), rng)
                elif kind == "first_colour":
                    q = "Which colour is the background at the start of the video?"
                    prompt, opts, ans = _mcq(q, list(COLOURS), s.colours[0], rng)
                elif kind == "last_colour":
                    q = "Which colour is the background at the end of the video?"
                    prompt, opts, ans = _mcq(q, list(COLOURS), s.colours[1], rng)
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
