"""A run seen from outside, for real (the tiny checkpoint on the CPU build of vLLM, a local Ray cluster): HEAVY.

One quick-path run (no spec file) with stdout and stderr in pipes, as under nohup or a batch scheduler:
plain progress lines with phases, the run log with vLLM's own lines, the spec it built written to OUT, the
accuracy tables and `summary.json` at the end. Then an engine that cannot start (one paragraph, exit 8),
and a run that honours RAY_ADDRESS.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.specs import small_spec_dict, write_toml

from engine.config import load_spec

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)

LINE = re.compile(r"^\[\d+:\d\d:\d\d\] (?P<label>[^:]+): (?P<phase>.+?)(?:; (?P<done>\d+)/(?P<total>\d+) jobs)?(?:; ~[\d:]+ left)?$")


def _framesweep(*args: str, cwd: Path, env: dict[str, str] | None = None,
                timeout: int = 600) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "RAY_ADDRESS")}
    return subprocess.run([sys.executable, "-m", "engine", *args], check=False, capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env={**base, **(env or {})}, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def quick(tiny_qwen25: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple:
    """`framesweep run` without a spec file: 3 questions x {text, 2 frames}, stderr into a pipe; with the
    summary.json it left (a later run rewrites it)."""
    work = tmp_path_factory.mktemp("quick")
    res = _framesweep("run", "--model", "tiny:qwen2_5_vl", "--dataset", "synthetic", "--frames", "0,2", "--limit",
                      "3", "--out", "out", "--progress-every", "2", cwd=work)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res, work / "out", json.loads((work / "out" / "summary.json").read_text())


def test_progress_lines_with_phases_when_stderr_is_no_terminal(quick: tuple) -> None:
    res, _, _ = quick
    lines = [m for line in res.stderr.splitlines() if (m := LINE.match(line))]
    phases = [m["phase"] for m in lines]
    assert any(p == "starting Ray" for p in phases), res.stderr
    assert any(p.startswith("loading tiny-qwen2_5_vl (0/1 up)") for p in phases), res.stderr
    assert "answering" in phases, res.stderr
    last = lines[-1]
    assert (last["phase"], last["done"], last["total"]) == ("done", "6", "6"), res.stderr
    # the phases come in order: Ray, the engine, the answers
    order = [next(i for i, p in enumerate(phases) if p.startswith(x)) for x in ("starting Ray", "loading", "answering")]
    assert order == sorted(order)


def test_the_run_log_holds_the_engine_actors_vllm_lines(quick: tuple) -> None:
    res, out, _ = quick
    said = re.search(r"^log: (\S+)$", res.stderr, re.MULTILINE)
    assert said, res.stderr
    logs = list((out / "logs").glob("run-*.log"))
    assert [str(p.relative_to(out.parent)) for p in logs] == [said[1]]
    text = logs[0].read_text()
    # vLLM's own lines, from the engine actor's process, through Ray to the driver's log
    assert re.search(r"\(VLLMWorker pid=\d+.*\) .*INFO .*\[[\w.]+\.py:\d+\] ", text), text[-3000:]
    assert "Initializing a V1 LLM engine" in text or "Starting to load model" in text
    assert "engine.cli.progress" in text and "answering" in text  # the driver's own records too
    ray_logs = re.search(r"Ray's logs: (\S+)", res.stderr)
    assert ray_logs and Path(ray_logs[1]).name == "logs", res.stderr
    assert "Initializing a V1 LLM engine" not in res.stderr + res.stdout  # never on the terminal


def test_the_quick_path_writes_the_spec_it_ran(quick: tuple) -> None:
    _, out, _ = quick
    spec = load_spec(out / "spec.toml")
    recorded = json.loads((out / "manifest.json").read_text())["spec"]
    assert spec.model_dump(mode="json") == recorded
    assert [m.path for m in spec.models] == ["tiny:qwen2_5_vl"] and [b.frames for b in spec.budgets] == [0, 2]
    again = _framesweep("run", str(out / "spec.toml"), cwd=out.parent)  # the file repeats the run: all committed
    assert again.returncode == 0 and "0 ok, 0 failed, 6 already committed" in again.stdout, again.stderr[-2000:]


def test_the_run_ends_with_the_tables_and_summary_json(quick: tuple) -> None:
    res, _, doc = quick
    assert "accuracy per budget" in res.stdout and "rescue / harm per transition" in res.stdout
    assert "tiny-qwen2_5_vl on synthetic, chain default" in res.stdout
    assert doc["jobs"]["ok"] == 6 and doc["exit_code"] == 0
    assert [(a["budget_id"], a["n_items"]) for a in doc["accuracy"]] == [("text", 3), ("f2", 3)]
    assert doc["chains"][0]["best_budget"] in ("text", "f2")
    assert {"framesweep", "ray", "polars"} <= set(doc["versions"]) and doc["spec"]["sweep_id"] == doc["sweep_id"]
    assert doc["engines"]["tiny-qwen2_5_vl"]["engine_version"].startswith("vllm ")


def test_an_engine_that_cannot_start_is_one_paragraph_naming_the_field(tiny_qwen25: Path, tmp_path: Path) -> None:
    d = small_spec_dict(tmp_path / "out")
    d["models"][0]["engine"]["max_model_len"] = 9_999_999  # above the checkpoint's 32768 positions
    spec = write_toml(tmp_path / "s.toml", d)
    res = _framesweep("run", str(spec), cwd=tmp_path)
    assert res.returncode == 8, res.stderr[-3000:]
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) < 40, res.stderr
    message = next(line for line in res.stderr.splitlines() if "did not start" in line)
    assert message.startswith("models.0 (tiny): its vLLM engine did not start. vLLM said: ")
    assert "max_model_len (9999999)" in message and "Check the spec field it names: models.0.engine.max_model_len" \
        in message, message
    log = next((tmp_path / "out" / "logs").glob("run-*.log")).read_text()
    assert "Traceback" in log and "User-specified max_model_len" in log  # the whole story stays in the log


START = "import json; from engine.runtime.local_cluster import start_local_cluster; " \
        "print(json.dumps(start_local_cluster(object_store_mb=100)))"
JOIN = "import ray; from engine.runtime.cluster import ensure_ray, ray_session; ensure_ray(object_store_mb=100); " \
       "print(ray_session()['how'], ray.get_runtime_context().gcs_address)"
STOP = "from engine.runtime.local_cluster import stop_local_cluster; stop_local_cluster()"


def test_a_run_without_address_joins_the_cluster_in_ray_address(tmp_path: Path) -> None:
    theirs = {"FRAMESWEEP_CACHE": str(tmp_path / "theirs")}  # a cluster started elsewhere (as `ray start` would)
    started = subprocess.run([sys.executable, "-c", START], check=False, capture_output=True, text=True,
                             timeout=300, env={**os.environ, **theirs})
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        address = json.loads(started.stdout.strip().splitlines()[-1])["address"]
        # as a user joins a cluster with token authentication (the token: the one `ray start` wrote for this user)
        mine = {**os.environ, "FRAMESWEEP_CACHE": str(tmp_path / "mine"), "RAY_ADDRESS": address,
                "RAY_AUTH_MODE": "token"}
        joined = subprocess.run([sys.executable, "-c", JOIN], check=False, capture_output=True, text=True,
                                timeout=300, env=mine)
        assert joined.returncode == 0, joined.stderr[-3000:]
        assert joined.stdout.split()[-2:] == ["RAY_ADDRESS", address]  # joined, not a new local cluster
    finally:
        subprocess.run([sys.executable, "-c", STOP], check=False, timeout=300, env={**os.environ, **theirs})
