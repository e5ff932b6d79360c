"""Terminal escapes in a dataset's ids are shown, never obeyed: `inspect`, `run` (its terminal and its log file) and
`status`, on a Video-MME table whose video ids hold a CSI colour and an OSC window title.

The answering server is a small loopback stand-in for vLLM's OpenAI endpoint (no engine is needed to carry an
id to the terminal); everything else is real: the adapter reads the parquet, the run writes its log and rows,
`status` reads them back.
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from helpers.dataset_files import videomme_fixture, videomme_row
from helpers.specs import write_toml
from typer.testing import CliRunner

from engine.cli import app

runner = CliRunner()

RED = "ev\x1b[31mil"  # a CSI sequence: everything after it red
TITLE = "t\x1b]0;pwned\x07x"  # an OSC sequence: the terminal's title, ended by BEL
RAW = ("\x1b", "\x07", "\x9b")


class _Answers(BaseHTTPRequestHandler):
    """vLLM's chat endpoint as far as a letter-scored run asks it: every answer "A", certain."""

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
        self._send({"version": "stand-in"})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if self.path == "/tokenize":
            return self._send({"tokens": [ord(body["prompt"])]})
        top = [{"token": x, "logprob": -1.0 - i} for i, x in enumerate("ABCD")]
        self._send({"choices": [{"message": {"content": "A"}, "logprobs": {"content": [
            {"token": "A", "logprob": -1.0, "top_logprobs": top}]}}], "usage": {"prompt_tokens": 9, "completion_tokens": 1}})


@pytest.fixture()
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def _spec(tmp_path: Path, url: str) -> tuple[Path, Path]:
    """Two videos whose ids hold escapes, neither present (their visual jobs fail, naming them), 2 questions each."""
    rows = [videomme_row("001", RED, q) for q in (1, 2)] + [videomme_row("002", TITLE, q) for q in (1, 2)]
    ann, media = videomme_fixture(tmp_path / "data", rows, present=())
    out = tmp_path / "out"
    spec = write_toml(tmp_path / "spec.toml", {
        "sweep_id": "escapes",
        "models": [{"id": "remote", "family": "qwen2_5_vl", "path": "tiny", "backend": "openai",
                    "http": {"base_url": url, "max_retries": 0}}],
        "dataset": {"name": "videomme", "annotations": str(ann), "media_root": str(media)},
        "budgets": [{"frames": 0}, {"frames": 2}],
        "store": {"out_dir": str(out), "commit_interval_s": 0.2},
    })
    return spec, out


def _shown(text: str) -> None:
    """Each id is there, escaped, and no control character of it is."""
    assert "ev\\x1b[31mil" in text and "t\\x1b]0;pwned\\x07x" in text, text
    assert not any(c in text for c in RAW), repr(text)


def test_inspect_shows_escapes_in_ids_and_paths(tmp_path: Path, server: str) -> None:
    spec, _ = _spec(tmp_path, server)
    res = runner.invoke(app, ["inspect", str(spec)], env={"COLUMNS": "300"})
    assert res.exit_code == 6, res.output  # both videos missing
    _shown(res.output)


def test_run_and_its_log_and_status_show_escapes_in_ids(tmp_path: Path, server: str) -> None:
    spec, out = _spec(tmp_path, server)
    res = runner.invoke(app, ["run", str(spec)], env={"COLUMNS": "300"})
    assert res.exit_code == 6, res.output  # the visual jobs fail for good (missing media), the text ones answer
    assert not any(c in res.output for c in RAW), repr(res.output)
    (log,) = (out / "logs").glob("run-*.log")
    text = log.read_text(encoding="utf-8")
    _shown(text)  # the scheduler's warning naming each unusable video
    st = runner.invoke(app, ["status", str(out)], env={"COLUMNS": "300"})
    assert st.exit_code == 0, st.output
    _shown(st.output)  # the permanent failures, named by video


def test_a_terminal_sees_escapes_and_only_the_consoles_own_styles() -> None:
    """On a terminal rich writes its own styles (ESC sequences of its making); the text's own are shown."""
    from rich.table import Table

    from engine.cli._console import _Console

    con = _Console(file=io.StringIO(), force_terminal=True, markup=False, emoji=False, highlight=False)
    t = Table()
    t.add_column("video")
    t.add_row(TITLE)
    con.print(f"missing: {RED}", style="red")
    con.print(t)
    got = con.file.getvalue()  # type: ignore[attr-defined]
    assert "ev\\x1b[31mil" in got and "t\\x1b]0;pwned\\x07x" in got
    assert "\x1b]" not in got and "\x07" not in got  # no OSC of the text's reaches the terminal
    assert got.count("\x1b[31m") == 1  # the red of `style="red"`, not the id's


def test_log_records_show_escapes_on_the_terminal_and_in_the_run_log(tmp_path: Path) -> None:
    import logging

    from engine.cli._console import VisibleFormatter
    from engine.cli.runlog import run_log

    record = logging.LogRecord("engine.sweep.scheduler", logging.WARNING, __file__, 1, "%s: %s", (RED, "gone\r"),
                               None)
    assert VisibleFormatter("%(message)s").format(record) == "ev\\x1b[31mil: gone\\x0d"
    with run_log(tmp_path) as path:
        logging.getLogger("engine.sweep.scheduler").warning("%s: no such file", TITLE)
    assert path is not None
    _shown(path.read_text(encoding="utf-8") + "ev\\x1b[31mil")
