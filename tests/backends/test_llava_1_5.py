"""LLaVA-1.5 (llava-hf layout) on the real vLLM CPU engine: a video goes in as several images."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import numpy as np
import pytest

from engine.backends.families import get_family
from engine.backends.vllm_actor import VLLMActorBackend
from engine.config import EngineSpec
from engine.frames.view import MediaView
from engine.items import Item

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)

ITEM = Item(dataset="t", dataset_version="1", item_id="q1", video_id="v1", video_path=None,
            question="Which colour?", options=("red", "green", "blue", "yellow"), answer="B")
MAX_IMAGES = 8


@pytest.fixture(scope="module")
def engine(fs_cache: Path):
    """One tiny LLaVA-1.5 engine for the module, at most MAX_IMAGES images per prompt."""
    import ray

    from engine.demo.tiny import build_tiny_checkpoint
    from engine.runtime.cluster import ensure_ray

    ensure_ray(num_cpus=2, object_store_mb=512)
    path = build_tiny_checkpoint("llava_1_5")
    fam = get_family("llava_1_5")
    be = VLLMActorBackend(path, EngineSpec(max_model_len=4096, dtype="float32"),
                          family_kwargs=fam.engine_kwargs(MAX_IMAGES))
    loop = asyncio.new_event_loop()
    info = loop.run_until_complete(be.start())
    yield be, loop, info, fam, path
    loop.run_until_complete(be.close())
    loop.close()
    ray.shutdown()


def _media(n: int, seed: int = 0) -> MediaView:
    frames = np.random.default_rng(seed).integers(0, 255, (n, 48, 64, 3), dtype=np.uint8)
    idx = np.linspace(0, 39, n).round().astype(np.int64)
    return MediaView(frames, idx, 8.0, 40, f"v{seed}:f{n}", "pyav")


def test_checkpoint_is_llava_hf_layout(engine) -> None:
    *_, path = engine
    cfg = json.loads((path / "config.json").read_text())
    assert cfg["architectures"] == ["LlavaForConditionalGeneration"]
    assert cfg["text_config"]["hidden_size"] // cfg["text_config"]["num_attention_heads"] == 32  # CPU head size


def test_frames_as_images_tokens_grow_deterministic(engine) -> None:
    be, loop, info, fam, _ = engine
    assert info["engine_version"].startswith("vllm ")
    reqs = [fam.build("text", ITEM, None, "letter", None, 1)]
    reqs += [fam.build(f"f{n}", ITEM, _media(n), "letter", None, 1) for n in (1, 2, 4, MAX_IMAGES)]
    reqs.append(fam.build("again", ITEM, _media(4), "letter", None, 1))
    assert [r.prompt.count("<image>") for r in reqs] == [0, 1, 2, 4, MAX_IMAGES, 4]
    res = loop.run_until_complete(be.generate(reqs))
    assert [r.request_id for r in res] == [r.request_id for r in reqs]
    for r in res:
        assert r.ok, r.error
        assert set(r.letter_logprobs) == {"A", "B", "C", "D"} and r.output_tokens == 1
        assert math.isclose(sum(math.exp(v) for v in r.letter_logprobs.values()), 1.0, rel_tol=1e-4)
    tokens = [r.prompt_tokens for r in res[:5]]
    per_image = tokens[2] - tokens[1]
    assert per_image > 0
    # every image costs the same number of tokens (64 patches + its newline)
    assert [t - tokens[0] for t in tokens[1:]] == [(tokens[1] - tokens[0]) + per_image * (n - 1)
                                                  for n in (1, 2, 4, MAX_IMAGES)]
    assert res[5].letter_logprobs == pytest.approx(res[3].letter_logprobs, abs=1e-5)  # same input, same answer


def test_more_images_than_configured_fail_only_their_request(engine) -> None:
    be, loop, _, fam, _ = engine
    reqs = [fam.build("ok", ITEM, _media(2), "letter", None, 1),
            fam.build("too_many", ITEM, _media(MAX_IMAGES + 1), "letter", None, 1)]
    res = loop.run_until_complete(be.generate(reqs))
    assert res[0].ok and not res[1].ok
