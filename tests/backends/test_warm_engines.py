"""Warm engines: `framesweep engines up/list/down` through the CLI, a run reusing a live engine whose
settings match (the same actor answers), a run with another setting starting its own engine, and a
driver that never imports vLLM (warm or cold). The engine keys without any engine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from helpers.specs import small_spec_dict, write_toml

from engine.backends.warm import engine_key, engine_settings, warm_name
from engine.config import EngineSpec
from engine.results import ResultsDir

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)

ROOT = Path(__file__).resolve().parents[2]

# runs the CLI in this process and says, after it exits, whether vLLM was ever imported by it
_DRIVER = ("import atexit, sys; atexit.register(lambda: print('VLLM_IN_DRIVER', 'vllm' in sys.modules)); "
           "from engine.cli.app import main; sys.argv = ['framesweep', *sys.argv[1:]]; main()")


def _cli(*args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _DRIVER, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, COLUMNS="200"))


def test_engine_key_changes_with_every_setting_but_replicas(tmp_path: Path) -> None:
    base = EngineSpec(max_model_len=4096, dtype="float32")
    fam = {"limit_mm_per_prompt": {"video": 1}}
    key = engine_key(engine_settings(tmp_path, base, fam))
    assert key == engine_key(engine_settings(tmp_path, base.model_copy(update={"replicas": 3}), dict(fam)))
    for other in (engine_settings(tmp_path, base.model_copy(update={"max_num_seqs": 8}), fam),
                  engine_settings(tmp_path, base.model_copy(update={"engine_core": "process"}), fam),
                  engine_settings(tmp_path, base.model_copy(update={"extra": {"seed": 1}}), fam),
                  engine_settings(tmp_path, base, {"limit_mm_per_prompt": {"video": 2}}),
                  engine_settings(tmp_path / "other", base, fam),
                  engine_settings(tmp_path, base, fam, seed=1)):
        assert engine_key(other) != key
    assert warm_name(key, 1) == f"fs-engine-{key}-r1"


def test_engine_key_follows_the_checkpoint_content(tmp_path: Path) -> None:
    """A checkpoint changed at the same path is another engine: the bytes of its config, its processor config
    or a weight file change the key; an untouched folder, or the same bytes written again (another mtime),
    keep it (no engine needed; every answer-shaping file: tests/backends/test_checkpoint.py)."""
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text('{"hidden_size": 8}')
    (ckpt / "processor_config.json").write_text('{"max_pixels": 12544}')
    (ckpt / "model.safetensors.index.json").write_text('{"weight_map": {}}')
    weights = ckpt / "model-00001-of-00001.safetensors"
    weights.write_bytes(b"\0" * 64)
    os.utime(weights, ns=(1_000_000_000, 1_000_000_000))
    base = EngineSpec(max_model_len=4096, dtype="float32")

    def key() -> str:
        return engine_key(engine_settings(ckpt, base, {}))

    first = key()
    assert key() == first and engine_settings(ckpt, base, {})["checkpoint"]  # nothing changed
    os.utime(weights, ns=(2_000_000_000, 2_000_000_000))  # the same bytes, another mtime: the same engine
    assert key() == first
    weights.write_bytes(b"\1" * 64)  # other weights of the same size
    rebuilt = key()
    assert rebuilt != first
    (ckpt / "processor_config.json").write_text('{"max_pixels": 50176}')  # another frame size
    assert key() != rebuilt
    edited = key()
    (ckpt / "config.json").write_text('{"hidden_size": 16}')
    assert key() != edited
    # a hub id (no such local folder) keys as before: no fingerprint
    assert "checkpoint" not in engine_settings("org/no-such-model", base, {})


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory, tiny_qwen25: Path) -> Iterator[Path]:
    """`framesweep engines up` on the small spec, its model a copy of the tiny checkpoint (a test edits it);
    `engines down` (and the cluster stopped) at the end."""
    from engine.runtime.local_cluster import recorded_cluster, stop_local_cluster

    work = tmp_path_factory.mktemp("warm")
    shutil.copytree(tiny_qwen25, work / "ckpt")
    spec = write_toml(work / "spec.toml", _on_copy(small_spec_dict(work / "out"), work / "ckpt"))
    try:
        r = _cli("engines", "up", str(spec))
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
        assert "1 started, 0 already up" in r.stdout
        assert recorded_cluster() is not None
        yield spec
    finally:
        if recorded_cluster() is not None:
            _cli("engines", "down", timeout=120)
        stop_local_cluster()  # whatever `down` left


def _on_copy(spec: dict, ckpt: Path) -> dict:
    spec["models"][0]["path"] = str(ckpt)
    return spec


def _listed() -> list[dict]:
    r = _cli("engines", "--json", "-")
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout[: r.stdout.rindex("VLLM_IN_DRIVER")])


def test_engines_list_shows_settings_and_memory(warm: Path) -> None:
    (e,) = _listed()
    assert e["name"] == warm_name(e["key"], 0)
    assert e["settings"]["engine"]["max_model_len"] == 4096 and e["settings"]["engine"]["dtype"] == "float32"
    assert e["settings"]["model_path"] == str((warm.parent / "ckpt").resolve())
    assert e["engine_core"] == "in_process" and e["rss_mb"] > 100


def test_a_run_reuses_the_warm_engine_and_never_imports_vllm(warm: Path) -> None:
    (before,) = _listed()
    r = _cli("run", str(warm))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    assert f"warm engine {before['name']} reused" in r.stdout
    assert "VLLM_IN_DRIVER False" in r.stdout
    rows = ResultsDir.open(warm.parent / "out").scan().collect()
    assert rows.height == 36 and (rows["status"] == "ok").all()
    assert set(rows["worker"]) == {before["worker"]}  # the same actor answered
    (after,) = _listed()
    assert after["worker"] == before["worker"] and after["cache_resets"] == before["cache_resets"] + 1


def test_another_setting_and_an_edited_processor_config_start_their_own_engine(warm: Path, tmp_path: Path) -> None:
    """A run whose engine settings differ from the warm engine's (here max_num_seqs) and whose checkpoint's processor
    config changed since the warm engine loaded it (the video frames' minimum size) must not be answered by it: a new
    engine, which reads the new file (more tokens per frame), ended with the run, and the log names both differences.
    Before, the key covered config.json and the weights' names and sizes only: the old engine answered with the old
    processor. (Each difference alone changes the key: test_engine_key_*; one run here proves the log and the
    engine's life for both.)"""
    (before,) = _listed()
    config = warm.parent / "ckpt" / "processor_config.json"
    original = config.read_bytes()
    processor = json.loads(original)
    processor["video_processor"]["size"]["shortest_edge"] = 224 * 224  # 96x64 frames sent enlarged
    config.write_text(json.dumps(processor, indent=2))
    try:
        _run_on_the_edited_copy(warm, tmp_path, before)
    finally:
        config.write_bytes(original)  # the content the warm engine loaded: its key again (the next test runs on it)
    assert _key(warm) == before["key"]


def _run_on_the_edited_copy(warm: Path, tmp_path: Path, before: dict) -> None:
    d = _on_copy(small_spec_dict(tmp_path / "out"), warm.parent / "ckpt")
    d["models"][0]["engine"]["max_num_seqs"] = 8
    r = _cli("run", str(write_toml(tmp_path / "spec.toml", d)), "-v")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    assert "reused" not in r.stdout and "VLLM_IN_DRIVER False" in r.stdout  # a cold start: no vLLM here either
    said = " ".join(r.stderr.split())
    assert "a new engine was started for this run" in said
    assert "checkpoint: " in said and "max_num_seqs: 16 there, 8 here" in said  # the log says why: both differences
    rows = ResultsDir.open(tmp_path / "out").scan().collect()
    assert rows.height == 36 and (rows["status"] == "ok").all() and before["worker"] not in set(rows["worker"])
    old = ResultsDir.open(warm.parent / "out").scan().collect()  # the warm engine's answers to the same jobs (test above)
    pairs = rows.join(old, on=["item_id", "budget_id"], suffix="_old").filter(pl.col("frames") > 0)
    assert pairs.height == 27  # 9 questions x 3 visual budgets
    assert (pairs["prompt_tokens"] > pairs["prompt_tokens_old"]).all()  # the new processor's larger frames
    assert [e["name"] for e in _listed()] == [before["name"]]  # the run's own engine ended with it


def test_engines_down_during_a_run_ends_it_with_one_sentence_and_stops_the_cluster(warm: Path, tmp_path: Path) -> None:
    """`engines down` while a run answers on the warm engine. Before, the run took the killed engine for a crash
    and started an engine of its own on the cluster going down: it either died 60 s later with exit 1 and only
    Ray's "Failed to connect to GCS" line, or kept `engines down` waiting while it finished. Now it ends at once
    with exit 7 and one sentence naming the engine, its committed rows kept; `engines down` stops the engines
    and the cluster."""
    from engine.runtime.local_cluster import local_cluster_pids, recorded_cluster

    pid = recorded_cluster()["pid"]  # type: ignore[index]
    d = _on_copy(small_spec_dict(tmp_path / "out"), warm.parent / "ckpt")
    # 1,800 jobs: still answering when the engines go down (the warm engine answered 480 in 10 s, before
    # `engines down` had started)
    d["dataset"]["n_videos"] = 150
    run = subprocess.Popen([sys.executable, "-c", _DRIVER, "run", str(write_toml(tmp_path / "spec.toml", d))],
                           cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=dict(os.environ, COLUMNS="200"))
    try:
        while not list((tmp_path / "out" / "results").glob("part-*.parquet")):  # some rows committed
            assert run.poll() is None, run.communicate()[1][-3000:]
            time.sleep(0.2)
        r = _cli("engines", "down", timeout=120)
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert r.returncode == 0, r.stderr[-3000:]
    assert "stopped 1 warm engine(s)" in r.stdout and "local Ray cluster stopped" in r.stdout
    assert run.returncode == 7, out[-2000:] + err[-4000:]
    assert (f"the warm engine {warm_name(_key(warm), 0)} was stopped (`framesweep engines down`?) while the run "
            "used it; committed rows are kept; rerun to continue") in " ".join(err.split())
    assert "Traceback" not in err and "GCS" not in err
    rows = ResultsDir.open(tmp_path / "out").scan().collect()
    assert 0 < rows.height < 1800 and (rows["status"] == "ok").all()  # committed, and no error rows for the rest
    assert recorded_cluster() is None and local_cluster_pids() == []
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    assert "no warm engines" in _cli("engines").stdout


def _key(warm: Path) -> str:
    """The key a run of the small spec on the checkpoint copy computes (as `engine.sweep.engines` does)."""
    from engine.backends.families import get_family

    model = small_spec_dict(warm)["models"][0]
    return engine_key(engine_settings(warm.parent / "ckpt", EngineSpec(**model["engine"]),
                                      get_family(model["family"]).engine_kwargs(None)))
