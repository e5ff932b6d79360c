"""The HTTP backend against a real `vllm` OpenAI-compatible server on loopback,
compared row for row with the in-process engine on the same frames."""

from __future__ import annotations

import asyncio
import io
import math
import os
from pathlib import Path

import numpy as np
import pytest
from helpers.vllm_server import vllm_server
from PIL import Image

from engine.backends.families import get_family
from engine.backends.openai_http import OpenAIHTTPBackend
from engine.backends.vllm_actor import VLLMActorBackend
from engine.config import HTTPSpec
from engine.frames.view import MediaView
from engine.items import Item

pytestmark = pytest.mark.engine  # every test asks the module's vllm server (a process)

ITEMS = [Item(dataset="t", dataset_version="1", item_id=f"q{i}", video_id="v1", video_path=None,
              question=q, options=("red", "green", "blue", "yellow"), answer="B")
         for i, q in enumerate(["Which colour comes first?", "Which colour is last?"])]


@pytest.fixture(scope="module")
def server(tiny_qwen25: Path):
    """`vllm`'s OpenAI server, configured to keep every frame and to take per-request video metadata."""
    with vllm_server(tiny_qwen25, Path(os.environ["FRAMESWEEP_CACHE"])) as url:
        yield url


def _jpeg_frames(n: int) -> tuple[np.ndarray, list[bytes]]:
    """Frames as the cached pipeline has them: JPEG bytes and their decoded pixels."""
    rng = np.random.default_rng(7)
    raw = rng.integers(0, 255, (n, 84, 112, 3), dtype=np.uint8)
    blobs = []
    for f in raw:
        buf = io.BytesIO()
        Image.fromarray(f).save(buf, format="JPEG", quality=90)
        blobs.append(buf.getvalue())
    decoded = np.stack([np.asarray(Image.open(io.BytesIO(b)).convert("RGB")) for b in blobs])
    return decoded, blobs


def _requests() -> list:
    fam = get_family("qwen2_5_vl")
    out = []
    for n in (0, 4, 8):
        media = None
        if n:
            frames, blobs = _jpeg_frames(n)
            idx = np.linspace(0, 79, n).round().astype(np.int64)
            media = MediaView(frames, idx, 10.0, 80, f"v1:f{n}", "pyav", jpeg_frames=blobs)
        for item in ITEMS:
            out.append(fam.build(f"{item.item_id}/{n}", item, media, "letter", None, 1))
    return out


def test_http_and_engine_paths_agree(server: str, tiny_qwen25: Path, warm_engine: Path, tmp_path: Path) -> None:
    """The same requests through the server and through framesweep's own engine actor (the suite's warm engine of
    the small spec: the same checkpoint, max_model_len and dtype as the server)."""
    import ray
    from helpers.specs import small_spec_dict

    from engine.config import parse_spec
    from engine.sweep import start_backends

    spec = parse_spec(small_spec_dict(tmp_path / "out"))
    assert (spec.models[0].engine.max_model_len, spec.models[0].engine.dtype) == (4096, "float32")  # as the server

    async def both():
        http = OpenAIHTTPBackend(HTTPSpec(base_url=server), str(tiny_qwen25))
        await http.start()
        actor = (await start_backends(spec))["tiny"]
        assert isinstance(actor, VLLMActorBackend)
        try:
            return await http.generate(_requests()), await actor.generate(_requests())
        finally:
            await http.close()
            await actor.close()

    try:
        via_http, via_engine = asyncio.run(both())
    finally:
        ray.shutdown()
    assert len(via_http) == len(via_engine) == 6
    for h, e in zip(via_http, via_engine):
        assert h.ok and e.ok, (h.error, e.error)
        assert h.prompt_tokens == e.prompt_tokens, h.request_id
        assert set(h.letter_logprobs) == set(e.letter_logprobs) == {"A", "B", "C", "D"}
        for letter in "ABCD":
            assert math.isclose(h.letter_logprobs[letter], e.letter_logprobs[letter], abs_tol=2e-4), h.request_id
    tokens = [h.prompt_tokens for h in via_http]
    assert tokens[0] < tokens[2] < tokens[4] and tokens[1] < tokens[3] < tokens[5]  # more frames, more tokens


def test_frames_are_encoded_once_per_video_index_and_size(server: str, tiny_qwen25: Path) -> None:
    fam = get_family("qwen2_5_vl")
    frames = np.random.default_rng(1).integers(0, 255, (8, 64, 96, 3), dtype=np.uint8)
    idx = np.arange(0, 80, 10)
    reqs = []
    for n, sel in ((4, slice(0, 8, 2)), (8, slice(None))):  # the 4-frame budget is a subset of the 8
        media = MediaView(frames[sel], idx[sel], 10.0, 80, f"v9:f{n}", "pyav")
        reqs += [fam.build(f"{it.item_id}/{n}", it, media, "letter", None, 1) for it in ITEMS]

    async def go():
        be = OpenAIHTTPBackend(HTTPSpec(base_url=server), str(tiny_qwen25))
        await be.start()
        try:
            return await be.generate(reqs), be.encoder.encoded
        finally:
            await be.close()

    res, encoded = asyncio.run(go())
    assert all(r.ok for r in res)
    assert encoded == 8  # 2 budgets x 2 questions, 4 + 8 frames requested, 8 distinct frames


def test_a_real_server_answers_within_the_request_deadline(server: str, tiny_qwen25: Path) -> None:
    """Against vLLM's own server: its /version is read (JSON), and letter requests sent under a total deadline
    per request (`request_timeout_s`) come back whole, every option letter with a logprob, so the letters are
    renormalised over all four (`letters_returned` 4)."""
    from engine.scoring import score_letters

    async def go():  # type: ignore[no-untyped-def]
        be = OpenAIHTTPBackend(HTTPSpec(base_url=server, request_timeout_s=300), str(tiny_qwen25))
        info = await be.start()
        try:
            return info, await be.generate(_requests()[:2])
        finally:
            await be.close()

    info, res = asyncio.run(go())
    assert info["engine_version"].startswith("openai-http (vllm ") and "unknown" not in info["engine_version"]
    for r in res:
        assert r.ok, r.error
        s = score_letters(list("ABCD"), r.letter_logprobs)
        assert s.returned == 4 and math.isclose(sum(p for p in s.probs if p is not None), 1.0, rel_tol=1e-6)


def test_a_sweep_encodes_each_frame_once_per_video_whatever_the_budget(server: str, tiny_qwen25: Path,
                                                                      tmp_path: Path) -> None:
    """A whole sweep through the HTTP backend: budgets 4, 8 and 16 of a video and 3 questions ask for 84 frames
    per video, fewer of them distinct (one size); each distinct (video, frame, size) is JPEG-encoded once. Before,
    a budget's media name carried a digest of its own frames, so each budget encoded its frames again (28 per
    video)."""
    import polars as pl
    from helpers.specs import small_spec_dict

    from engine.config import parse_spec
    from engine.results import own_rows
    from engine.sweep.scheduler import Sweep

    d = small_spec_dict(tmp_path / "out")
    d["budgets"] = [{"frames": 4}, {"frames": 8}, {"frames": 16}]
    be = OpenAIHTTPBackend(HTTPSpec(base_url=server), str(tiny_qwen25))

    async def go():  # type: ignore[no-untyped-def]
        await be.start()  # a backend handed to the sweep is started and closed by its owner
        try:
            return await Sweep(parse_spec(d), backends={"tiny": be}).run()
        finally:
            await be.close()

    summary = asyncio.run(go())
    assert summary.jobs_ok == 3 * 3 * 3, summary
    rows = own_rows(tmp_path / "out")[0].collect()
    sent = rows.explode("frame_indices").select("video_id", "frame_indices", "width", "height")
    distinct = sent.unique().height
    assert rows["frames_sent"].sum() == 3 * 3 * (4 + 8 + 16) and distinct < 3 * (4 + 8 + 16)
    assert be.encoder.encoded == distinct, (be.encoder.encoded, distinct)
    assert sent.filter(pl.col("frame_indices").is_null()).height == 0


def test_a_real_server_holds_a_generated_answer_to_its_choices(server: str, tiny_qwen25: Path) -> None:
    """`structured_outputs.choice` in the request: the tiny random model answers one of the predictor's
    options, whole (without it, its free text would be anything)."""
    from engine.adaptive.predictor import _question

    fam = get_family("qwen2_5_vl")
    reqs = [fam.build(f"p{i}", _question(item, [2, 4, 8]), None, "generate", None, 16)
            for i, item in enumerate(ITEMS)]
    assert reqs[0].choices == ["2 frames", "4 frames", "8 frames"]

    async def go():
        be = OpenAIHTTPBackend(HTTPSpec(base_url=server), str(tiny_qwen25))
        await be.start()
        try:
            return await be.generate(reqs)
        finally:
            await be.close()

    for r in asyncio.run(go()):
        assert r.ok and r.text in ("2 frames", "4 frames", "8 frames"), (r.error, r.text)
