"""The HTTP backend: any OpenAI-compatible chat server (e.g. `vllm serve`), with httpx.

Frames travel as one `video_url` data URL of comma-separated base64 JPEG frames
(what vLLM's server accepts); each frame is encoded once per (video, index, size)
and reused across budgets and questions. MCQ letters are scored like the
in-process engine: the first token is constrained with `allowed_token_ids` and
the letters' logprobs are read from `top_logprobs` (start vLLM's server with
`--logprobs-mode processed_logprobs` to get the renormalised distribution).

Bounded concurrency; retries with exponential backoff on 5xx, connection errors
and timeouts; then the request becomes an error result (an error row). httpx's
`timeout_s` bounds each read, so a server that trickles bytes would never time
out: every request also has a deadline for the whole of it (`request_timeout_s`),
past which it counts as timed out (`TimeoutError`). The API key is read from an
environment variable and never logged or returned; a server's text is redacted
before it is cut short (a key across the cut would leave its prefix).
"""

from __future__ import annotations

import asyncio
import base64
import io
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np
from PIL import Image

from engine.backends.base import IMAGE_URL_SLOT, VIDEO_URL_SLOT, BackendBase, EngineRequest, EngineResult
from engine.config import HTTPSpec, SpecError
from engine.runtime.secrets import redact, register_secret
from engine.scoring import letter_logprobs

__all__ = ["FrameEncoder", "MalformedReply", "OpenAIHTTPBackend"]

log = logging.getLogger(__name__)

_RETRYABLE = (httpx.TimeoutException, httpx.TransportError, TimeoutError)


class MalformedReply(ValueError):
    """A 200 reply that cannot be scored (missing fields, no logprobs where letter scoring needs them)."""

    def __init__(self, message: str, kind: str = "MalformedReply") -> None:
        super().__init__(message)
        self.kind = kind


class FrameEncoder:
    """JPEG-encodes a frame once per (video, frame index, size) for as long as its video is in use.

    Encodings are kept per video (`EngineRequest.video_key`, the name every budget of one video shares),
    so each budget and question of a video reuses what another already encoded; when the bytes held pass
    `max_bytes`, the videos used least recently go first, whole (never the one being encoded for). A
    request that does not say which frame indices it sends (a family without video metadata) has its
    frames named by position within its own media item (`media_uuid`), so they are never mistaken for
    another budget's frames at the same positions.
    """

    def __init__(self, quality: int = 85, max_bytes: int = 256 * 1024 * 1024) -> None:
        self.quality = quality
        self.max_bytes = max_bytes
        self._videos: OrderedDict[str, dict[tuple[Any, ...], str]] = OrderedDict()
        self._bytes = 0
        self.encoded = 0
        """JPEG encodes done (a frame taken from the cache is not one)."""

    def b64(self, video: str, key: tuple[Any, ...], frame: np.ndarray) -> str:
        """The base64 JPEG of `frame`, known within `video` as `key` (encoded on first use)."""
        held = self._videos.get(video)
        if held is None:
            held = self._videos[video] = {}
        self._videos.move_to_end(video)
        hit = held.get(key)
        if hit is not None:
            return hit
        buf = io.BytesIO()
        Image.fromarray(np.asarray(frame)).save(buf, format="JPEG", quality=self.quality)
        out = base64.b64encode(buf.getvalue()).decode("ascii")
        self.encoded += 1
        held[key] = out
        self._bytes += len(out)
        while self._bytes > self.max_bytes and len(self._videos) > 1:
            _, gone = self._videos.popitem(last=False)  # the least recently used video, never `video`
            self._bytes -= sum(len(b) for b in gone.values())
        return out

    def image_url(self, r: EngineRequest, i: int) -> str:
        assert r.images is not None
        name = r.image_uuids[i] if r.image_uuids else f"{r.request_id}:{i}"  # a frame's uuid names its index and size
        return "data:image/jpeg;base64," + self.b64(r.video_key or name, (name, r.images[i].shape), r.images[i])

    def data_url(self, r: EngineRequest) -> str:
        if r.jpeg_frames is not None:
            parts = [base64.b64encode(b).decode("ascii") for b in r.jpeg_frames]
        else:
            assert r.video is not None
            indices = (r.video_meta or {}).get("frames_indices")
            shape = tuple(r.video.shape[1:3])
            if indices is not None and r.video_key:
                parts = [self.b64(r.video_key, (int(i), shape), f) for i, f in zip(indices, r.video)]
            else:  # positions name frames only within this media item
                name = r.media_uuid or r.request_id
                parts = [self.b64(name, (k, shape), f) for k, f in enumerate(r.video)]
        return "data:video/jpeg;base64," + ",".join(parts)


class OpenAIHTTPBackend(BackendBase):
    """`Backend` over an OpenAI-compatible `/v1/chat/completions` endpoint."""

    name = "openai"

    def __init__(self, http: HTTPSpec, model: str, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.http = http
        self.model = http.served_model or model
        self.encoder = FrameEncoder(http.jpeg_quality)
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._sem = asyncio.Semaphore(http.concurrency)
        self._letter_ids: dict[str, int] = {}
        self.info: dict[str, Any] = {}

    def _headers(self) -> dict[str, str]:
        if self.http.api_key_env:
            key = os.environ.get(self.http.api_key_env)
            if not key:
                raise RuntimeError(f"environment variable {self.http.api_key_env} (the API key) is not set")
            register_secret(key)  # never stored or printed, even where a server echoes it back
            return {"Authorization": f"Bearer {key}"}
        return {}

    async def start(self) -> dict[str, Any]:
        self._client = httpx.AsyncClient(base_url=self.http.base_url.rstrip("/"), headers=self._headers(),
                                         timeout=self.http.timeout_s, transport=self._transport)
        try:
            async with asyncio.timeout(self.http.request_timeout_s):
                resp: httpx.Response | None = await self._client.get("/version")
        except (httpx.HTTPError, TimeoutError):
            resp = None  # the chat requests will say what is wrong, each on its row
        self.info = {"engine_version": f"openai-http ({self._version(resp)})", "worker": self.http.base_url}
        return self.info

    def _version(self, resp: httpx.Response | None) -> str:
        """The server's version from its `/version` reply; a 200 that is not JSON is no OpenAI-compatible server."""
        if resp is None or resp.status_code != 200:
            return "unknown"
        try:
            doc = resp.json()
        except ValueError:
            url = self.http.base_url.rstrip("/") + "/version"
            raise SpecError(f"[models.http] base_url: {url} answered 200 with a body that is not JSON "
                            f"({redact(resp.text)[:80]!r}); is {self.http.base_url} an OpenAI-compatible server "
                            "(e.g. vllm serve)?") from None
        return f"vllm {doc.get('version', '?')}" if isinstance(doc, dict) else "unknown"

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _letter_token_id(self, letter: str) -> int:
        if letter not in self._letter_ids:
            body = {"model": self.model, "prompt": letter, "add_special_tokens": False}
            data = await self._post("/tokenize", body)
            tokens = data.get("tokens") or []
            if len(tokens) != 1:
                raise ValueError(f"option letter {letter!r} is not a single token on the server ({tokens})")
            self._letter_ids[letter] = int(tokens[0])
        return self._letter_ids[letter]

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST with retries on 5xx / connection errors / timeouts; 4xx fails at once."""
        assert self._client is not None, "backend not started"
        delay = self.http.backoff_s
        for attempt in range(self.http.max_retries + 1):
            try:
                resp = await self._send(path, body)
                if resp.status_code < 500:
                    resp.raise_for_status()
                    return resp.json()
                err: Exception = httpx.HTTPStatusError(
                    f"server error {resp.status_code}: {redact(resp.text)[:300]}", request=resp.request, response=resp)
            except _RETRYABLE as e:
                err = e
            except httpx.HTTPStatusError as e:
                raise httpx.HTTPStatusError(f"{e.response.status_code}: {redact(e.response.text)[:500]}",
                                            request=e.request, response=e.response) from None
            if attempt == self.http.max_retries:
                raise err
            log.info("%s %s failed (%s); retry %d in %.2fs", path, self.model, type(err).__name__, attempt + 1, delay)
            await asyncio.sleep(delay)
            delay *= 2
        raise AssertionError("unreachable")

    async def _send(self, path: str, body: dict[str, Any]) -> httpx.Response:
        """One POST, its reply read to the last byte within `request_timeout_s` (else TimeoutError)."""
        assert self._client is not None, "backend not started"
        deadline = self.http.request_timeout_s
        try:
            async with asyncio.timeout(deadline):
                return await self._client.post(path, json=body)
        except TimeoutError:
            raise TimeoutError(f"{path}: no complete reply within {deadline:g} s "
                               "([models.http] request_timeout_s)") from None

    async def _body(self, r: EngineRequest) -> dict[str, Any]:
        messages = self._messages(r)
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": 0.0, "logprobs": True,
                                **(r.chat_extra or {})}
        if r.mode == "letter":
            body.update(max_tokens=1, top_logprobs=len(r.letters),
                        allowed_token_ids=[await self._letter_token_id(x) for x in r.letters])
        else:
            body.update(max_tokens=r.max_tokens, top_logprobs=20)
            if r.choices:  # vLLM's structured outputs; a server without them answers freely (the caller parses)
                body["structured_outputs"] = {"choice": list(r.choices)}
        if r.mm_processor_kwargs:
            body["mm_processor_kwargs"] = r.mm_processor_kwargs
        if r.video is not None and self.http.send_video_metadata and r.video_meta:
            meta = r.video_meta
            body["media_io_kwargs"] = {"video": {
                "fps": meta["fps"], "frames_indices": meta["frames_indices"],
                "total_num_frames": meta["total_num_frames"], "duration": meta["duration"],
            }}
        return body

    def _messages(self, r: EngineRequest) -> list[dict[str, Any]]:
        if r.messages is None:
            raise ValueError("this model family builds no chat messages; the HTTP backend needs them")
        if r.video is None and r.jpeg_frames is None and not r.images:
            return r.messages
        slots = {IMAGE_URL_SLOT.format(i): i for i in range(len(r.images or []))}
        video_url = self.encoder.data_url(r) if (r.video is not None or r.jpeg_frames is not None) else None

        def fill(part: dict[str, Any]) -> dict[str, Any]:
            if part.get("type") == "video_url" and part["video_url"]["url"] == VIDEO_URL_SLOT:
                return {"type": "video_url", "video_url": {"url": video_url}}
            if part.get("type") == "image_url" and part["image_url"]["url"] in slots:
                return {"type": "image_url", "image_url": {"url": self.encoder.image_url(r, slots[part["image_url"]["url"]])}}
            return part

        return [{**m, "content": [fill(p) for p in m["content"]] if isinstance(m["content"], list) else m["content"]}
                for m in r.messages]

    def _error(self, r: EngineRequest, error_type: str, message: str) -> EngineResult:
        return EngineResult(r.request_id, error_type=error_type, error=redact(message)[:2000],
                            worker=self.http.base_url, engine_version=self.info.get("engine_version"))

    async def _one(self, r: EngineRequest) -> EngineResult:
        """One request; whatever goes wrong (transport, status, a malformed reply) is this request's error
        result only, never an exception that would fail the other requests of a coalesced batch."""
        async with self._sem:
            t0 = time.perf_counter()
            try:
                data = await self._post("/v1/chat/completions", await self._body(r))
            except Exception as err:  # noqa: BLE001 - errors are data
                return self._error(r, type(err).__name__, str(err) or repr(err))
            try:
                return self._result(r, data, time.perf_counter() - t0)
            except MalformedReply as err:
                return self._error(r, err.kind, str(err))
            except (KeyError, IndexError, TypeError, ValueError, AttributeError) as err:
                reply = redact(str(data))[:300]  # redacted before it is cut
                return self._error(r, "MalformedReply",
                                   f"unreadable chat completion ({type(err).__name__}: {err}): {reply}")

    def _result(self, r: EngineRequest, data: dict[str, Any], engine_s: float) -> EngineResult:
        choice = data["choices"][0]
        logprobs = choice.get("logprobs")
        content = (logprobs or {}).get("content") or []
        if r.mode == "letter" and not content:
            raise MalformedReply(
                "the server answered without logprobs, so the option-letter distribution is unknown "
                "(letter scoring needs them; vLLM: start the server with --logprobs-mode processed_logprobs)",
                kind="NoLogprobs")
        letters = set(r.letters)
        first = {t["token"]: t["logprob"] for t in (content[0].get("top_logprobs") or [])} if content else {}
        letter_lp = {tok: float(lp) for tok, lp in first.items() if tok in letters and lp is not None
                     and np.isfinite(lp)}
        lps = [c["logprob"] for c in content if c.get("logprob") is not None]
        token_letters = [(c.get("token") or "", letter_logprobs(
            ((t.get("token") or "", t.get("logprob")) for t in [c, *(c.get("top_logprobs") or [])]), r.letters))
            for c in content] if r.mode == "generate" and r.letters else None
        usage = data.get("usage") or {}
        return EngineResult(
            request_id=r.request_id,
            text=choice["message"].get("content") or "",
            letter_logprobs=letter_lp,
            prompt_tokens=usage.get("prompt_tokens"),
            output_tokens=usage.get("completion_tokens"),
            mean_logprob=float(np.mean(lps)) if lps else None,
            token_letters=token_letters,
            engine_s=engine_s,
            worker=self.http.base_url,
            engine_version=self.info.get("engine_version"),
        )

    async def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        return list(await asyncio.gather(*(self._one(r) for r in requests)))
