"""A spec path that names no regular file: refused in one sentence before it is opened (a FIFO used to hang
`inspect` and `run` for ever, waiting for a writer)."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.cli import app
from engine.config import SpecError, load_spec

runner = CliRunner()


def _unblock_later(fifo: Path, after_s: float = 5.0) -> threading.Timer:
    """Without the check, opening the FIFO waits for a writer: this one comes after `after_s` and writes a line that
    is no spec, so a regression fails in seconds instead of hanging the suite."""

    def write() -> None:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK) if _has_reader(fifo) else None
        if fd is not None:
            os.write(fd, b"not = [a spec\n")
            os.close(fd)

    timer = threading.Timer(after_s, write)
    timer.daemon = True
    timer.start()
    return timer


def _has_reader(fifo: Path) -> bool:
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # ENXIO: nobody has it open for reading
        return True
    except OSError:
        return False


def test_a_fifo_as_the_spec_is_named_not_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "spec.toml"
    os.mkfifo(fifo)
    timer = _unblock_later(fifo)
    try:
        with pytest.raises(SpecError, match=r"spec\.toml: is a named pipe \(FIFO\), not a spec file"):
            load_spec(fifo)
        for command in ("inspect", "run"):
            res = runner.invoke(app, [command, str(fifo)])
            assert res.exit_code == 2, res.output
            assert "is a named pipe (FIFO), not a spec file" in " ".join(res.output.split())
    finally:
        timer.cancel()


def test_a_socket_or_a_device_as_the_spec_is_named(tmp_path: Path) -> None:
    sock_path = tmp_path / "spec.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        with pytest.raises(SpecError, match="is a socket, not a spec file"):
            load_spec(sock_path)
    with pytest.raises(SpecError, match="is a character device, not a spec file"):
        load_spec("/dev/null")
