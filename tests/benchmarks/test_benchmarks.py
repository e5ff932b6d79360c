"""The benchmarks run end to end on a minimal grid and write their JSON with the fixed keys
(their timings are measurements, not test results: nothing here asserts wall-clock)."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

import polars as pl
import pytest
from helpers.lmms import needs_lmms

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)

ROOT = Path(__file__).resolve().parents[2]


def test_sweep_throughput_writes_its_json(tmp_path: Path, tiny_qwen25: Path) -> None:
    out = tmp_path / "tp.json"
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "sweep_throughput.py"), "--videos", "2", "--questions", "2",
         "--budgets", "0,4", "--seconds", "2", "--fps", "8", "--size", "96x64", "--rss-sizes", "1,2",
         "--output-json", str(out)],
        capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    data = json.loads(out.read_text())
    fixed = ["raw_engine_s", "framesweep_s", "naive_s", "decode_only_s", "jobs", "prompt_tokens",
             "ratio_framesweep_over_raw", "ratio_naive_over_framesweep", "peak_rss_mb", "cold_start_s", "warm_start_s"]
    assert list(data)[:len(fixed)] == fixed
    # start-up of whole `framesweep run` processes, cold then with the engine up; the first row comes
    # before the process ends
    assert 0 < data["cold_start_s"] <= data["cold_run_s"] and 0 < data["warm_start_s"] <= data["warm_run_s"]
    assert data["engine_reused"] is True  # the strategies ran on the engine `engines up` started for the warm run
    assert data["jobs"] == 2 * 2 * 2 and data["prompt_tokens"] > 0
    assert all(data[k] > 0 for k in ("raw_engine_s", "framesweep_s", "naive_s", "decode_only_s", "peak_rss_mb"))
    assert abs(data["ratio_naive_over_framesweep"] - data["naive_s"] / data["framesweep_s"]) < 1e-9
    assert set(data["peak_rss_mb_by_videos"]) == {"1", "2"}
    assert "naive/fs=" in r.stdout and "warm_start=" in r.stdout  # the one summary line


def _no_peer_python(tmp_path: Path) -> Path:
    """An interpreter without lmms-eval: a fresh, empty venv's, isolated (`-I`) so that no PYTHONPATH of this
    environment lends it one."""
    venv.create(tmp_path / "no-peer", with_pip=False)
    wrapper = tmp_path / "no-peer-python"
    wrapper.write_text(f'#!/bin/sh\nexec "{tmp_path / "no-peer" / "bin" / "python"}" -I "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def test_peer_sweep_measures_both_sides_or_says_the_peer_is_missing(tmp_path: Path, tiny_qwen25: Path) -> None:
    """Given an interpreter without lmms-eval (a fresh, empty venv: this one may have it), the run times framesweep
    alone, says so, and gives no ratio (no figure recorded elsewhere stands in for the peer); date and machine are
    part of every result."""
    out = tmp_path / "peer-out.json"
    no_peer = _no_peer_python(tmp_path)
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "peer_sweep.py"), "--videos", "1", "--questions", "2",
         "--seconds", "2", "--fps", "8", "--size", "96x64", "--budgets", "0,4", "--output-json", str(out),
         "--lmms-python", str(no_peer)],
        capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    data = json.loads(out.read_text())
    assert list(data) == ["date", "machine", "versions", "framesweep_dataset", "budgets", "items", "lmms_eval_installed",
                          "rounds", "framesweep_s", "framesweep_first_row_s", "lmms_eval_s",
                          "ratio_lmms_eval_over_framesweep"]
    assert data["framesweep_dataset"] == "synthetic"  # framesweep's own adapter (--bridge: the lmms-eval task's)
    assert data["lmms_eval_installed"] is False and data["versions"]["lmms_eval"] is None
    assert data["lmms_eval_s"] is None and data["ratio_lmms_eval_over_framesweep"] is None
    assert data["budgets"] == [0, 4] and data["items"] == 2 and data["date"].startswith("20")
    assert {"cpu_count", "memory_gib", "load_average_at_start", "platform"} <= set(data["machine"])
    (one,) = data["rounds"]
    assert 0 < one["framesweep_first_row_s"] <= one["framesweep_s"]
    assert data["framesweep_s"] == [round(one["framesweep_s"], 2)] * 2
    assert one["framesweep_engine"]["start_s"] > 0  # where the cold start goes, from the run's summary.json
    started = one["framesweep_phases"]  # and from its log: seconds from launch to each phase
    assert 0 < started["starting Ray"] < started["loading m"] <= one["framesweep_first_row_s"], started
    assert "lmms-eval is not installed (give --lmms-python): no comparison" in r.stdout


@needs_lmms
def test_peer_sweep_bridged_runs_the_lmms_eval_task_through_the_adapter(tmp_path: Path, tiny_qwen25: Path) -> None:
    """--bridge: framesweep's side sweeps the peer's own lmms-eval task (benchmarks/lmms_task) through the lmms_eval
    adapter; every item at every budget is an ok row (the peer side left out: an interpreter without lmms-eval)."""
    out = tmp_path / "peer-bridge.json"
    no_peer = _no_peer_python(tmp_path)
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "peer_sweep.py"), "--bridge", "--videos", "1", "--questions", "2",
         "--seconds", "2", "--fps", "8", "--size", "96x64", "--budgets", "0,4", "--output-json", str(out),
         "--lmms-python", str(no_peer)],
        capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    data = json.loads(out.read_text())
    assert data["framesweep_dataset"] == "lmms_eval" and data["items"] == 2
    assert data["rounds"][0]["framesweep_rows"] == 2 * 2  # 2 items x (text, 4 frames), the task's own items
    assert "lmms-eval is not installed (give --lmms-python): no comparison" in r.stdout


def test_the_peer_task_reads_items_and_scores_as_lmms_eval_does(tmp_path: Path) -> None:
    """The lmms-eval task of the peer benchmark, without lmms-eval: prompts, visuals and the text-only variant."""
    import yaml

    sys.path.insert(0, str(ROOT / "benchmarks" / "lmms_task"))
    import utils as peer_task

    doc = {"question_id": "v1/q1", "video": "/v/1.mp4", "question": "How many flashes?",
           "options": ["A. 1", "B. 2", "C. 3", "D. 4"], "answer": "B"}
    assert peer_task.doc_to_visual(doc) == ["/v/1.mp4"] and peer_task.doc_to_no_visual(doc) == []
    text = peer_task.doc_to_text(doc, {"pre_prompt": "", "post_prompt": "\nAnswer with the option's letter."})
    assert text == "How many flashes?\nA. 1\nB. 2\nC. 3\nD. 4\nAnswer with the option's letter."
    assert peer_task.aggregate([{"score": 1.0}, {"score": 0.0}]) == 50.0

    class _Loader(yaml.SafeLoader):
        pass

    _Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))
    video, text_only = (yaml.load((ROOT / "benchmarks" / "lmms_task" / f).read_text(), Loader=_Loader)
                        for f in ("fs_peer.yaml", "fs_peer_no_visual.yaml"))
    assert (video["task"], video["doc_to_visual"]) == ("fs_peer", "utils.doc_to_visual")
    assert (text_only["task"], text_only["doc_to_visual"]) == ("fs_peer_no_visual", "utils.doc_to_no_visual")
    assert {k: v for k, v in video.items() if k not in ("task", "doc_to_visual")} == {
        k: v for k, v in text_only.items() if k not in ("task", "doc_to_visual")}


def test_frame_sharing_writes_its_json(tmp_path: Path) -> None:
    out = tmp_path / "fs.json"
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "frame_sharing.py"), "--smoke",
         "--video-dir", str(tmp_path / "clips"), "--output-json", str(out)],
        capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    data = json.loads(out.read_text())
    fixed = ["naive_s", "per_budget_s", "union_s", "cached_s", "full_pass_s", "ratio_naive_over_union",
             "ratio_union_over_full_pass", "frames_decoded"]
    assert list(data)[:len(fixed)] == fixed
    (clip,) = data["videos"]  # --smoke: one 20 s 320x180 clip
    assert (clip["n_frames"], clip["width"], clip["height"]) == (600, 320, 180)
    assert clip["video"].endswith("-x264.mp4")  # encoded with libx264's defaults (B-frames)
    # the floor is the faster of the two plain passes
    assert data["full_pass_s"] == min(clip["full_pass_1thread_s"], clip["full_pass_auto_s"])
    # the union's decoder skipped unreferenced frames nobody needs: fewer pictures than frames
    assert data["frames_decoded"] < clip["pictures_decoded_union"] < clip["n_frames"]
    (by_round,) = clip["ratio_union_over_full_pass_by_round"]  # one round
    assert clip["ratio_union_over_full_pass_median_round"] == by_round
    # the union of uniform 16/32/64/128/256 over 600 frames, and 15 jobs' worth of frame requests
    from engine.config import BudgetPoint
    from engine.frames.plan import plan_budget, union_indices

    plans = [plan_budget(BudgetPoint(frames=n), 600, 30.0) for n in (16, 32, 64, 128, 256)]
    assert data["frames_decoded"] == union_indices(plans).size
    assert clip["frames_requested"] == 3 * sum(p.indices.size for p in plans)
    # one repeat: 15 naive decodes + 5 per-budget + 1 union + 1 for the views; the cached run decodes none
    assert clip["decode_calls"] == 15 + 5 + 1 + 1
    assert abs(data["ratio_naive_over_union"] - data["naive_s"] / data["union_s"]) < 1e-9
    assert "naive/union" in r.stdout


def test_metrics_scale_writes_its_json(tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "metrics_scale.py"), "--models", "2", "--items", "30",
         "--n-boot", "20", "--out", str(tmp_path / "data"), "--output-json", str(out)],
        capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    data = json.loads(out.read_text())
    assert list(data)[:4] == ["rows", "seconds", "peak_rss_mb", "n_boot"]
    budgets = pl.read_parquet(tmp_path / "data" / "results")["budget_id"].n_unique()
    assert data["rows"] == 2 * 30 * budgets and data["n_boot"] == 20 and data["groups"] == 2
    assert data["seconds"] > 0 and data["peak_rss_mb"] > 0 and data["seconds_no_boot"] > 0


def test_the_peer_counts_lmms_evals_samples_by_their_newlines(tmp_path: Path) -> None:
    """lmms-eval writes samples with ensure_ascii=False: a random model's free text may hold U+2028 or U+0085,
    which str.splitlines takes for line ends (an 18-item run counted 36)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from peer_sweep import logged_samples

    run = tmp_path / "lmms-0" / "model"
    run.mkdir(parents=True)
    lines = [json.dumps({"doc_id": i, "filtered_resps": f"A\u2028B\x85C {i}"}, ensure_ascii=False) for i in range(3)]
    (run / "20261202_samples_fs_peer.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert logged_samples(tmp_path / "lmms-0") == 3
