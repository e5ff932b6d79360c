"""The real vLLM engine (CPU build, tiny random Qwen2.5-VL) inside a Ray actor."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import numpy as np
import pytest

from engine.backends.families import get_family
from engine.backends.vllm_actor import VLLMActorBackend
from engine.config import EngineSpec
from engine.frames.view import MediaView, RepeatedFrames
from engine.items import Item
from engine.scoring import score_letters

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)

ITEM = Item(dataset="t", dataset_version="1", item_id="q1", video_id="v1", video_path=None,
            question="Which colour?", options=("red", "green", "blue", "yellow"), answer="B")


@pytest.fixture(scope="module")
def cluster(warm_engine_cache: Path):
    """The module joins the suite's warm cluster (`framesweep engines up` of the small spec): its qwen2_5_vl engine
    is the warm one; the other families' engines start there beside it (one at a time: the cluster has a CPU for
    one more)."""
    import ray

    from engine.runtime.cluster import ensure_ray, ray_session

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FRAMESWEEP_CACHE", str(warm_engine_cache))
        ray.shutdown()  # a test before may have left its driver connected
        ensure_ray()
        assert ray_session()["how"] == "engines up"
        yield
        ray.shutdown()


@pytest.fixture(scope="module", params=["qwen2_5_vl", "qwen3_vl", "llava_next_video"])
def backend(request: pytest.FixtureRequest, fs_cache: Path, cluster: None, tmp_path_factory: pytest.TempPathFactory):
    """One engine per family for the module (the tiny checkpoint of that family); qwen2_5_vl's is the warm engine
    of the small spec (the same checkpoint, max_model_len and dtype), reused as a sweep reuses it."""
    from helpers.specs import small_spec_dict

    from engine.config import parse_spec
    from engine.demo.tiny import build_tiny_checkpoint
    from engine.sweep import start_backends

    family = request.param
    fam = get_family(family)
    loop = asyncio.new_event_loop()
    if family == "qwen2_5_vl":
        spec = parse_spec(small_spec_dict(tmp_path_factory.mktemp("actor") / "out"))
        be = loop.run_until_complete(start_backends(spec))["tiny"]
        assert isinstance(be, VLLMActorBackend) and be.reused, "the warm engine was not reused"
        assert (spec.models[0].engine.max_model_len, spec.models[0].engine.dtype) == (4096, "float32")
        info = be.info
    else:
        be = VLLMActorBackend(build_tiny_checkpoint(family), EngineSpec(max_model_len=4096, dtype="float32"),
                              family_kwargs=fam.engine_kwargs(None))
        info = loop.run_until_complete(be.start())
    yield be, loop, info, fam
    loop.run_until_complete(be.close())
    loop.close()


def _media(n: int, seed: int = 0) -> MediaView:
    frames = np.random.default_rng(seed).integers(0, 255, (n, 64, 96, 3), dtype=np.uint8)
    idx = np.linspace(0, 39, n).round().astype(np.int64)
    return MediaView(frames, idx, 8.0, 40, f"v{seed}:f{n}", "pyav")


def test_option_probabilities_for_video_and_text(backend) -> None:
    be, loop, info, fam = backend
    assert info["engine_version"].startswith("vllm ")
    reqs = [fam.build("text", ITEM, None, "letter", None, 1),
            fam.build("f4", ITEM, _media(4), "letter", None, 1),
            fam.build("f8", ITEM, _media(8), "letter", None, 1)]
    assert reqs[0].video is None and reqs[1].media_uuid == "v0:f4"
    res = loop.run_until_complete(be.generate(reqs))
    assert [r.request_id for r in res] == ["text", "f4", "f8"]
    for r in res:
        assert r.ok, r.error
        # the first token was constrained to the letters: all four came back, as a distribution
        assert set(r.letter_logprobs) == {"A", "B", "C", "D"}
        assert math.isclose(sum(math.exp(v) for v in r.letter_logprobs.values()), 1.0, rel_tol=1e-4)
        assert r.text in {"A", "B", "C", "D"} and r.output_tokens == 1
        s = score_letters(ITEM.letters, r.letter_logprobs)
        assert s.pred == r.text  # greedy picks the argmax letter
        assert math.isclose(s.confidence, max(s.probs))
    # the video's tokens are in the prompt, and more frames cost more tokens
    assert res[0].prompt_tokens < res[1].prompt_tokens < res[2].prompt_tokens
    # the CPU build runs eager with nothing compiled, logprobs included: vLLM compiles a sampler helper with
    # inductor on the first logprobs call otherwise, about 5 CPU-s of every engine start
    info = loop.run_until_complete(be.actor.info.remote())
    assert info["compiled_graphs"] == 0
    # torch's and vLLM's imports ran with the collector paused (each full collection scans every object made so
    # far: nine during vLLM's import otherwise, about 2 CPU-s)
    assert info["import_full_collections"] == 0


def test_engine_is_deterministic_and_isolates_bad_requests(backend) -> None:
    be, loop, _, fam = backend
    good = fam.build("g", ITEM, _media(4, seed=1), "letter", None, 1)
    again = fam.build("g2", ITEM, _media(4, seed=1), "letter", None, 1)
    too_long = fam.build("long", ITEM, None, "letter", None, 1)
    too_long.prompt = too_long.prompt.replace("Which colour?", "red green blue " * 3000)
    res = loop.run_until_complete(be.generate([good, too_long, again]))
    assert res[0].ok and res[2].ok
    assert res[0].letter_logprobs == pytest.approx(res[2].letter_logprobs, abs=1e-5)
    assert not res[1].ok and res[1].error_type and res[1].error  # an error row, not a crash


def test_generate_mode_returns_text_and_top_letters(backend) -> None:
    be, loop, _, fam = backend
    req = fam.build("gen", ITEM, _media(4), "generate", None, 4)
    (r,) = loop.run_until_complete(be.generate([req]))
    assert r.ok and 1 <= r.output_tokens <= 4 and r.mean_logprob is not None
    # per generated token, its text and the option letters among its top-k (for the extracted letter's confidence)
    assert r.token_letters is not None and len(r.token_letters) == r.output_tokens
    assert "".join(tok for tok, _ in r.token_letters) == r.text
    assert all(set(lps) <= set(ITEM.letters) for _, lps in r.token_letters)


def test_repeated_frames_reach_the_engine_as_the_array_they_stand_for(backend) -> None:
    """A short video's budget names each distinct frame once (`RepeatedFrames`); the engine gets the array a copy
    per position would have been, so the answer is the one the copy gets (under another media uuid: no cache hit)."""
    be, loop, _, fam = backend
    distinct = np.random.default_rng(7).integers(0, 255, (3, 64, 96, 3), dtype=np.uint8)
    order = np.array([0, 0, 1, 1, 2, 2, 2, 2])
    idx = order.astype(np.int64)
    lazy = MediaView(RepeatedFrames(list(distinct), order), idx, 8.0, 3, "rep-lazy:f8", "pyav")
    dense = MediaView(distinct[order], idx, 8.0, 3, "rep-dense:f8", "pyav")
    res = loop.run_until_complete(be.generate([fam.build("lazy", ITEM, lazy, "letter", None, 1),
                                               fam.build("dense", ITEM, dense, "letter", None, 1)]))
    assert res[0].ok and res[1].ok, (res[0].error, res[1].error)
    assert res[0].prompt_tokens == res[1].prompt_tokens
    assert res[0].letter_logprobs == pytest.approx(res[1].letter_logprobs, abs=1e-5)
