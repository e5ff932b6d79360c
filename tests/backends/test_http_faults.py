"""Server faults become retries, then error rows; the sweep finishes and a rerun retries only those.

The server here is a small loopback stand-in, used only because a real vLLM server
cannot be made to fail on demand: it answers like vLLM's chat endpoint, but
returns 500 for one question kind and hangs past the client timeout for another.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import polars as pl
import pytest

from engine.results.store import latest_rows, scan_results
from engine.spec import parse_spec
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
                    time.sleep(1.5)  # longer than the client's timeout
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
    monkeypatch.setenv("FS_TEST_KEY", "sekret-123")
    out = tmp_path / "out"
    spec = parse_spec({
        "sweep_id": "faults",
        "models": [{"id": "remote", "family": "qwen2_5_vl", "path": "tiny", "backend": "openai",
                    "http": {"base_url": server.url, "timeout_s": 0.5, "max_retries": 2, "backoff_s": 0.01,
                             "api_key_env": "FS_TEST_KEY"}}],
        "dataset": {"name": "synthetic", "n_videos": 2, "seconds": 2.0, "fps": 8, "width": 64, "height": 48},
        "budgets": [{"frames": 0}, {"frames": 2}],
        "store": {"out_dir": str(out), "commit_interval_s": 0.2},
    })
    summary = asyncio.run(Sweep(spec).run())
    assert (summary.jobs_ok, summary.jobs_failed) == (4, 8)
    # 1 try + 2 retries for each failing request: 2 videos x 2 budgets (a timed-out request may still
    # sit in the server's accept queue when the sweep ends: give the server a moment to count it)
    deadline = time.monotonic() + 5
    while server.hits["shape"] < 12 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.hits["flash"] == 4 * 3 and server.hits["shape"] == 4 * 3 and server.hits["colour"] == 4
    rows = scan_results(out).collect()
    errors = rows.filter(pl.col("status") == "error")
    assert set(errors["error_type"]) == {"HTTPStatusError", "ReadTimeout"}
    assert errors.filter(pl.col("error_type") == "HTTPStatusError")["error"].str.contains("500").all()
    assert errors["task_type"].is_in(["flash_count", "static_shape"]).all()
    assert server.auth == {"Bearer sekret-123"}
    assert not rows.select(pl.any_horizontal(pl.col(pl.String).str.contains("sekret", literal=True))
                           ).to_series().any(), "the API key leaked into results"

    server.broken = False
    server.hits.clear()
    again = asyncio.run(Sweep(spec).run())
    assert (again.jobs_skipped, again.jobs_ok, again.jobs_failed) == (4, 8, 0)
    assert server.hits == Counter({"flash": 4, "shape": 4})  # only the failed keys were asked again
    final = latest_rows(scan_results(out)).collect()
    assert final.height == 12 and (final["status"] == "ok").all()
    assert final.filter(pl.col("task_type") != "first_colour")["attempt"].unique().to_list() == [2]


def test_malformed_200_replies_fail_only_their_own_rows(malformed_server: FaultyServer, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A 200 without logprobs (letter scoring) and a 200 without a choice: a real vLLM server never sends
    either, hence the stand-in. Each fails its own request's row with a reason, once (no batch retry, no
    `ok` row with a null prediction), while the other requests of the same coalesced batch are answered;
    the key the server echoed back is redacted from the stored error."""
    monkeypatch.setenv("FS_TEST_KEY", "sekret-456")
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
    rows = scan_results(out).collect()
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

    monkeypatch.setenv("FS_TEST_KEY", "sekret-789")
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
    assert scan_results(tmp_path / "out").collect().height == 6
