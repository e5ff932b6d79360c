"""The prompts every shipped family builds stay byte-identical: pinned from the code before the question text had one
builder (`engine.backends.prompts.question_text`), for an item without an official prompt, one with an official
prompt, system message and answer prefix, an open question, an image, and the predictor's question about two of them;
each text-only and with four frames."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

import numpy as np
import pytest

from engine.adaptive.predictor import _question
from engine.backends.families import get_family
from engine.backends.prompts import question_text
from engine.frames.view import MediaView
from engine.items import Item

PLAIN = Item(dataset="d", dataset_version="1", item_id="i1", video_id="vid", video_path=None,
             question="What happens first?", options=("a dog barks", "a cat sits", "it rains"), answer="B")
OFFICIAL = replace(PLAIN, item_id="i2", prompt="Select the best answer.\nWhat happens first?\n(A) a dog barks\n"
                   "(B) a cat sits\n(C) it rains\nThe best answer is:", system_prompt="Be brief.",
                   response_prefix="Best option: (")
OPEN = Item(dataset="d", dataset_version="1", item_id="i3", video_id="vid", video_path=None,
            question="Describe the video.", answer="a dog", kind="open")
CASES = {"plain": PLAIN, "official": OFFICIAL, "open": OPEN, "image": replace(PLAIN, item_id="i4", media_kind="image"),
         "predictor": _question(PLAIN, [0, 4, 16]), "predictor_official": _question(OFFICIAL, [4, 16])}

PINS = {
    "qwen2_5_vl/plain": "9bd66b4493188920",
    "qwen2_5_vl/official": "151d41b6d8493e01",
    "qwen2_5_vl/open": "5c8860face3a41ce",
    "qwen2_5_vl/image": "7dc11d0803f589cf",
    "qwen2_5_vl/predictor": "eda70c7fd5c4886a",
    "qwen2_5_vl/predictor_official": "e4ca7334201082b3",
    "qwen3_vl/plain": "9bd66b4493188920",
    "qwen3_vl/official": "151d41b6d8493e01",
    "qwen3_vl/open": "5c8860face3a41ce",
    "qwen3_vl/image": "7dc11d0803f589cf",
    "qwen3_vl/predictor": "eda70c7fd5c4886a",
    "qwen3_vl/predictor_official": "e4ca7334201082b3",
    "llava_next_video/plain": "93f78fd01d3cd4cd",
    "llava_next_video/official": "fe59227d87303484",
    "llava_next_video/open": "ea31b0327dbcf168",
    "llava_next_video/image": "4719ed86f4c059f8",
    "llava_next_video/predictor": "be2566e1676a4f1f",
    "llava_next_video/predictor_official": "1596bace6f8a24fe",
    "llava_1_5/plain": "76e7d17d5c0cd254",
    "llava_1_5/official": "ba67ac469fee7728",
    "llava_1_5/open": "596abf14fc267a04",
    "llava_1_5/image": "4719ed86f4c059f8",
    "llava_1_5/predictor": "3985ee7788f14bc5",
    "llava_1_5/predictor_official": "be644c1a24e5e053",
    "internvl3/plain": "034a560b2e462c38",
    "internvl3/official": "5224eca271c8385c",
    "internvl3/open": "0025cfc1d2fa5bdf",
    "internvl3/image": "fbcd7ac07b38c6d0",
    "internvl3/predictor": "51257e6b7a81870c",
    "internvl3/predictor_official": "598df36e18b17807",
    "internvl3_5/plain": "034a560b2e462c38",
    "internvl3_5/official": "5224eca271c8385c",
    "internvl3_5/open": "0025cfc1d2fa5bdf",
    "internvl3_5/image": "fbcd7ac07b38c6d0",
    "internvl3_5/predictor": "51257e6b7a81870c",
    "internvl3_5/predictor_official": "598df36e18b17807",
}
"""sha256 (16 hex) of the two digests (text-only, four frames) of each (family, case)'s raw prompt and chat messages."""


def _media(n: int) -> MediaView:
    frames = np.zeros((n, 64, 96, 3), np.uint8)
    return MediaView(frames, np.linspace(0, 99, n).round().astype(np.int64), 25.0, 100, f"vid:f{n}", "pyav")


def _digest(family: str, item: Item, frames: int | None) -> str:
    r = get_family(family).build("r", item, None if frames is None else _media(frames), "letter", None, 1)
    both = json.dumps({"prompt": r.prompt, "messages": r.messages}, sort_keys=True)
    return hashlib.sha256(both.encode()).hexdigest()[:16]


@pytest.mark.parametrize("key", sorted(PINS))
def test_every_family_builds_the_prompts_it_built_before(key: str) -> None:
    family, case = key.split("/")
    got = "".join(_digest(family, CASES[case], n) for n in (None, 4))
    assert hashlib.sha256(got.encode()).hexdigest()[:16] == PINS[key]


def test_the_question_text_and_the_predictors_question_word_for_word() -> None:
    assert question_text(PLAIN) == "What happens first?\nA. a dog barks\nB. a cat sits\nC. it rains"
    assert question_text(OFFICIAL) == OFFICIAL.prompt and question_text(OPEN) == "Describe the video."
    assert CASES["predictor"].prompt == (
        "A video assistant will answer the instruction below after looking at frames sampled evenly from the video. "
        "More frames cost more. What is the minimum number of frames that suffices to answer it?\n"
        "Instruction: What happens first?\nA. a dog barks\nB. a cat sits\nC. it rains\n"
        "A. no frames (text only)\nB. 4 frames\nC. 16 frames\nAnswer with the option's letter.")
