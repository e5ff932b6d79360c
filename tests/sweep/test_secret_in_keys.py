"""A secret that is also part of a dataset's names (a video file name, so its item ids) leaves the keys as the
dataset gives them: the sweep commits each key once, and a rerun finds every key done."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import polars as pl
import pytest
from helpers.secrets import isolated_secrets

from engine.config import parse_spec
from engine.results import ResultsDir
from engine.runtime.secrets import register_secret
from engine.sweep import Sweep

SEED = 48213977
SECRET = f"syn{SEED}-0001"  # the second video's name: syn48213977-0001.mp4, its items syn48213977-0001/<kind>


@pytest.fixture()
def echo_server() -> Iterator[str]:
    """A loopback OpenAI-compatible stand-in that answers every question "A" and names the secret in its reply
    (a real server that echoes what it was sent does so on its own; this one does it on every reply)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, doc: dict) -> None:
            body = json.dumps(doc).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._send({"version": "echo"})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            if self.path == "/tokenize":  # each option letter is one token
                return self._send({"tokens": [ord(body["prompt"])]})
            top = [{"token": x, "logprob": -1.0 - 0.1 * i} for i, x in enumerate("ABCD")]
            self._send({"choices": [{"message": {"content": f"A, as {SECRET} shows"},
                                     "logprobs": {"content": [{"token": "A", "logprob": -1.0, "top_logprobs": top}]}}],
                        "usage": {"prompt_tokens": 42, "completion_tokens": 1}})

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_a_secret_in_item_ids_leaves_the_keys_intact_and_a_rerun_commits_nothing(
        echo_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Redaction rewrote key columns: `syn...-0001/flash_count` was stored as `***/flash_count`, which no job ever
    matches, so each rerun committed those keys again (duplicates grew). Now keys are stored as the dataset
    names them, the server's text is still redacted, and the rerun skips every job."""
    isolated_secrets(monkeypatch)
    register_secret(SECRET)
    out = tmp_path / "out"
    spec = parse_spec({
        "sweep_id": "keys",
        "models": [{"id": "remote", "family": "qwen2_5_vl", "path": "served", "backend": "openai",
                    "http": {"base_url": echo_server, "max_retries": 0}}],
        "dataset": {"name": "synthetic", "seed": SEED, "n_videos": 2, "seconds": 2.0, "fps": 8, "width": 64,
                    "height": 48},
        "budgets": [{"frames": 0}, {"frames": 2}],
        "store": {"out_dir": str(out), "commit_interval_s": 0.2},
    })
    first = asyncio.run(Sweep(spec).run())
    assert (first.jobs_ok, first.jobs_failed) == (12, 0)
    rows = ResultsDir.open(out).scan().collect()
    mine = rows.filter(pl.col("video_id") == SECRET)
    assert mine.height == 6 and mine["item_id"].str.starts_with(f"{SECRET}/").all(), mine["item_id"].to_list()
    assert not rows["item_id"].str.contains("***", literal=True).any()
    assert set(rows["response"]) == {"A, as *** shows"} and set(rows["pred"]) == {"A"}

    again = asyncio.run(Sweep(spec).run())
    assert (again.jobs_skipped, again.jobs_ok, again.jobs_failed) == (12, 0, 0)
    assert ResultsDir.open(out).scan().collect().height == 12  # no key committed twice
