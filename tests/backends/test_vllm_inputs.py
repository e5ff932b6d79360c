"""What the engine actor hands vLLM for one request: frames framesweep sampled are never sampled again."""

from __future__ import annotations

import numpy as np

from engine.backends.base import EngineRequest
from engine.backends.prompts import video_metadata
from engine.backends.vllm_actor import VLLMWorker
from engine.frames.view import MediaView


def _inputs(r: EngineRequest) -> dict:
    return dict(VLLMWorker._inputs(object.__new__(VLLMWorker), r))  # pure: reads only the request


def _request(**kw: object) -> EngineRequest:
    media = MediaView(np.zeros((4, 28, 28, 3), np.uint8), np.array([0, 5, 10, 15]), 8.0, 16, "v:f4", "pyav")
    return EngineRequest("r", "p", video=media.frames, video_meta=video_metadata(media), **kw)  # type: ignore[arg-type]


def test_the_processor_is_told_not_to_sample_the_frames_again() -> None:
    """vLLM drops `do_sample_frames` from Qwen2.5-VL's video metadata, so a checkpoint whose processor config
    samples frames would resample framesweep's; the flag goes in the processor kwargs, which vLLM keeps."""
    got = _inputs(_request())
    assert got["mm_processor_kwargs"] == {"do_sample_frames": False}
    frames, meta = got["multi_modal_data"]["video"]
    assert frames.shape == (4, 28, 28, 3) and meta["frames_indices"] == [0, 5, 10, 15]


def test_a_familys_own_processor_kwargs_are_kept() -> None:
    got = _inputs(_request(mm_processor_kwargs={"size": {"longest_edge": 100}}))
    assert got["mm_processor_kwargs"] == {"size": {"longest_edge": 100}, "do_sample_frames": False}


def test_text_and_unsampled_video_get_no_processor_kwargs() -> None:
    assert "mm_processor_kwargs" not in _inputs(EngineRequest("t", "p"))
    bare = EngineRequest("v", "p", video=np.zeros((2, 28, 28, 3), np.uint8))  # a family that sends no metadata
    assert "mm_processor_kwargs" not in _inputs(bare)
