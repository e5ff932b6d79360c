"""Prompt and media packing per model family (no engine needed)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from engine.backends.base import IMAGE_URL_SLOT, VIDEO_URL_SLOT
from engine.backends.families import FAMILIES, get_family
from engine.frames.view import MediaView
from engine.items import Generation, Item

ITEM = Item(dataset="d", dataset_version="1", item_id="i1", video_id="vid", video_path=None,
            question="What happens?", options=("a", "b", "c", "d"), answer="A", prompt="Q?\nA. a\nB. b")


def media(n: int, h: int = 64, w: int = 96) -> MediaView:
    frames = np.zeros((n, h, w, 3), np.uint8)
    return MediaView(frames, np.linspace(0, 99, n).round().astype(np.int64), 25.0, 100, f"vid:f{n}", "pyav")


def test_registry_lists_known_families() -> None:
    assert {"qwen2_5_vl", "qwen3_vl", "internvl3", "internvl3_5", "llava_next_video"} <= set(FAMILIES)
    with pytest.raises(KeyError, match="known: "):
        get_family("gpt")


@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl"])
def test_qwen_video_first_with_metadata(family: str) -> None:
    r = get_family(family).build("r", ITEM, media(8), "letter", None, 1)
    assert r.prompt.index("<|vision_start|><|video_pad|><|vision_end|>") < r.prompt.index("Q?\nA. a")
    assert r.prompt.endswith("<|im_start|>assistant\n")
    assert r.video_meta == {"fps": 25.0, "duration": 4.0, "total_num_frames": 100,
                            "frames_indices": [0, 14, 28, 42, 57, 71, 85, 99], "video_backend": "pyav",
                            "do_sample_frames": False}
    assert r.media_uuid == "vid:f8" and r.mode == "letter" and r.letters == ["A", "B", "C", "D"]
    assert r.messages[1]["content"][0] == {"type": "video_url", "video_url": {"url": VIDEO_URL_SLOT}}
    text = get_family(family).build("t", ITEM, None, "letter", None, 1)
    assert "<|vision_start|>" not in text.prompt and text.video is None and isinstance(text.messages[1]["content"], str)


def test_qwen3_holds_resolution_fixed_across_budgets() -> None:
    fam = get_family("qwen3_vl")
    for n in (16, 64, 256):
        kw = fam.build("r", ITEM, media(n, 448, 448), "letter", None, 1).mm_processor_kwargs
        assert kw["size"]["longest_edge"] >= n * 448 * 448  # the clip-wide cap never shrinks the frames
    assert get_family("qwen2_5_vl").build("r", ITEM, media(4), "letter", None, 1).mm_processor_kwargs is None


def test_llava_next_video_packing() -> None:
    r = get_family("llava_next_video").build("r", ITEM, media(4), "letter", None, 1)
    assert r.prompt == "USER: <video>\nQ?\nA. a\nB. b ASSISTANT:"
    assert r.video.shape == (4, 64, 96, 3) and r.video_meta is None
    assert get_family("llava_next_video").build("r", ITEM, None, "letter", None, 1).prompt == \
        "USER: Q?\nA. a\nB. b ASSISTANT:"


@pytest.mark.parametrize("family", ["internvl3", "internvl3_5"])
def test_internvl_frame_lines(family: str) -> None:
    r = get_family(family).build("r", ITEM, media(3), "letter", None, 1)
    assert "user\nFrame1: <image>\nFrame2: <image>\nFrame3: <image>\nQ?" in r.prompt
    assert len(r.images) == 3 and r.video is None and r.mm_processor_kwargs == {"max_dynamic_patch": 1}
    assert r.image_uuids == ["vid:0:96x64", "vid:50:96x64", "vid:99:96x64"]  # per frame: shared across budgets
    parts = r.messages[1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url"] * 3 + ["text"]
    assert parts[1]["image_url"]["url"] == IMAGE_URL_SLOT.format(0)
    assert get_family(family).engine_kwargs(64) == {"limit_mm_per_prompt": {"image": 64, "video": 0}}


def test_image_item_and_official_prefix() -> None:
    img = Item(dataset="d", dataset_version="1", item_id="i2", video_id="im", video_path=None, question="Q",
               options=("x", "y"), answer="B", media_kind="image", response_prefix="Best Option: (",
               system_prompt="Be brief.")
    r = get_family("qwen2_5_vl").build("r", img, media(1), "letter", None, 1)
    assert "<|image_pad|>" in r.prompt and r.video is None and len(r.images) == 1
    assert r.prompt.startswith("<|im_start|>system\nBe brief.") and r.prompt.endswith("assistant\nBest Option: (")
    assert r.messages[-1] == {"role": "assistant", "content": "Best Option: ("}
    assert r.chat_extra == {"continue_final_message": True, "add_generation_prompt": False}
    # the spec's system prompt wins over the benchmark's
    assert get_family("qwen2_5_vl").build("r", img, None, "letter", "S", 1).prompt.startswith(
        "<|im_start|>system\nS<|im_end|>")


def test_llava_1_5_sends_frames_as_images() -> None:
    fam = get_family("llava_1_5")
    r = fam.build("r", ITEM, media(3), "letter", None, 1)
    assert r.prompt == "USER: <image>\n<image>\n<image>\nQ?\nA. a\nB. b ASSISTANT:"
    assert len(r.images) == 3 and r.video is None and len(set(r.image_uuids)) == 3
    assert [p["type"] for p in r.messages[0]["content"]] == ["image_url"] * 3 + ["text"]
    assert fam.build("t", ITEM, None, "letter", None, 1).prompt == "USER: Q?\nA. a\nB. b ASSISTANT:"
    assert fam.engine_kwargs(4) == {"limit_mm_per_prompt": {"image": 4, "video": 0}}


@pytest.mark.parametrize("family", ["internvl3", "llava_1_5"])
def test_per_frame_ids_follow_the_media_name_across_datasets_and_namespaces(family: str) -> None:
    """Two datasets reusing a video id (other files), or two timed policies, never share a frame id."""
    from dataclasses import replace

    from engine.frames.view import media_uuid

    frames = np.zeros((2, 64, 96, 3), np.uint8)
    idx = np.array([0, 9])
    ids = []
    for item, ns in ((ITEM, None), (replace(ITEM, dataset="other"), None), (ITEM, "cascade-r1")):
        uuid = media_uuid(item.media_key, "f2", namespace=ns)
        r = get_family(family).build("r", item, MediaView(frames, idx, 25.0, 100, uuid, "pyav"), "letter", None, 1)
        ids.append(r.image_uuids)
    assert ids[0] == ["d/vid:0:96x64", "d/vid:9:96x64"]
    assert ids[1] == ["other/vid:0:96x64", "other/vid:9:96x64"]
    assert ids[2] == ["cascade-r1/d/vid:0:96x64", "cascade-r1/d/vid:9:96x64"]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_benchmarks_generation_settings_shape_its_generated_requests_only(family: str) -> None:
    """An item's `Generation` (an lmms-eval task's generation_kwargs) replaces the spec's token limit and adds its
    stop strings and temperature to a generated answer; letter scoring's one token is left as it is."""
    gen = Generation(max_new_tokens=7, stop=("END", "\n\n"), temperature=0.5)
    mcq = Item(dataset="d", dataset_version="1", item_id="i", video_id="v", video_path=None, question="Q?",
               options=("a", "b"), answer="A", generation=gen)
    asked = get_family(family).build("r", mcq, None, "generate", None, 64)
    assert (asked.mode, asked.max_tokens, asked.stop, asked.temperature) == ("generate", 7, ["END", "\n\n"], 0.5)
    letter = get_family(family).build("r", mcq, None, "letter", None, 64)
    assert (letter.mode, letter.stop, letter.temperature) == ("letter", None, 0.0)
    plain = get_family(family).build("r", replace(mcq, generation=None), None, "generate", None, 64)
    assert (plain.max_tokens, plain.stop, plain.temperature) == (64, None, 0.0)
    unset = get_family(family).build("r", replace(mcq, generation=Generation(stop=("\n\n",))), None, "generate",
                                     None, 64)
    assert (unset.max_tokens, unset.stop) == (64, ["\n\n"])  # no limit of its own: the spec's
