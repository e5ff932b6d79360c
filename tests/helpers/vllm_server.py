"""A real `vllm` OpenAI-compatible server on loopback, for the HTTP path's tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def vllm_server(model: Path, log_dir: Path) -> Iterator[str]:
    """`vllm`'s OpenAI server of `model` (float32, eager, max_model_len 4096), configured to keep every frame and to
    take per-request video metadata; yields its URL; its log is `log_dir/server-<port>.log`."""
    port = free_port()
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
           "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "4096", "--dtype", "float32",
           "--enforce-eager", "--seed", "0", "--logprobs-mode", "processed_logprobs",
           "--media-io-kwargs", '{"video": {"num_frames": -1}}', "--trust-request-mm-kwargs",
           "--limit-mm-per-prompt", '{"video": 1, "image": 1}']
    # eager with nothing compiled, as framesweep's own CPU-build engines run (engine.backends.vllm_actor)
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "TORCHDYNAMO_DISABLE": "1"}
    with open(log_dir / f"server-{port}.log", "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 300
            while True:
                assert proc.poll() is None, "vllm server exited; see " + log.name
                try:
                    if httpx.get(url + "/health", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, "vllm server did not start"
                time.sleep(1)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
