"""What a server may send back: absurd log-probabilities, JSON of the wrong shape, 429 with Retry-After, huge replies.

The server is a scripted loopback stand-in (`ReplyServer`), used only because a real vLLM server sends none of
these on demand: each chat request gets the next reply of its question's script. Everything else (the HTTP backend,
the sweep, the store) is the real thing.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import threading
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from engine.backends.base import EngineRequest
from engine.backends.openai_http import OpenAIHTTPBackend, retry_after_s
from engine.backends.openai_reply import MalformedReply, read_reply
from engine.config import HTTPSpec, parse_spec
from engine.results import ResultsDir
from engine.scoring import AbsurdLogprob
from engine.sweep import Sweep

Reply = tuple[int, dict[str, str], bytes]


def _completion(top: dict[str, Any], text: str = "A") -> bytes:
    entries = [{"token": x, "logprob": lp} for x, lp in top.items()]
    return json.dumps({"choices": [{"message": {"content": text}, "logprobs": {"content": [
        {"token": text, "logprob": -0.5, "top_logprobs": entries}]}}],
        "usage": {"prompt_tokens": 42, "completion_tokens": 1}}).encode()


GOOD = (200, {}, _completion({"A": -0.2, "B": -2.0, "C": -3.0, "D": -4.0}))


class ReplyServer:
    """Answers /version and /tokenize like vLLM; a chat request gets `script(kind, hit)` (kind: the synthetic
    question it asks, hit: how many requests of that kind came before)."""

    def __init__(self, script: Callable[[str, int], Reply]) -> None:
        self.hits: Counter[str] = Counter()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, code: int, headers: dict[str, str], body: bytes) -> None:
                self.send_response(code)
                for k, v in {"content-type": "application/json", "content-length": str(len(body)), **headers}.items():
                    if v:
                        self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client stopped reading: expected here
                    pass

            def do_GET(self) -> None:
                self._send(200, {}, b'{"version": "fake"}')

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                if self.path == "/tokenize":
                    return self._send(200, {}, json.dumps({"tokens": [ord(body["prompt"])]}).encode())
                text = json.dumps(body["messages"])
                kind = next((k for k in ("flash", "shape", "colour") if k in text), "other")
                hit = outer.hits[kind]
                outer.hits[kind] += 1
                self._send(*script(kind, hit))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()


@pytest.fixture()
def serve():
    servers: list[ReplyServer] = []

    def start(script: Callable[[str, int], Reply]) -> ReplyServer:
        servers.append(ReplyServer(script))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


# --- one absurd reply in a batch --------------------------------------------------------------------------------


def test_a_batch_with_one_absurd_reply_commits_every_other_row(serve: Callable[..., ReplyServer],
                                                               tmp_path: Path) -> None:
    """flash_count's reply gives B a log-probability of 800 and no A: the scorer raised OverflowError and the run
    ended with 0 rows. Now that row is an AbsurdLogprob error naming the letter and value; a reply whose logprobs
    are a string is a MalformedReply; the other questions of the same videos are committed ok."""
    def script(kind: str, hit: int) -> Reply:
        if kind == "flash":
            return 200, {}, _completion({"B": 800.0, "C": -1.0}, "B")
        if kind == "shape":
            return 200, {}, json.dumps({"choices": [{"message": {"content": "A"}, "logprobs": "lots"}]}).encode()
        return GOOD

    server = serve(script)
    spec = parse_spec({
        "sweep_id": "absurd",
        "models": [{"id": "remote", "family": "qwen2_5_vl", "path": "tiny", "backend": "openai",
                    "http": {"base_url": server.url, "max_retries": 0}}],
        "dataset": {"name": "synthetic", "n_videos": 2, "seconds": 2.0, "fps": 8, "width": 64, "height": 48},
        "budgets": [{"frames": 0}, {"frames": 2}],
        "store": {"out_dir": str(tmp_path / "out"), "commit_interval_s": 0.2},
    })
    summary = asyncio.run(Sweep(spec).run())
    assert (summary.jobs_ok, summary.jobs_failed) == (4, 8)
    rows = ResultsDir.open(tmp_path / "out").scan().collect()
    assert rows.height == 12
    by_task = {t: g for (t,), g in rows.group_by("task_type")}
    assert by_task["first_colour"]["status"].to_list() == ["ok"] * 4
    absurd = by_task["flash_count"]
    assert set(absurd["error_type"]) == {"AbsurdLogprob"} and absurd["pred"].is_null().all()
    assert absurd["error"].str.contains("option letter 'B': log-probability 800.0", literal=True).all()
    assert set(by_task["static_shape"]["error_type"]) == {"MalformedReply"}
    assert by_task["static_shape"]["error"].str.contains("choices[0].logprobs is a JSON str", literal=True).all()


# --- JSON of any shape ----------------------------------------------------------------------------------------


def _letter_request() -> EngineRequest:
    return EngineRequest("r0", "Q?", letters=list("ABCD"), messages=[{"role": "user", "content": "Q?"}])


def _ok(**over: Any) -> dict[str, Any]:
    doc = json.loads(GOOD[2])
    doc.update(over)
    return doc


def _choice(**over: Any) -> dict[str, Any]:
    choice = json.loads(GOOD[2])["choices"][0]
    choice.update(over)
    return {"choices": [choice], "usage": {}}


def _token(**over: Any) -> dict[str, Any]:
    entry = {"token": "A", "logprob": -0.1, "top_logprobs": [{"token": "A", "logprob": -0.1}]}
    entry.update(over)
    return _choice(logprobs={"content": [entry]})


@pytest.mark.parametrize(("data", "error", "says"), [
    ([1, 2], MalformedReply, "the reply is a JSON list"),
    ({"choices": "none"}, MalformedReply, "choices is a JSON str"),
    ({"choices": []}, MalformedReply, "choices is empty"),
    ({"choices": [3]}, MalformedReply, "choices[0] is a JSON int"),
    (_choice(message="A"), MalformedReply, "choices[0].message is a JSON str"),
    (_choice(message={"content": 5}), MalformedReply, "choices[0].message.content is a JSON int"),
    (_choice(logprobs=["A"]), MalformedReply, "choices[0].logprobs is a JSON list"),
    (_choice(logprobs={"content": {"token": "A"}}), MalformedReply, "choices[0].logprobs.content is a JSON dict"),
    (_choice(logprobs={"content": ["A"]}), MalformedReply, "logprobs.content[0] is a JSON str"),
    (_token(token=7), MalformedReply, "logprobs.content[0].token is a JSON int"),
    (_token(top_logprobs="A"), MalformedReply, "logprobs.content[0].top_logprobs is a JSON str"),
    (_token(top_logprobs=[{"token": ["A"], "logprob": -1}]), MalformedReply, "top_logprobs[0].token is a JSON list"),
    (_token(top_logprobs=[{"token": "A", "logprob": "-0.5"}]), AbsurdLogprob, "option letter 'A': log-probability "
                                                                              "'-0.5' is not a number"),
    (_token(top_logprobs=[{"token": "A", "logprob": 1e308}]), AbsurdLogprob, "option letter 'A'"),
    (_token(top_logprobs=[{"token": "A", "logprob": float("nan")}]), AbsurdLogprob, "option letter 'A'"),
    (_token(logprob=float("inf")), AbsurdLogprob, "generated token 0 ('A')"),
    (_ok(usage="many"), MalformedReply, "usage is a JSON str"),
    (_ok(usage={"prompt_tokens": "42"}), MalformedReply, "usage.prompt_tokens is '42', not a token count"),
    (_ok(usage={"completion_tokens": 2**40}), MalformedReply, "usage.completion_tokens"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_a_reply_of_the_wrong_shape_is_named_field_by_field(data: Any, error: type, says: str) -> None:
    """Before, a string for `logprobs` or a list for the message became a generic error at best, and a count that is
    a string or a NaN log-probability reached the row (the commit, or the score, of the whole batch failed)."""
    with pytest.raises(error) as got:
        read_reply(_letter_request(), data, engine_s=0.0, worker="w", engine_version=None)
    assert says in str(got.value)


def test_a_well_formed_reply_reads_as_before() -> None:
    res = read_reply(_letter_request(), json.loads(GOOD[2]), engine_s=0.0, worker="w", engine_version=None)
    assert res.letter_logprobs == {"A": -0.2, "B": -2.0, "C": -3.0, "D": -4.0}
    assert (res.text, res.prompt_tokens, res.output_tokens, res.mean_logprob) == ("A", 42, 1, -0.5)


# --- 429 and Retry-After -----------------------------------------------------------------------------------------


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_s("120") == 120.0 and retry_after_s(" 1.5 ") == 1.5 and retry_after_s("-3") == 0.0
    assert retry_after_s("Sun, 01 Jun 2025 12:00:30 GMT", now) == 30.0
    assert retry_after_s("Sun, 01 Jun 2025 11:00:00 GMT", now) == 0.0  # past: at once
    for bad in (None, "", "soon", "nan", "inf"):
        assert retry_after_s(bad, now) is None


def _ask(url: str, **http: Any) -> Any:
    async def go() -> Any:
        backend = OpenAIHTTPBackend(HTTPSpec(base_url=url, **{"backoff_s": 0.01, **http}), "m")
        await backend.start()
        try:
            (res,) = await backend.generate([_letter_request()])
            return res
        finally:
            await backend.close()

    return asyncio.run(go())


def _waits(caplog: pytest.LogCaptureFixture) -> list[float]:
    return [float(r.getMessage().rsplit(" in ", 1)[1].rstrip("s")) for r in caplog.records if "; retry " in
            r.getMessage()]


@pytest.mark.parametrize("after", ["1", "date"])
def test_a_429_is_retried_after_its_retry_after(serve: Callable[..., ReplyServer], after: str,
                                                caplog: pytest.LogCaptureFixture) -> None:
    """A 429 failed its request at once (a 4xx); now it is retried after the wait it asks for (seconds or an
    HTTP-date), not the backoff (0.01 s)."""
    def script(kind: str, hit: int) -> Reply:
        when = "1" if after == "1" else format_datetime(datetime.now(UTC) + timedelta(seconds=2), usegmt=True)
        return (429, {"retry-after": when}, b'{"error": "slow down"}') if hit == 0 else GOOD

    server = serve(script)
    with caplog.at_level(logging.INFO, logger="engine.backends.openai_http"):
        res = _ask(server.url, max_retries=2)
    assert res.ok and res.letter_logprobs["A"] == -0.2
    assert server.hits["other"] == 2
    (wait,) = _waits(caplog)
    assert wait == 1.0 if after == "1" else 0.5 < wait <= 2.0


def test_a_retry_after_past_the_cap_fails_at_once(serve: Callable[..., ReplyServer]) -> None:
    server = serve(lambda kind, hit: (429, {"retry-after": "3600"}, b'{"error": "quota"}'))
    res = _ask(server.url, max_retries=3, retry_after_max_s=5)
    assert server.hits["other"] == 1  # no retry that would only meet the same limit
    assert res.error_type == "HTTPStatusError" and "rate limited 429" in res.error
    assert "retry after 3600 s, more than [models.http] retry_after_max_s = 5 s" in res.error


def test_429s_without_retry_after_back_off_within_max_retries(serve: Callable[..., ReplyServer],
                                                              caplog: pytest.LogCaptureFixture) -> None:
    server = serve(lambda kind, hit: (429, {}, b'{"error": "slow down"}'))
    with caplog.at_level(logging.INFO, logger="engine.backends.openai_http"):
        res = _ask(server.url, max_retries=2)
    assert server.hits["other"] == 3 and res.error_type == "HTTPStatusError" and "429" in res.error
    assert _waits(caplog) == [0.01, 0.02]


# --- a cap on the bytes of a reply --------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["declared", "streamed", "gzip"])
def test_a_reply_past_max_reply_bytes_is_not_read_and_fails_its_request(serve: Callable[..., ReplyServer],
                                                                        how: str) -> None:
    """A 6 MB reply against a cap of 1 MB: refused from its content-length, stopped while streaming one without it,
    or (gzip: 6 MB once decompressed, a few KB on the wire) stopped while decompressing. Before, every reply was
    read whole (60 MB replies: 800 MB resident)."""
    big = _completion({"A": -0.2}, "A" * 3_000_000)  # the text twice: the message and the token

    def script(kind: str, hit: int) -> Reply:
        if how == "declared":
            return 200, {}, big
        if how == "streamed":
            return 200, {"content-length": ""}, big  # no length: read until the server closes
        return 200, {"content-encoding": "gzip"}, gzip.compress(big)

    server = serve(script)
    res = _ask(server.url, max_retries=2, max_reply_bytes=2**20)
    assert server.hits["other"] == 1  # never retried: it would come again
    assert res.error_type == "ReplyTooLarge", res.error
    assert "larger than 1048576 bytes ([models.http] max_reply_bytes)" in res.error
    assert _ask(server.url).ok  # under the default cap (16 MiB): read and scored
