"""The request step asks each job with its adapter's prompt for the frames it sends: Video-MME "w/ subs" gets the
subtitles at each budget's frames, in the prompt string (the in-process engine) and in the chat messages (the
HTTP backend) alike. No engine: requests are built from a real decoded H.264 video and inspected.

The video is 8 s at 10 fps (80 frames) with one subtitle per second ("cue 0" .. "cue 7"): the uniform 2-frame
budget samples frames 0 and 79 (seconds 0 and 7), the 4-frame one 0, 26, 53, 79 (seconds 0, 2, 5, 7).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
from helpers.specs import small_spec_dict

from engine.config import SweepSpec, parse_spec
from engine.datasets import load_items
from engine.demo.videos import write_h264
from engine.frames.decode import DecodeRequest, decode_video
from engine.items import Job
from engine.sweep.jobs import plan_item
from engine.sweep.prepare import _load
from engine.sweep.requests import RequestBuilder

VIDEO = "fFjv93ACGo8"
HEAD = "This video's subtitles are listed below: \n"
INSTRUCTION = ("Select the best answer to the following multiple-choice question based on the video and the subtitles."
               " Respond with only the letter (A, B, C, or D) of the correct option.\n")


def videomme_with_subtitles(root: Path) -> dict:
    """A Video-MME dataset entry: two questions over one real 8 s, 10 fps video with a subtitle per second."""
    rows = [{"video_id": "001", "duration": "short", "domain": "Knowledge", "sub_category": "Humanity & History",
             "url": "u", "videoID": VIDEO, "question_id": f"001-{q}", "task_type": "Counting Problem",
             "question": f"Question {q}?", "options": ["A. One.", "B. Two.", "C. Three.", "D. Four."], "answer": "B"}
            for q in (1, 2)]
    ann = root / "videomme" / "test.parquet"
    ann.parent.mkdir(parents=True)
    pl.DataFrame(rows).write_parquet(ann)
    media, subs = root / "data", root / "subtitle"
    media.mkdir()
    subs.mkdir()
    frames = (np.full((48, 64, 3), 3 * i, dtype=np.uint8) for i in range(80))
    write_h264(media / f"{VIDEO}.mp4", frames, fps=10, width=64, height=48)
    (subs / f"{VIDEO}.srt").write_text("".join(
        f"{k + 1}\n00:00:0{k},000 --> 00:00:0{k + 1},000\n<font color=\"white\" size=\".72c\">cue {k}</font>\n\n"
        for k in range(8)))
    return {"name": "videomme", "annotations": str(ann), "media_root": str(media), "subtitles": True,
            "subtitle_root": str(subs)}


def with_subtitles(question: str, seconds: list[int]) -> str:
    """The "w/ subs" prompt text whose subtitles are those of `seconds` (by hand)."""
    return (HEAD + "".join(f"cue {k}\n" for k in seconds) + INSTRUCTION
            + f"{question}\nA. One.\nB. Two.\nC. Three.\nD. Four.\nThe best answer is:")


def _spec(tmp_path: Path) -> SweepSpec:
    d = small_spec_dict(tmp_path / "out", budgets=[{"frames": 0}, {"frames": 2}, {"frames": 4}])
    d["dataset"] = videomme_with_subtitles(tmp_path)
    return parse_spec(d)


def _chat_text(messages: list[dict]) -> str:
    content = messages[-1]["content"]
    return content if isinstance(content, str) else content[-1]["text"]


def test_each_budget_is_asked_with_the_subtitles_at_its_frames(tmp_path: Path) -> None:
    import asyncio

    spec = _spec(tmp_path)
    _, _, _, prompts = asyncio.run(_load(spec))  # what a run prepares: the adapter's per-job prompt
    builder = RequestBuilder(spec)
    builder.prompts = prompts
    (_, items) = load_items(spec.dataset_specs()[0])
    item = items[1]
    got = {}
    for budget in spec.budgets_for(spec.models[0], "videomme"):
        plan = plan_item(item, budget, 80, 10.0)
        decoded = decode_video(DecodeRequest(item.video_path, plan.indices)) if plan.indices.size else None
        ctx = builder.context(Job("tiny", item, budget), decoded, plan)
        (ready,), failed = builder.build("tiny", [ctx], {"raw": decoded} if decoded else {}, by_ref=False)
        assert not failed
        got[budget.budget_id] = (ready.indices.tolist(), ready.request.prompt, _chat_text(ready.request.messages))
    assert got["f2"][0] == [0, 79] and got["f4"][0] == [0, 26, 53, 79]
    want = {"text": with_subtitles("Question 2?", list(range(8))),  # no frames: every subtitle
            "f2": with_subtitles("Question 2?", [0, 7]), "f4": with_subtitles("Question 2?", [0, 2, 5, 7])}
    for budget, (_, prompt, chat) in got.items():
        assert chat == want[budget]  # the HTTP backend's messages
        assert want[budget] + "<|im_end|>" in prompt  # the in-process engine's prompt string
    assert item.prompt == want["text"]  # the item itself is unchanged


def test_without_a_job_prompt_the_item_is_asked_as_loaded(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    builder = RequestBuilder(spec)  # e.g. `Sweep.answer` probes: nothing prepared
    (_, items) = load_items(spec.dataset_specs()[0])
    budget = spec.budgets_for(spec.models[0], "videomme")[1]
    plan = plan_item(items[0], budget, 80, 10.0)
    decoded = decode_video(DecodeRequest(items[0].video_path, plan.indices))
    (ready,), _ = builder.build("tiny", [builder.context(Job("tiny", items[0], budget), decoded, plan)],
                                {"raw": decoded}, by_ref=False)
    assert _chat_text(ready.request.messages) == items[0].prompt
