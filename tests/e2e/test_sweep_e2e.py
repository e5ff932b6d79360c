"""A whole sweep through the CLI with the real engine; crash and resume.

Each `framesweep run` is a real process with its own local Ray cluster and vLLM
CPU engine, so killing it is a real crash.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import psutil
import pytest
from helpers.processes import wait_gone
from helpers.specs import small_spec_dict, write_toml

from engine.config import parse_spec
from engine.results import ResultsDir
from engine.results.schema import KEY_COLUMNS

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)

FRAMESWEEP = [sys.executable, "-m", "engine.cli"]


def _spec(tmp_path: Path, out: Path, n_videos: int, commit_interval_s: float | None = None) -> Path:
    d = small_spec_dict(out)
    d["dataset"]["n_videos"] = n_videos
    if commit_interval_s is not None:
        d["store"]["commit_interval_s"] = commit_interval_s
    parse_spec(d)  # valid before it goes to the CLI
    return write_toml(tmp_path / "spec.toml", d)


def _start(spec: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([*FRAMESWEEP, "run", str(spec)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True, env=env or os.environ.copy())


def _shards(out: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((out / "results").glob("part-*"))}


def _wait_for_shards(proc: subprocess.Popen, out: Path, n: int, timeout: float = 240) -> None:
    t0 = time.monotonic()
    while len(_shards(out)) < n:
        assert proc.poll() is None, f"sweep ended early:\n{proc.stdout.read() if proc.stdout else ''}"
        assert time.monotonic() - t0 < timeout, "no commit in time"
        time.sleep(0.05)


def _kill_tree(proc: subprocess.Popen) -> None:
    """SIGKILL the driver and everything it started (Ray, the engine): a machine-style crash."""
    parent = psutil.Process(proc.pid)
    victims = [parent, *parent.children(recursive=True)]
    for p in victims:
        try:
            p.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    proc.wait(timeout=30)
    wait_gone(victims, timeout=30)


def _kill_driver_only(proc: subprocess.Popen, within_s: float = 15.0) -> None:
    """SIGKILL the driver alone; every process of its local Ray instance (and the engine in it) is gone soon after."""
    started = [p for p in psutil.Process(proc.pid).children(recursive=True)
               if "engine.runtime.reaper" not in " ".join(p.cmdline())]
    assert any(p.name() == "raylet" for p in started) and any(p.name().startswith("ray::") for p in started)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    alive = wait_gone(started, timeout=within_s)
    left = [f"{p.pid} {p.name()}" for p in alive]
    for p in alive:  # leave the machine clean for the rest of the suite either way
        p.kill()
    assert not left, f"processes of the killed driver still running after {within_s} s: {left}"


def _keys(df: pl.DataFrame) -> list[tuple]:
    return list(df.select(KEY_COLUMNS).iter_rows())


def test_sweep_sigterm_sigkill_resume(tmp_path: Path, fs_cache: Path, warm_engine: Path) -> None:
    """A run stopped by SIGTERM, SIGKILLed twice, then run to the end: every key once, committed shards untouched.
    The runs that own their cluster and engine (the SIGTERM, the driver-only kill: what they started must go with
    them) start cold; the machine-style kill and the final rerun answer on the suite's warm engine."""
    out = tmp_path / "out"
    cold = {**os.environ, "FRAMESWEEP_CACHE": str(fs_cache)}  # no recorded cluster there: a cluster of its own
    # enough work that each of three interruptions, a commit (0.25 s) after a start, leaves most of it
    # undone even where the tiny engine answers 100 jobs a second
    n_videos = 60
    spec = _spec(tmp_path, out, n_videos=n_videos, commit_interval_s=0.25)
    expected = {("tiny", "synthetic", f"syn0-{v:04d}/{q}", b)
                for v in range(n_videos) for q in ("flash_count", "first_colour", "static_shape")
                for b in ("text", "f2", "f4", "f8")}

    # 1) SIGTERM: stops cleanly after committing what finished (its own cluster stopped with it)
    proc = _start(spec, cold)
    _wait_for_shards(proc, out, 1)
    proc.send_signal(signal.SIGTERM)
    log = proc.communicate(timeout=120)[0]
    assert proc.returncode == 130, log
    assert "stopped early" in log
    after_term = ResultsDir.open(out).scan().collect()
    assert 0 < after_term.height < len(expected)

    # 2) SIGKILL mid-run, twice, at different points: whatever was committed stays, nothing
    #    half-written is visible, and each rerun only adds keys. The first kill takes the driver and every
    #    process it started (a machine-style crash; the engine is the warm one); the second the driver alone,
    #    and what it started (Ray, the engine actor) must not outlive it (the reaper: Ray's agents and vLLM's
    #    worker had lived on for 25-90 s)
    for kill in ("tree", "driver"):
        proc = _start(spec, None if kill == "tree" else cold)
        _wait_for_shards(proc, out, len(_shards(out)) + 1)
        if kill == "tree":
            _kill_tree(proc)
        else:
            _kill_driver_only(proc)
        committed = ResultsDir.open(out).scan().collect()
        keys = _keys(committed)
        assert len(keys) == len(set(keys)), "duplicate keys after a crash"
        assert set(keys) < expected, "the crash must leave work undone for this test to mean anything"
    before = _shards(out)

    # 3) rerun: finishes exactly the rest
    proc = _start(spec)
    log = proc.communicate(timeout=600)[0]
    assert proc.returncode == 0, log
    final = ResultsDir.open(out).scan().collect()
    keys = _keys(final)
    assert len(keys) == len(set(keys)), "duplicate keys"
    assert set(keys) == expected
    assert (final["status"] == "ok").all()
    for name, digest in before.items():  # committed shards untouched
        assert _shards(out)[name] == digest
    new_rows = final.filter(~pl.col("finished_at").is_in(committed["finished_at"].implode()))
    assert set(_keys(new_rows)).isdisjoint(_keys(committed)), "a committed row was recomputed"
    # every row records what was sent
    visual = final.filter(pl.col("frames") > 0)
    assert (visual["frame_indices"].list.len() == visual["frames"]).all()
    assert (final.filter(pl.col("frames") == 0)["frame_indices"].list.len() == 0).all()
    assert final["option_probs"].list.len().eq(4).all() and final["prompt_tokens"].is_not_null().all()
    # the official text extraction of the answer agrees with the option-probability argmax
    assert (final["pred_extracted"] == final["pred"]).all()

    # 4) a rerun of a finished sweep is a no-op (no engine is even started)
    shards = _shards(out)
    done = subprocess.run([*FRAMESWEEP, "run", str(spec)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "0 ok" in done.stdout and _shards(out) == shards

    # status from another shell
    st = subprocess.run([*FRAMESWEEP, "status", str(out)], capture_output=True, text=True, timeout=60)
    assert st.returncode == 0 and f"{len(expected)} done, 0 failed, 0 pending" in st.stdout


def test_each_video_decoded_once_and_cached_pipeline_reuses_frames(tmp_path: Path, warm_engine: Path) -> None:
    """In-process sweeps: every video is decoded in one pass for all its budgets; with the cached
    pipeline a second sweep (another results dir) decodes nothing and gets the same answers."""
    import asyncio

    import ray

    from engine.frames.decode import DECODE_CALLS
    from engine.sweep import Sweep, start_backends

    d = small_spec_dict(tmp_path / "a")
    d["decode"] = {"max_videos_in_flight": 2, "pipeline": "cached", "cache_dir": str(tmp_path / "frames")}
    spec_a = parse_spec(d)
    spec_b = spec_a.with_out_dir(tmp_path / "b")

    async def go():
        backends = await start_backends(spec_a)
        try:
            before = dict(DECODE_CALLS)
            a = await Sweep(spec_a, backends=backends).run()
            mid = dict(DECODE_CALLS)
            b = await Sweep(spec_b, backends=backends).run()
            return before, mid, dict(DECODE_CALLS), a, b
        finally:
            await asyncio.gather(*(x.close() for x in backends.values()))
            ray.shutdown()

    before, mid, after, a, b = asyncio.run(go())
    assert a.jobs_ok == b.jobs_ok == 3 * 3 * 4 and a.jobs_failed == b.jobs_failed == 0
    calls = {k: v - before.get(k, 0) for k, v in mid.items() if v - before.get(k, 0)}
    assert len(calls) == 3 and set(calls.values()) == {1}  # one decode pass per video
    assert after == mid  # the second sweep read every frame from the cache
    rows_a = ResultsDir.open(tmp_path / "a").scan().collect().sort(["item_id", "budget_id"])
    rows_b = ResultsDir.open(tmp_path / "b").scan().collect().sort(["item_id", "budget_id"])
    visual = rows_a.filter(pl.col("frames") > 0)
    assert set(visual["pipeline"]) == {"cached"} and (visual["video_frames"] == 32).all()
    import av

    assert set(visual["decoder"]) == {"pyav"} and set(visual["decoder_version"]) == {f"av {av.__version__}"}
    assert rows_a.filter(pl.col("frames") == 0)["decoder_version"].is_null().all()  # text-only: nothing decoded
    import engine

    assert json.loads((tmp_path / "a" / "manifest.json").read_text())["framesweep_version"] == engine.__version__
    # the union of 2, 4 and 8 uniform frames of a 32-frame clip, decoded once per video
    per_video = visual.group_by("video_id").agg(pl.col("frame_indices").list.explode().unique())
    assert per_video["frame_indices"].list.len().to_list() == [a.frames_decoded // 3] * 3
    assert rows_a["option_probs"].to_list() == rows_b["option_probs"].to_list()
    assert rows_a["prompt_hash"].to_list() == rows_b["prompt_hash"].to_list()


def test_raw_and_cached_budgets_run_side_by_side_in_one_sweep(tmp_path: Path, warm_engine: Path) -> None:
    """One spec with raw and cached budgets: both are keys of one sweep, each decoded through its own
    pipeline (one raw pass and one cache pass per video), and the metrics give each its own chain."""
    import asyncio

    import ray

    from engine.frames.decode import DECODE_CALLS
    from engine.metrics.document import summary_document
    from engine.metrics.summary import SummaryOptions, load_rows, summary_tables
    from engine.sweep import Sweep, start_backends

    d = small_spec_dict(tmp_path / "out", budgets=[{"frames": 0}, {"frames": 2}, {"frames": 4},
                                                   {"frames": 2, "pipeline": "cached"},
                                                   {"frames": 4, "pipeline": "cached"}])
    d["decode"] = {"max_videos_in_flight": 2, "cache_dir": str(tmp_path / "frames")}
    spec = parse_spec(d)
    assert [b.budget_id for b in spec.budgets] == ["text", "f2", "f4", "f2-cached", "f4-cached"]

    async def go():
        backends = await start_backends(spec)
        try:
            before = dict(DECODE_CALLS)
            summary = await Sweep(spec, backends=backends).run()
            return before, dict(DECODE_CALLS), summary
        finally:
            await asyncio.gather(*(x.close() for x in backends.values()))
            ray.shutdown()

    before, after, summary = asyncio.run(go())
    assert summary.jobs_ok == 3 * 3 * 5 and summary.jobs_failed == 0
    calls = {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}
    assert len(calls) == 3 and set(calls.values()) == {2}  # per video: the raw pass and the cache's fill
    rows = ResultsDir.open(tmp_path / "out").scan().collect()
    pipelines = dict(rows.filter(pl.col("frames") > 0).group_by("budget_id").agg(pl.col("pipeline").unique())
                     .select("budget_id", pl.col("pipeline").list.join(",")).iter_rows())
    assert pipelines == {"f2": "raw", "f4": "raw", "f2-cached": "cached", "f4-cached": "cached"}
    assert any((tmp_path / "frames").rglob("*.fsf"))  # the cached budgets went through the frame cache
    opts = SummaryOptions(n_boot=0)
    doc = summary_document(summary_tables(load_rows(tmp_path / "out"), opts), opts)
    assert [(g["protocol_id"], g["grid"], g["n_items"]) for g in doc["groups"]] == [
        ("default", ["text", "f2", "f4"], 9), ("cached", ["text", "f2-cached", "f4-cached"], 9)]
    assert [(r["protocol_a"], r["protocol_b"], r["n_items"]) for r in doc["robustness"]] == [("cached", "default", 9)]


def test_two_sweeps_of_other_videos_under_the_same_names_share_no_cache_entry(tmp_path: Path,
                                                                              warm_engine: Path) -> None:
    """Two synthetic sets with the same video ids but other videos (size, length), one after the other on one
    engine: their media uuids differ (vLLM keys its processor, encoder and prefix caches by them; a shared
    uuid served the first set's vision embeddings to the second, which came back as NaN letter scores or,
    worse, as answers about the wrong video), and every row is ok."""
    import asyncio

    import ray

    from engine.sweep import Sweep, start_backends

    small = parse_spec(small_spec_dict(tmp_path / "small", budgets=[{"frames": 0}, {"frames": 8}]))
    d = small_spec_dict(tmp_path / "large", budgets=[{"frames": 0}, {"frames": 8}])
    d["dataset"].update(seconds=6.0, width=128, height=96)
    large = parse_spec(d)

    async def go():
        backends = await start_backends(small)
        try:
            return [await Sweep(s, backends=backends).run() for s in (small, large)]
        finally:
            await asyncio.gather(*(x.close() for x in backends.values()))
            ray.shutdown()

    for summary in asyncio.run(go()):
        assert summary.jobs_ok == 3 * 3 * 2 and summary.jobs_failed == 0
    a, b = (ResultsDir.open(tmp_path / n).scan().filter(pl.col("frames") > 0).collect() for n in ("small", "large"))
    assert set(a["video_id"]) == set(b["video_id"])  # the same names ...
    assert not set(a["media_uuid"]) & set(b["media_uuid"])  # ... never the same cache entries
    assert a["media_uuid"].n_unique() == b["media_uuid"].n_unique() == 3  # one per video: its questions share it


def _run_cli(spec: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*FRAMESWEEP, "run", str(spec)], capture_output=True, text=True, timeout=timeout)


def test_a_changed_spec_is_refused_and_new_budgets_resume(tmp_path: Path, warm_engine: Path) -> None:
    """The issue's case through real runs: another system prompt and scoring = "generate" on the same sweep_id and
    out dir went on as '18 already committed' (exit 0) and the manifest took the new spec while every row answered
    the old prompt. Now it stops before any work (exit 2), naming the keys' model/dataset/budget and the fields;
    a spec that only adds a budget resumes, and every row carries its answer fingerprint."""
    out = tmp_path / "out"
    base = small_spec_dict(out, budgets=[{"frames": 0}, {"frames": 2}])
    first = _run_cli(write_toml(tmp_path / "a.toml", base))
    assert first.returncode == 0 and "18 ok" in first.stdout, first.stdout + first.stderr
    shards, manifest = _shards(out), (out / "manifest.json").read_bytes()

    changed = {**base, "prompt": {"scoring": "generate", "system_prompt": "Answer with the letter only."}}
    refused = _run_cli(write_toml(tmp_path / "b.toml", changed))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    err = " ".join(refused.stderr.split())  # rich wraps long lines
    for budget in ("text", "f2"):
        assert f"model tiny, dataset synthetic, budget {budget} (9 key(s))" in err, refused.stderr
    assert "prompt.scoring: 'letter' -> 'generate'" in err
    assert "prompt.system_prompt: None -> 'Answer with the letter only.'" in err and "Traceback" not in err
    assert _shards(out) == shards and (out / "manifest.json").read_bytes() == manifest  # nothing touched

    grown = {**base, "budgets": [{"frames": 0}, {"frames": 2}, {"frames": 4}]}
    more = _run_cli(write_toml(tmp_path / "c.toml", grown))
    assert more.returncode == 0 and "9 ok, 0 failed, 18 already committed" in more.stdout, more.stdout + more.stderr
    rows = ResultsDir.open(out).scan().collect()
    assert rows["answer_fingerprint"].null_count() == 0
    per_budget = dict(rows.group_by("budget_id").agg(pl.col("answer_fingerprint").unique()).iter_rows())
    assert all(len(fps) == 1 for fps in per_budget.values()) and len({fps[0] for fps in per_budget.values()}) == 3
    m = json.loads((out / "manifest.json").read_text())
    assert {b: fps for b, fps in m["answer_fingerprints"]["tiny"]["synthetic"].items()} == per_budget
    assert [h["jobs_pending"] for h in m["history"]] == [18, 9]  # the refused run left no entry


def test_a_deleted_lock_never_lets_two_drivers_write(tmp_path: Path, warm_engine: Path) -> None:
    """Deleting OUT/.lock during a real run let a second driver run every job again (90 keys written twice).
    Now the driver notices before its next commit: with the name gone it takes a new .lock and goes on (a second
    driver is refused at once, before it loads anything); when another driver's .lock is there, it stops without
    committing (exit 3, one sentence). Either way every key is written once."""
    import fcntl

    n_videos = 100  # enough work that the run is still going when the second driver starts
    out = tmp_path / "deleted"
    spec = _spec(tmp_path, out, n_videos=n_videos, commit_interval_s=0.25)
    expected = {("tiny", "synthetic", f"syn0-{v:04d}/{q}", b) for v in range(n_videos)
                for q in ("flash_count", "first_colour", "static_shape") for b in ("text", "f2", "f4", "f8")}
    proc = _start(spec)
    _wait_for_shards(proc, out, 1)
    (out / ".lock").unlink()
    t0 = time.monotonic()
    while not (out / ".lock").exists():  # taken again at the driver's next commit
        assert proc.poll() is None and time.monotonic() - t0 < 60, "the driver did not take a new .lock"
        time.sleep(0.02)
    second = _run_cli(spec, timeout=120)
    assert proc.poll() is None, "the first run ended before the second started: the test needs more work"
    assert second.returncode == 3 and "being written by another framesweep driver" in second.stderr, \
        second.stdout + second.stderr
    log = proc.communicate(timeout=600)[0]
    assert proc.returncode == 0, log
    assert "was deleted while this driver held it; it is taken again" in " ".join(log.split())
    keys = _keys(ResultsDir.open(out).scan().collect())
    assert len(keys) == len(set(keys)) and set(keys) == expected

    # replaced: another driver made and locked a new .lock; this one stops at its next commit
    out = tmp_path / "replaced"
    spec = _spec(tmp_path, out, n_videos=60, commit_interval_s=0.25)
    proc = _start(spec)
    _wait_for_shards(proc, out, 1)
    (out / ".lock").unlink()
    fd = os.open(out / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a second driver's start does
        log = proc.communicate(timeout=120)[0]
        assert proc.returncode == 3, log
        flat = " ".join(log.split())
        assert ".lock was replaced while this driver held it" in flat and "stopped without committing" in flat
        assert "Traceback" not in log
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    rerun = _run_cli(spec, timeout=600)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    keys = _keys(ResultsDir.open(out).scan().collect())
    assert len(keys) == len(set(keys)) and len(keys) == 60 * 3 * 4
