"""A video shorter than its budgets: each distinct frame is held once, however many budgets repeat it.

Budgets of 8, 16 and 32 frames over the 6-frame asset repeat its frames (lmms-eval's uniform rule). Each budget's
shared view was a copy of N frames (two 8K frames under a few budgets: 3.4 GB); now it names the distinct frames the
decoded video already holds (`RepeatedFrames`), at the decoded size and at a smaller one, and what a model is sent
is unchanged: the same pixels (the HTTP backend's data URL, the array vLLM's processor gets).
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from engine.backends.base import EngineRequest
from engine.backends.families import get_family
from engine.backends.openai_http import FrameEncoder
from engine.backends.vllm_actor import VLLMWorker
from engine.config import BudgetPoint
from engine.frames.decode import DecodeRequest, decode_video, get_decoder
from engine.frames.plan import plan_budget, union_indices
from engine.frames.video import DecodedVideo
from engine.frames.view import MediaView, RepeatedFrames
from engine.items import Item

ASSETS = Path(__file__).resolve().parents[1] / "assets"
SHORT = ASSETS / "short.mp4"
N_FRAMES = json.loads((ASSETS / "assets.json").read_text())["short_frames"]
BUDGETS = (8, 16, 32)
SMALL = (48, 32)


def _decoded() -> tuple[DecodedVideo, list[np.ndarray]]:
    info = get_decoder("pyav").probe(SHORT)
    plans = [plan_budget(BudgetPoint(frames=n), info.n_frames, info.fps) for n in BUDGETS]
    assert info.n_frames == N_FRAMES and all(p.repeated for p in plans)
    return decode_video(DecodeRequest(SHORT, union_indices(plans), "pyav")), [p.indices for p in plans]


def _buffers(frames: list[np.ndarray]) -> set[int]:
    return {f.__array_interface__["data"][0] for f in frames}


@pytest.mark.parametrize("size", [None, SMALL])
def test_budgets_that_repeat_frames_hold_each_distinct_frame_once(size: tuple[int, int] | None) -> None:
    d, budgets = _decoded()
    before = d.nbytes
    views = [d.view(idx, size, shared=True) for idx in budgets]
    w, h = size or d.size
    frame_bytes = w * h * 3
    resized = 0 if size is None else N_FRAMES * frame_bytes  # the per-size store: each frame once at that size
    # a copy per position was (8 + 16 + 32) frames more
    assert d.nbytes - before == resized
    assert all(isinstance(v, RepeatedFrames) and v.held_bytes == 0 for v in views)
    assert [v.shape for v in views] == [(n, h, w, 3) for n in BUDGETS]
    assert len(_buffers([f for v in views for f in v])) == N_FRAMES  # 56 positions, 6 frames
    for v, idx in zip(views, budgets):
        assert np.array_equal(np.asarray(v), d.view(idx, size))  # the pixels a copy held
        assert d.view(idx.copy(), size, shared=True) is v  # one per (indices, size), shared by its questions
    assert not any(f.flags.writeable for v in views for f in v.frames)


def test_what_a_model_is_sent_is_unchanged() -> None:
    """The HTTP backend encodes each distinct frame once and sends the same data URL as for the copy; vLLM's
    processor gets one array with the copy's pixels, made once per view and counted while it is held."""
    d, budgets = _decoded()
    item = Item(dataset="t", dataset_version="1", item_id="q0", video_id="v", video_path=None, question="Q?",
                options=("a", "b", "c", "d"), answer="B")
    family = get_family("qwen2_5_vl")
    lazy, dense = FrameEncoder(), FrameEncoder()
    for n, idx in zip(BUDGETS, budgets):
        view = d.view(idx, SMALL, shared=True)
        requests = [family.build(f"r{n}", item, MediaView(frames, idx, 24.0, N_FRAMES, f"v:f{n}", "pyav"), "letter",
                                 None, 1) for frames in (view, d.view(idx, SMALL))]
        assert lazy.data_url(requests[0]) == dense.data_url(requests[1])
        assert lazy.encoded == N_FRAMES  # per video, index and size: the other budgets' frames are reused
        inputs = object.__new__(VLLMWorker)._inputs(requests[0])
        sent = inputs["multi_modal_data"]["video"][0]
        assert isinstance(sent, np.ndarray) and np.array_equal(sent, d.view(idx, SMALL))
        assert object.__new__(VLLMWorker)._inputs(requests[0])["multi_modal_data"]["video"][0] is sent
        assert view.held_bytes == sent.nbytes
    assert d.nbytes == d.frames.nbytes + N_FRAMES * SMALL[0] * SMALL[1] * 3 + sum(len(b) for b in budgets) * SMALL[0] \
        * SMALL[1] * 3  # the arrays vLLM asked for, until the video's views go


def test_a_repeated_view_travels_as_its_distinct_frames() -> None:
    """Pickled (to an engine in another process) it carries 6 frames, not 32, and never the array once made."""
    d, budgets = _decoded()
    view = d.view(budgets[-1], shared=True)
    assert isinstance(view, RepeatedFrames)
    np.asarray(view)
    back = pickle.loads(pickle.dumps(view, protocol=5))
    assert back.held_bytes == 0 and np.array_equal(np.asarray(back), np.asarray(view))
    assert len(pickle.dumps(view, protocol=5)) < (N_FRAMES + 1) * d.frames[0].nbytes < view.nbytes / 4
    assert len(back) == len(budgets[-1]) and back[5].shape == d.frames[0].shape


def test_images_per_frame_families_pack_the_distinct_frames() -> None:
    """LLaVA-1.5 sends a video as images: the repeated positions are the same arrays, not copies."""
    d, budgets = _decoded()
    idx = budgets[0]
    view = d.view(idx, shared=True)
    item = Item(dataset="t", dataset_version="1", item_id="q0", video_id="v", video_path=None, question="Q?",
                options=("a", "b"), answer="A")
    r: EngineRequest = get_family("llava_1_5").build("r", item, MediaView(view, idx, 24.0, N_FRAMES, "v:f8", "pyav"),
                                                     "letter", None, 1)
    assert r.images is not None and len(_buffers(list(r.images))) == len(np.unique(idx))
