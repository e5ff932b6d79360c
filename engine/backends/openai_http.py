"""The HTTP backend: any OpenAI-compatible chat server (e.g. `vllm serve`), with httpx.

Frames travel as one `video_url` data URL of comma-separated base64 JPEG frames
(what vLLM's server accepts); each frame is encoded once per (video, index, size)
and reused across budgets and questions. MCQ letters are scored like the
in-process engine: the first token is constrained with `allowed_token_ids` and
the letters' logprobs are read from `top_logprobs` (start vLLM's server with
`--logprobs-mode processed_logprobs` to get the renormalised distribution).

Bounded concurrency; retries with exponential backoff on 429, 5xx, connection
errors and timeouts (after the server's `Retry-After` where it sends one, up to
`retry_after_max_s`); then the request becomes an error result (an error row).
httpx's `timeout_s` bounds each read, so a server that trickles bytes would never
time out: every request also has a deadline for the whole of it (`request_timeout_s`),
past which it counts as timed out (`TimeoutError`), and a cap on the bytes of its
reply (`max_reply_bytes`, `ReplyTooLarge`). The reply is read field by field
(`engine.backends.openai_reply`). The API key is read from an
environment variable and never logged or returned; a server's text is redacted
before it is cut short (a key across the cut would leave its prefix).
"""

from __future__ import annotations

import asyncio
import base64
import io
import logging
import math
import os
import time
from collections import OrderedDict
from collections.abc import Sequence
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
import numpy as np
from PIL import Image

from engine.backends.base import IMAGE_URL_SLOT, VIDEO_URL_SLOT, BackendBase, EngineRequest, EngineResult
from engine.backends.openai_reply import MalformedReply, read_reply
from engine.config import HTTPSpec, SpecError
from engine.runtime.secrets import redact, register_secret
from engine.scoring import AbsurdLogprob

__all__ = ["FrameEncoder", "MalformedReply", "OpenAIHTTPBackend", "ReplyTooLarge", "retry_after_s"]

log = logging.getLogger(__name__)

_RETRYABLE = (httpx.TimeoutException, httpx.TransportError, TimeoutError)


class ReplyTooLarge(Exception):
    """A reply longer than `[models.http] max_reply_bytes` (read no further; never retried: it would come again)."""


def retry_after_s(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait that a `Retry-After` header asks for: a number of seconds or an HTTP-date (0 when that
    date is past); None when there is no header or it is neither."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # an HTTP-date is GMT; a zone-less one is read so
            when = when.replace(tzinfo=UTC)
        return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
    return max(0.0, seconds) if math.isfinite(seconds) else None


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
        frame = r.images[i]
        assert isinstance(frame, np.ndarray), "an HTTP server is sent pixels, never frame references"
        return "data:image/jpeg;base64," + self.b64(r.video_key or name, (name, frame.shape), frame)

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

    def __init__(self, http: HTTPSpec, model: str) -> None:
        self.http = http
        self.model = http.served_model or model
        self.encoder = FrameEncoder(http.jpeg_quality)
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
                                         timeout=self.http.timeout_s)
        try:
            resp: httpx.Response | None = await self._send("GET", "/version")
        except (httpx.HTTPError, TimeoutError, ReplyTooLarge):
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

    async def _post(self, path: str, body: dict[str, Any]) -> Any:
        """POST with retries on 429 / 5xx / connection errors / timeouts; any other 4xx (and a reply past
        `max_reply_bytes`) fails at once. A 429 or 5xx that says when to come back (`Retry-After`) is retried then,
        or fails at once when that is past `retry_after_max_s`; otherwise the wait is the doubling backoff."""
        assert self._client is not None, "backend not started"
        delay = self.http.backoff_s
        for attempt in range(self.http.max_retries + 1):
            try:
                resp = await self._send("POST", path, body)
                if resp.status_code < 500 and resp.status_code != 429:
                    resp.raise_for_status()
                    return resp.json()
                said = "rate limited" if resp.status_code == 429 else "server error"
                err: Exception = httpx.HTTPStatusError(
                    f"{said} {resp.status_code}: {redact(resp.text)[:300]}", request=resp.request, response=resp)
            except _RETRYABLE as e:
                err = e
            except httpx.HTTPStatusError as e:
                raise httpx.HTTPStatusError(f"{e.response.status_code}: {redact(e.response.text)[:500]}",
                                            request=e.request, response=e.response) from None
            if attempt == self.http.max_retries:
                raise err
            wait = self._retry_wait(err, delay) if isinstance(err, httpx.HTTPStatusError) else delay
            log.info("%s %s failed (%s); retry %d in %.2fs", path, self.model, type(err).__name__, attempt + 1, wait)
            await asyncio.sleep(wait)
            delay *= 2
        raise AssertionError("unreachable")

    def _retry_wait(self, err: httpx.HTTPStatusError, backoff: float) -> float:
        """How long to wait before retrying a 429 or 5xx: its `Retry-After` (seconds or an HTTP-date), else
        `backoff`; a `Retry-After` past `retry_after_max_s` raises `err` now, saying so (an earlier retry would
        only meet the same limit)."""
        after = retry_after_s(err.response.headers.get("retry-after"))
        if after is None:
            return backoff
        cap = self.http.retry_after_max_s
        if after > cap:
            raise httpx.HTTPStatusError(f"{err} (the server asks to retry after {after:g} s, more than "
                                        f"[models.http] retry_after_max_s = {cap:g} s)",
                                        request=err.request, response=err.response) from None
        return after

    async def _send(self, method: str, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        """One request, its reply read to the last byte within `request_timeout_s` (else TimeoutError) and up to
        `max_reply_bytes` (else `ReplyTooLarge`, read no further)."""
        assert self._client is not None, "backend not started"
        deadline = self.http.request_timeout_s
        try:
            async with asyncio.timeout(deadline), self._client.stream(method, path, json=body) as resp:
                return await self._read_capped(resp, path)
        except TimeoutError:
            raise TimeoutError(f"{path}: no complete reply within {deadline:g} s "
                               "([models.http] request_timeout_s)") from None

    async def _read_capped(self, resp: httpx.Response, path: str) -> httpx.Response:
        """`resp` with its body read, at most `max_reply_bytes` of it (after any content decoding, so a
        compressed reply is held to the same cap); `ReplyTooLarge` past it, without reading the rest."""
        cap = self.http.max_reply_bytes
        too_large = ReplyTooLarge(f"{path}: the reply is larger than {cap} bytes ([models.http] max_reply_bytes); "
                                  "not read further")
        declared = resp.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap and not resp.headers.get("content-encoding"):
            raise too_large
        chunks, size = [], 0
        async for chunk in resp.aiter_bytes():
            size += len(chunk)
            if size > cap:
                raise too_large
            chunks.append(chunk)
        headers = [(k, v) for k, v in resp.headers.multi_items()
                   if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
        return httpx.Response(resp.status_code, headers=headers, content=b"".join(chunks), request=resp.request)

    async def _body(self, r: EngineRequest) -> dict[str, Any]:
        messages = self._messages(r)
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": 0.0, "logprobs": True,
                                **(r.chat_extra or {})}
        if r.mode == "letter":
            body.update(max_tokens=1, top_logprobs=len(r.letters),
                        allowed_token_ids=[await self._letter_token_id(x) for x in r.letters])
        else:
            body.update(max_tokens=r.max_tokens, top_logprobs=20, temperature=r.temperature)
            if r.stop:
                body["stop"] = list(r.stop)
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
            except AbsurdLogprob as err:
                return self._error(r, "AbsurdLogprob", f"the server's reply cannot be scored: {err}")
            except MalformedReply as err:  # the reply itself is shown when its shape is wrong (redacted, then cut)
                said = f"{err}: {redact(str(data))[:300]}" if err.kind == "MalformedReply" else str(err)
                return self._error(r, err.kind, said)
            except (KeyError, IndexError, TypeError, ValueError, AttributeError) as err:
                reply = redact(str(data))[:300]  # redacted before it is cut
                return self._error(r, "MalformedReply",
                                   f"unreadable chat completion ({type(err).__name__}: {err}): {reply}")

    def _result(self, r: EngineRequest, data: Any, engine_s: float) -> EngineResult:
        return read_reply(r, data, engine_s=engine_s, worker=self.http.base_url,
                          engine_version=self.info.get("engine_version"))

    async def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        return list(await asyncio.gather(*(self._one(r) for r in requests)))
