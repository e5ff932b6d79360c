"""The HTTP backend's frames: JPEG-encoded once per (video, frame index, size), never another budget's by mistake."""

from __future__ import annotations

import base64
import io

import numpy as np
from PIL import Image

from engine.backends.families import get_family
from engine.backends.openai_http import FrameEncoder
from engine.frames.view import MediaView, media_fingerprint, media_uuid
from engine.items import Item

ITEM = Item(dataset="t", dataset_version="1", item_id="q0", video_id="v1", video_path=None,
            question="Which colour comes first?", options=("red", "green", "blue", "yellow"), answer="B")


def _view(frames: np.ndarray, indices: np.ndarray, budget: str) -> MediaView:
    """One budget's view named as the pipeline names it: the video's digest, then the frames' after the budget."""
    size = (frames.shape[2], frames.shape[1])
    uuid = media_uuid("syn/v1", budget, content=media_fingerprint(None, "pyav", "raw"),
                      frames=media_fingerprint(None, indices, size))
    return MediaView(frames, indices, 10.0, 80, uuid, "pyav")


def _flat(indices: np.ndarray) -> np.ndarray:
    """Frame i is one flat grey, 3 * i: a JPEG of it decodes back to about that grey."""
    return np.stack([np.full((32, 48, 3), 3 * int(i), np.uint8) for i in indices])


def _greys(url: str) -> list[int]:
    parts = url.split(",", 1)[1].split(",")
    return [round(float(np.asarray(Image.open(io.BytesIO(base64.b64decode(p)))).mean())) for p in parts]


def test_every_budget_of_a_video_has_one_video_name_and_one_id_per_frame() -> None:
    a, b = np.array([0, 20, 40, 60]), np.array([0, 10, 20, 30, 40, 50, 60, 70])
    va, vb = _view(_flat(a), a, "f4"), _view(_flat(b), b, "f8")
    assert va.uuid != vb.uuid and va.source == vb.source  # two frame sets, one video
    assert va.frame_uuid(20, 48, 32) == vb.frame_uuid(20, 48, 32)
    # another size of the same frames is another media item
    other = media_uuid("syn/v1", "f4", content=media_fingerprint(None, "pyav", "raw"),
                       frames=media_fingerprint(None, a, (24, 16)))
    assert other != va.uuid and other.rsplit(":", 1)[0] == va.source
    assert media_uuid("syn/v", "f8", clip=(1.0, 2.0), frames="ab12").endswith(":f8~ab12@1-2")


def test_a_frame_is_encoded_once_per_video_whatever_the_budget() -> None:
    fam, enc = get_family("qwen2_5_vl"), FrameEncoder()
    budgets = {"f4": np.array([0, 20, 40, 60]), "f8": np.arange(0, 80, 10), "f3": np.array([5, 40, 75])}
    for name, idx in budgets.items():
        for q in range(3):
            r = fam.build(f"q{q}/{name}", ITEM, _view(_flat(idx), idx, name), "letter", None, 1)
            assert _greys(enc.data_url(r)) == [3 * int(i) for i in idx]
    assert enc.encoded == np.unique(np.concatenate(list(budgets.values()))).size  # 10 of 45 frames asked


def test_frames_named_by_position_are_never_another_budgets() -> None:
    """LLaVA-NeXT-Video's requests carry no frame indices: its frames are named within their own media item, so
    budget f8's second frame (index 10) is never budget f4's second (index 20), though both name one video."""
    fam, enc = get_family("llava_next_video"), FrameEncoder()
    for name, idx in (("f4", np.array([0, 20, 40, 60])), ("f8", np.arange(0, 80, 10))):
        for q in range(2):
            r = fam.build(f"q{q}/{name}", ITEM, _view(_flat(idx), idx, name), "letter", None, 1)
            assert _greys(enc.data_url(r)) == [3 * int(i) for i in idx], name
    assert enc.encoded == 4 + 8  # shared by the questions of a budget only


def test_the_encoder_lets_go_of_the_videos_used_least_recently_whole() -> None:
    enc = FrameEncoder(max_bytes=1)  # every new video pushes the others out
    frame = _flat(np.array([7]))[0]
    enc.b64("a", (0, (32, 48)), frame)
    enc.b64("a", (1, (32, 48)), frame)  # the video in use is kept, however big
    assert enc.encoded == 2 and list(enc._videos) == ["a"]
    enc.b64("b", (0, (32, 48)), frame)
    assert list(enc._videos) == ["b"]
    enc.b64("a", (0, (32, 48)), frame)  # gone with its video: encoded again
    assert enc.encoded == 4
