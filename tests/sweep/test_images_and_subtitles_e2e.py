"""One sweep on the real engine: an image benchmark asked once as one image at its stored size beside a video
benchmark's frame budgets, and Video-MME "w/ subs" asked with the subtitles at each budget's frames.

The Video-MME video (`test_job_prompts.videomme_with_subtitles`) is 8 s at 10 fps (80 frames) with one subtitle
per second ("cue 0" .. "cue 7"), so a budget whose frames are f_1 < f_2 < ... gets the cues of seconds f // 10, in
order; the test reads each row's recorded frame indices, writes the prompt that must have been sent by hand, and
checks the row's prompt hash (of the prompt the engine got) against it.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from helpers.specs import small_spec_dict
from PIL import Image
from test_job_prompts import VIDEO, videomme_with_subtitles, with_subtitles

from engine.backends.families import get_family
from engine.backends.prompts import prompt_hash
from engine.config import parse_spec
from engine.frames.view import MediaView
from engine.items import Item
from engine.results import ResultsDir
from engine.sweep import Sweep, start_backends

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)


def _mmstar(path: Path) -> Path:
    def png(colour: int) -> bytes:
        buf = io.BytesIO()
        Image.new("RGB", (80, 60), (colour, 0, 0)).save(buf, format="PNG")
        return buf.getvalue()

    pl.DataFrame([{"index": i, "question": "Which colour?\nOptions: A: red, B: blue",
                   "image": {"bytes": png(100 + 50 * i), "path": f"{i}.png"}, "answer": "A", "category": "c",
                   "l2_category": "l2"} for i in range(2)]).write_parquet(path)
    return path


def _sent(row: dict, question: str) -> str:
    """The prompt the Qwen2.5-VL family sends for `row`, with the subtitles its frames show (by hand)."""
    seconds = sorted({i // 10 for i in row["frame_indices"]}) if row["frames"] else list(range(8))
    text = with_subtitles(question, seconds)
    item = Item(dataset="videomme", dataset_version="v", item_id="i", video_id=VIDEO, video_path=None,
                question=question, options=("One.", "Two.", "Three.", "Four."), answer="B", prompt=text)
    media = None if not row["frames"] else MediaView(np.zeros((row["frames"], 2, 2, 3), np.uint8),
                                                      np.array(row["frame_indices"]), 10.0, 80, row["media_uuid"],
                                                      "pyav")
    return get_family("qwen2_5_vl").build("r", item, media, "letter", None, 16).prompt


def test_images_once_at_their_size_and_subtitles_at_each_budgets_frames(tmp_path: Path, warm_engine: Path) -> None:
    import ray

    d = small_spec_dict(tmp_path / "out", budgets=[{"frames": 0}, {"frames": 2}, {"frames": 4}])
    d.pop("dataset")
    d["datasets"] = [
        videomme_with_subtitles(tmp_path),
        {"name": "mmstar", "annotations": str(_mmstar(tmp_path / "mmstar.parquet")),
         "image_cache": str(tmp_path / "img")},
    ]
    spec = parse_spec(d)

    async def go():
        backends = await start_backends(spec)
        try:
            return await Sweep(spec, backends=backends).run()
        finally:
            await asyncio.gather(*(b.close() for b in backends.values()))

    try:
        summary = asyncio.run(go())
    finally:
        ray.shutdown()
    assert summary.jobs_failed == 0 and summary.jobs_ok == 2 * 3 + 2  # 2 questions x 3 budgets, 2 images once
    rows = ResultsDir.open(tmp_path / "out").scan().collect()
    images = rows.filter(pl.col("dataset") == "mmstar")
    assert images.select("budget_id", "frames", "frames_sent", "width", "height", "max_pixels").unique().rows() == [
        ("image", 1, 1, 80, 60, None)]  # once, as one image, at its stored size
    video = rows.filter(pl.col("dataset") == "videomme").sort("item_id", "frames")
    assert set(video["dataset_version"]) == {"videomme-v1.fs1-subs-at-frames"}
    for r in video.iter_rows(named=True):
        question = f"Question {r['item_id'][-1]}?"
        assert r["prompt_hash"] == prompt_hash(_sent(r, question), r["media_uuid"]), (r["budget_id"], r["item_id"])
    hashes = video.group_by("item_id").agg(pl.col("prompt_hash").n_unique())["prompt_hash"].to_list()
    assert hashes == [3, 3]  # text (every cue), f2 and f4 (the cues of their frames): three prompts per question
