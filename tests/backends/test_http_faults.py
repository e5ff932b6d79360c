"""Server faults become retries, then error rows; the sweep finishes and a rerun retries only those.

The server here is a small loopback stand-in, used only because a real vLLM server
cannot be made to fail on demand: it answers like vLLM's chat endpoint, but
returns 500 for one question kind and hangs past the client timeout for another.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote

import polars as pl
import pytest

from engine.config import parse_spec
from engine.results import ResultsDir
from engine.results.store import latest_rows
from engine.sweep import Sweep


class FaultyServer:
    def __init__(self, mode: str = "faults") -> None:
        self.mode = mode
        self.broken = True
        self.hits: Counter[str] = Counter()
        self.auth: set[str] = set()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, code: int, doc: dict) -> None:
                body = json.dumps(doc).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except BrokenPipeError:  # the client gave up (timeout): expected here
                    pass

            def do_GET(self) -> None:
                self._send(200, {"version": "fake"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.auth.add(self.headers.get("authorization", ""))
                if self.path == "/tokenize":
                    return self._send(200, {"tokens": [ord(body["prompt"])]})
                text = json.dumps(body["messages"])
                kind = "flash" if "flash" in text else "shape" if "shape" in text else "colour"
                outer.hits[kind] += 1
                if outer.mode == "malformed" and kind == "flash":  # 200 without the logprobs it was asked for
                    return self._send(200, {"choices": [{"message": {"content": "B"}}],
                                            "usage": {"prompt_tokens": 42, "completion_tokens": 1}})
                if outer.mode == "malformed" and kind == "shape":  # 200 with no choice, echoing the request's key
                    return self._send(200, {"choices": [], "detail": self.headers.get("authorization", "")})
                if outer.broken and kind == "flash":
                    return self._send(500, {"error": "internal"})
                if outer.broken and kind == "shape":
                    time.sleep(3.0)  # longer than the client's timeout
                top = [{"token": x, "logprob": -1.0 - 0.1 * i} for i, x in enumerate("ABCD")]
                self._send(200, {
                    "choices": [{"message": {"content": "A"},
                                 "logprobs": {"content": [{"token": "A", "logprob": -1.0, "top_logprobs": top}]}}],
                    "usage": {"prompt_tokens": 42, "completion_tokens": 1},
                })

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture()
def server():
    s = FaultyServer()
    yield s
    s.httpd.shutdown()


@pytest.fixture()
def malformed_server():
    s = FaultyServer("malformed")
    yield s
    s.httpd.shutdown()


def test_retries_then_error_rows_then_rerun_retries_only_failures(server: FaultyServer, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FS_TEST_KEY", "sekret-123-0a1b2c3d4e")
    out = tmp_path / "out"
    spec = parse_spec({
        "sweep_id": "faults",
        "models": [{"id": "remote", "family": "qwen2_5_vl", "path": "tiny", "backend": "openai",
                    "http": {"base_url": server.url, "timeout_s": 1.0, "max_retries": 2, "backoff_s": 0.01,
                             "api_key_env": "FS_TEST_KEY"}}],
        "dataset": {"name": "synthetic", "n_videos": 2, "seconds": 2.0, "fps": 8, "width": 64, "height": 48},
        "budgets": [{"frames": 0}, {"frames": 2}],
        "store": {"out_dir": str(out), "commit_interval_s": 0.2},
    })
    summary = asyncio.run(Sweep(spec).run())
    assert (summary.jobs_ok, summary.jobs_failed) == (4, 8)
    # 1 try + 2 retries for each failing request: 2 videos x 2 budgets (a timed-out request may still
    # sit in the server's accept queue when the sweep ends: give the server a moment to count it). The
    # client's timeout (also its connect timeout) is 1 s: at 0.5 s a loaded machine sometimes failed a
    # connect, so the server never saw that try (11 of 12)
    deadline = time.monotonic() + 5
    while server.hits["shape"] < 12 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.hits["flash"] == 4 * 3 and server.hits["shape"] == 4 * 3 and server.hits["colour"] == 4
    rows = ResultsDir.open(out).scan().collect()
    errors = rows.filter(pl.col("status") == "error")
    assert set(errors["error_type"]) == {"HTTPStatusError", "ReadTimeout"}
    assert errors.filter(pl.col("error_type") == "HTTPStatusError")["error"].str.contains("500").all()
    assert errors["task_type"].is_in(["flash_count", "static_shape"]).all()
    assert server.auth == {"Bearer sekret-123-0a1b2c3d4e"}
    assert not rows.select(pl.any_horizontal(pl.col(pl.String).str.contains("sekret", literal=True))
                           ).to_series().any(), "the API key leaked into results"

    server.broken = False
    server.hits.clear()
    again = asyncio.run(Sweep(spec).run())
    assert (again.jobs_skipped, again.jobs_ok, again.jobs_failed) == (4, 8, 0)
    assert server.hits == Counter({"flash": 4, "shape": 4})  # only the failed keys were asked again
    final = latest_rows(ResultsDir.open(out).scan()).collect()
    assert final.height == 12 and (final["status"] == "ok").all()
    assert final.filter(pl.col("task_type") != "first_colour")["attempt"].unique().to_list() == [2]


def test_malformed_200_replies_fail_only_their_own_rows(malformed_server: FaultyServer, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A 200 without logprobs (letter scoring) and a 200 without a choice: a real vLLM server never sends
    either, hence the stand-in. Each fails its own request's row with a reason, once (no batch retry, no
    `ok` row with a null prediction), while the other requests of the same coalesced batch are answered;
    the key the server echoed back is redacted from the stored error."""
    monkeypatch.setenv("FS_TEST_KEY", "sekret-456-0a1b2c3d4e")
    out = tmp_path / "out"
    spec = parse_spec({
        "sweep_id": "malformed",
        "models": [{"id": "remote", "family": "qwen2_5_vl", "path": "tiny", "backend": "openai",
                    "http": {"base_url": malformed_server.url, "max_retries": 2, "backoff_s": 0.01,
                             "api_key_env": "FS_TEST_KEY"}}],
        "dataset": {"name": "synthetic", "n_videos": 2, "seconds": 2.0, "fps": 8, "width": 64, "height": 48},
        "budgets": [{"frames": 0}, {"frames": 2}],
        "store": {"out_dir": str(out), "commit_interval_s": 0.2},
    })
    summary = asyncio.run(Sweep(spec).run())
    assert (summary.jobs_ok, summary.jobs_failed) == (4, 8)
    assert malformed_server.hits == Counter({"flash": 4, "shape": 4, "colour": 4})  # each request sent once
    rows = ResultsDir.open(out).scan().collect()
    assert rows.filter(pl.col("task_type") == "first_colour")["status"].to_list() == ["ok"] * 4
    no_lp = rows.filter(pl.col("task_type") == "flash_count")
    assert set(no_lp["status"]) == {"error"} and set(no_lp["error_type"]) == {"NoLogprobs"}
    assert no_lp["error"].str.contains("without logprobs").all() and no_lp["pred"].is_null().all()
    empty = rows.filter(pl.col("task_type") == "static_shape")
    assert set(empty["status"]) == {"error"} and set(empty["error_type"]) == {"MalformedReply"}
    assert empty["error"].str.contains("Bearer ***", literal=True).all()
    assert not rows.select(pl.any_horizontal(pl.col(pl.String).str.contains("sekret", literal=True))
                           ).to_series().any(), "the API key leaked into results"


def test_run_exits_4_when_jobs_failed_and_prints_no_key(malformed_server: FaultyServer, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """`framesweep run` (spec without [store], --out given) on the same stand-in: the sweep finishes with
    error rows, so the exit status is 4; the key the server echoed is nowhere in the output."""
    from typer.testing import CliRunner

    from engine.cli.app import EXIT_FAILED_JOBS, app

    monkeypatch.setenv("FS_TEST_KEY", "sekret-789-0a1b2c3d4e")
    spec = tmp_path / "s.toml"
    spec.write_text(f'''sweep_id = "cli"
[[models]]
id = "remote"
family = "qwen2_5_vl"
path = "tiny"
backend = "openai"
[models.http]
base_url = "{malformed_server.url}"
api_key_env = "FS_TEST_KEY"
[dataset]
name = "synthetic"
n_videos = 2
seconds = 2.0
fps = 8
width = 64
height = 48
[[budgets]]
frames = 0
''')
    res = CliRunner().invoke(app, ["run", str(spec), "--out", str(tmp_path / "out"), "-v"])
    assert res.exit_code == EXIT_FAILED_JOBS == 4, res.output
    assert "2 ok, 4 failed" in res.output and "sekret" not in res.output
    assert ResultsDir.open(tmp_path / "out").scan().collect().height == 6


# --- replies a real vLLM server does not give on demand -------------------------------------------------------
# A scripted loopback stand-in, used only for these: a reply trickled a few bytes at a time (each read well within
# httpx's timeout), error bodies that echo the API key (JSON-escaped or URL-encoded, across the length at which the
# text is cut), a /version that answers 200 with HTML, and first-token logprobs that hold only some option letters.

ECHO_KEY = "sk-echoed/key+0123456789"


class ScriptedServer:
    def __init__(self, mode: str) -> None:
        self.mode = mode
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, code: int, body: bytes, kind: str = "application/json", trickle: int = 0) -> None:
                self.send_response(code)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                try:
                    for i in range(trickle):  # one byte every 0.2 s: each read is quick, the whole reply is not
                        self.wfile.write(body[i:i + 1])
                        self.wfile.flush()
                        time.sleep(0.2)
                    self.wfile.write(body[trickle:])
                except (BrokenPipeError, ConnectionResetError):  # the client gave up: expected here
                    pass

            def do_GET(self) -> None:
                if outer.mode == "html_version":
                    time.sleep(1.0)  # a slow start: every video is waiting for the engine when it fails
                    return self._send(200, b"<html><body>It works!</body></html>", "text/html")
                self._send(200, b'{"version": "fake"}')

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                if self.path == "/tokenize":
                    return self._send(200, json.dumps({"tokens": [ord(body["prompt"])]}).encode())
                kind = "flash" if "flash" in json.dumps(body["messages"]) else "other"
                if outer.mode == "echo":
                    return self._echo(kind)
                letters = "B" if outer.mode == "partial" and kind == "flash" else "ABCD"
                top = [{"token": x, "logprob": -1.2 - 0.1 * i} for i, x in enumerate(letters)]
                doc = {"choices": [{"message": {"content": letters[0]},
                                    "logprobs": {"content": [{"token": letters[0], "logprob": -1.2,
                                                              "top_logprobs": top}]}}],
                       "usage": {"prompt_tokens": 42, "completion_tokens": 1}}
                self._send(200, json.dumps(doc).encode(), trickle=30 if outer.mode == "trickle" else 0)

            def _echo(self, kind: str) -> None:
                """The key across the cut: at character 296 of a 500's text (cut at 300) JSON-escaped, of a 401's
                text (cut at 500) URL-encoded; a 200 without a choice holds it at 296 of its repr (cut at 300)."""
                if kind == "flash":
                    head = '{"error": "'
                    text = head + "x" * (296 - len(head)) + json.dumps(ECHO_KEY)[1:-1].replace("/", "\\/") + '"}'
                    return self._send(500, text.encode())
                head = '{"detail": "'
                if outer.hits.setdefault(kind, 0) == 0:  # first the 401, then (a rerun) the malformed 200
                    outer.hits[kind] = 1
                    text = head + "y" * (496 - len(head)) + quote(ECHO_KEY, safe="") + '"}'
                    return self._send(401, text.encode())
                pad = 296 - len(repr({"choices": [], "detail": ""})) + 2
                self._send(200, json.dumps({"choices": [], "detail": "z" * pad + ECHO_KEY}).encode())

        self.hits: dict[str, int] = {}
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture()
def scripted(request: pytest.FixtureRequest):
    s = ScriptedServer(request.param)
    yield s
    s.httpd.shutdown()


def _one_video_spec(url: str, out: Path, questions: list[str], **http: object) -> dict:
    return {
        "sweep_id": "scripted",
        "models": [{"id": "remote", "family": "qwen2_5_vl", "path": "tiny", "backend": "openai",
                    "http": {"base_url": url, "max_retries": 0, "backoff_s": 0.01, **http}}],
        "dataset": {"name": "synthetic", "n_videos": 1, "seconds": 2.0, "fps": 8, "width": 64, "height": 48,
                    "questions": questions},
        "budgets": [{"frames": 0}],
        "store": {"out_dir": str(out), "commit_interval_s": 0.2},
    }


@pytest.mark.parametrize("scripted", ["trickle"], indirect=True)
def test_a_reply_trickled_past_the_request_deadline_is_an_error_row(scripted: ScriptedServer, tmp_path: Path) -> None:
    """Each byte comes within httpx's per-read timeout (timeout_s), so without a deadline for the whole request
    the trickled reply (6 s) was waited for and scored; past request_timeout_s it is a TimeoutError row naming
    the setting."""
    spec = parse_spec(_one_video_spec(scripted.url, tmp_path / "out", ["flash_count"], timeout_s=1.0,
                                      request_timeout_s=1.0))
    summary = asyncio.run(Sweep(spec).run())
    assert (summary.jobs_ok, summary.jobs_failed) == (0, 1)
    row = ResultsDir.open(tmp_path / "out").scan().collect().row(0, named=True)
    assert (row["status"], row["error_type"]) == ("error", "TimeoutError")
    assert "request_timeout_s" in row["error"] and "1 s" in row["error"], row["error"]


@pytest.mark.parametrize("scripted", ["echo"], indirect=True)
def test_a_key_echoed_across_the_cut_leaves_no_prefix(scripted: ScriptedServer, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Error texts were cut (300, 500 characters) before they were redacted: a key echoed across the cut, JSON-
    escaped or URL-encoded, left its prefix in `error`. Now the whole text is redacted first."""
    monkeypatch.setenv("FS_ECHO_KEY", ECHO_KEY)
    spec = parse_spec(_one_video_spec(scripted.url, tmp_path / "out", ["flash_count", "first_colour"],
                                      api_key_env="FS_ECHO_KEY"))
    for _ in range(2):  # the rerun meets the malformed 200
        asyncio.run(Sweep(spec).run())
    rows = ResultsDir.open(tmp_path / "out").scan().collect()
    # the 500 twice (each run), the 401, then the malformed 200
    assert sorted(rows["error_type"].to_list()) == ["HTTPStatusError"] * 3 + ["MalformedReply"]
    for e in rows["error"].to_list():
        assert "***" in e and "sk-" not in e and "sk%2D" not in e.upper(), e


@pytest.mark.engine
@pytest.mark.parametrize("scripted", ["html_version"], indirect=True)
def test_a_version_endpoint_answering_html_stops_the_start_in_one_sentence(scripted: ScriptedServer,
                                                                            tmp_path: Path) -> None:
    """`/version` answering 200 with a body that is not JSON crashed the start with a JSONDecodeError traceback;
    now `run` exits 2 naming the URL."""
    from typer.testing import CliRunner

    from engine.cli.app import app

    spec = tmp_path / "s.toml"
    spec.write_text(f'''sweep_id = "html"
[[models]]
id = "remote"
family = "qwen2_5_vl"
path = "tiny"
backend = "openai"
[models.http]
base_url = "{scripted.url}"
[dataset]
name = "synthetic"
n_videos = 1
seconds = 2.0
fps = 8
width = 64
height = 48
[[budgets]]
frames = 0
''')
    spec.write_text(spec.read_text().replace("n_videos = 1", "n_videos = 3"))  # every video waits on the start
    res = CliRunner().invoke(app, ["run", str(spec), "--out", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert f"{scripted.url}/version" in res.output and "not JSON" in res.output, res.output
    assert "JSONDecodeError" not in res.output and isinstance(res.exception, SystemExit)
    assert ResultsDir.open(tmp_path / "out").scan().collect().height == 0  # stopped before any row
    # the one sentence only, in a real process: the other videos' tasks failed the same way were logged by asyncio
    # as "Task exception was never retrieved" with a traceback
    proc = subprocess.run([sys.executable, "-m", "engine.cli", "run", str(spec), "--out", str(tmp_path / "out2")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "not JSON" in proc.stderr and "Traceback" not in proc.stderr and "never retrieved" not in proc.stderr, \
        proc.stderr
    for cmd in (["predict", str(spec), "--predictor", "remote", "--no-run", "--out", str(tmp_path / "out4")],
                ["cascade", str(spec), "--stages", "text", "--out", str(tmp_path / "out3")]):
        res = CliRunner().invoke(app, cmd)
        assert res.exit_code == 2 and "not JSON" in res.output, (cmd, res.output)
        assert isinstance(res.exception, SystemExit), (cmd, res.exception)


@pytest.mark.parametrize("scripted", ["partial"], indirect=True)
def test_a_reply_with_some_letters_never_overstates_confidence(scripted: ScriptedServer, tmp_path: Path) -> None:
    """First-token logprobs for one option letter of four (B at -1.2) gave that letter confidence 1.0 (renormalised
    over the letters returned); now it keeps the probability the server gave it, and the row says how many letters
    had a logprob. A reply with all four is renormalised over them."""
    import math

    spec = parse_spec(_one_video_spec(scripted.url, tmp_path / "out", ["flash_count", "first_colour"]))
    summary = asyncio.run(Sweep(spec).run())
    assert (summary.jobs_ok, summary.jobs_failed) == (2, 0)
    rows = {r["task_type"]: r for r in ResultsDir.open(tmp_path / "out").scan().collect().iter_rows(named=True)}
    one = rows["flash_count"]
    assert (one["pred"], one["letters_returned"]) == ("B", 1)
    assert one["confidence"] == pytest.approx(math.exp(-1.2)) and one["option_probs"][0] is None
    four = rows["first_colour"]
    probs = [math.exp(-1.2 - 0.1 * i) for i in range(4)]
    assert (four["pred"], four["letters_returned"]) == ("A", 4)
    assert four["confidence"] == pytest.approx(probs[0] / sum(probs)) and sum(four["option_probs"]) == pytest.approx(1)
