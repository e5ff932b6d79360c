"""import-lmms-eval over a folder of runs, as lmms-eval 0.7 writes them: each log's frame count, model and
task come from its own results.json; contradictions, unexpanded model names, conflicting logs and another
sweep's directory are refused before anything is written.

The folder holds what `lmms-eval --model qwen2_5_vl --log_samples --output_path logs` leaves after four runs
on 18 Video-MME items: three video runs (`max_num_frames=4/8/16`) under the hub id, and a text-only run
(lmms-eval's `videomme_no_visual` task, whose doc_to_visual returns no visual) launched by another script
whose `pretrained=${MODEL_DIR}` reached lmms-eval unexpanded (its model_args still say `max_num_frames=4`).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from engine.cli import app
from engine.results import own_rows
from engine.results.lmms_eval import find_runs, import_lmms_eval
from engine.results.lmms_logs import read_config
from engine.results.store import ResultStore, latest_rows, scan_results

HUB_ID = "Qwen/Qwen2.5-VL-7B-Instruct"
PLACEHOLDER = "${MODEL_DIR}"
N_ITEMS = 18
# (date_id, task, model name as in pretrained=, frames in model_args, doc_to_visual, which items are right)
RUNS = [
    ("20250611_090000", "videomme_no_visual", PLACEHOLDER, 4, "videomme_doc_to_visual_empty", lambda i: i % 3 == 0),
    ("20250611_101500", "videomme", HUB_ID, 4, "videomme_doc_to_visual", lambda i: i % 2 == 0),
    ("20250611_113000", "videomme", HUB_ID, 8, "videomme_doc_to_visual", lambda i: i % 3 != 1),
    ("20250611_130500", "videomme", HUB_ID, 16, "videomme_doc_to_visual", lambda i: i % 4 != 3),
]


def _sanitized(name: str) -> str:
    """lmms-eval's sanitize_model_name: the last two path parts, '/' (and a few others) as '__'."""
    return "__".join(name.split("/")[-2:])


def _item(i: int) -> tuple[str, str, str]:
    return f"{i // 3 + 1:03d}-{i % 3 + 1}", f"vid{i // 3:08d}", "ABCD"[i % 4]


def _results(date: str, task: str, model: str, frames: int, visual: str, **config: str) -> dict:
    args = config.get("model_args", f"pretrained={model},max_num_frames={frames},max_pixels=602112")
    task_config = {
        "task": task, "dataset_path": "lmms-lab/Video-MME",
        "dataset_kwargs": {"token": True, "cache_dir": "videomme", "video": True}, "test_split": "test",
        "full_docs": False, "process_results_use_image": False,
        "doc_to_visual": f"<function {visual} at 0x7f3b1c2d5e40>",
        "doc_to_text": "<function videomme_doc_to_text at 0x7f3b1c2d5f80>", "doc_to_target": "answer",
        "process_results": "<function videomme_process_results at 0x7f3b1c2d6020>", "description": "",
        "target_delimiter": " ", "fewshot_delimiter": "\n\n", "num_fewshot": 0,
        "metric_list": [{"metric": "videomme_perception_score", "aggregation":
                         "<function videomme_aggregate_results at 0x7f3b1c2d60c0>", "higher_is_better": True}],
        "output_type": "generate_until", "generation_kwargs": {"max_new_tokens": 16, "temperature": 0.0, "top_p": 1.0,
                                                               "num_beams": 1, "do_sample": False, "until": ["\n\n"]},
        "repeats": 1, "should_decontaminate": False, "metadata": [{"version": 0.0}],
        "lmms_eval_specific_kwargs": {"default": {"pre_prompt": "", "post_prompt": "\nAnswer with the option's "
                                                  "letter from the given choices directly."}},
    }
    return {
        "results": {task: {"alias": task, "videomme_perception_score,none": 50.0,
                           "videomme_perception_score_stderr,none": "N/A"}},
        "group_subtasks": {task: []}, "configs": {task: task_config}, "versions": {task: "Yaml"},
        "n-shot": {task: 0}, "higher_is_better": {task: {"videomme_perception_score": True}},
        "n-samples": {task: {"original": 2700, "effective": N_ITEMS}},
        "config": {"model": "qwen2_5_vl", "model_args": args, "batch_size": "1", "batch_sizes": [], "device": None,
                   "use_cache": None, "limit": float(N_ITEMS), "offset": 0, "bootstrap_iters": 100000,
                   "gen_kwargs": "", "random_seed": 0, "numpy_seed": 1234, "torch_seed": 1234, "fewshot_seed": 1234,
                   "resolved_cli_args": {"model": "qwen2_5_vl", "model_args": args, "tasks": task,
                                         "log_samples": True, "output_path": "./logs", "limit": float(N_ITEMS)}},
        "git_hash": "4f1c2ab", "git_branch": "main", "lmms_eval_version": "0.7.2", "date": date,
        "task_hashes": {task: "5c0b2e"}, "model_source": "qwen2_5_vl", "model_name": model,
        "model_name_sanitized": _sanitized(model), "system_instruction": None, "system_instruction_sha": None,
        "fewshot_as_multiturn": False, "chat_template": None, "chat_template_sha": None,
        "start_time": 1000.0, "end_time": 1900.0, "total_evaluation_time_seconds": "900.0",
    }


def _sample(i: int, right: bool) -> dict:
    qid, vid, answer = _item(i)
    pred = answer if right else "ABCD"[(i + 1) % 4]
    info = {"question_id": qid, "duration": "short", "category": "Knowledge", "sub_category": "Humanity",
            "task_category": "Counting Problem", "pred_answer": pred, "answer": answer, "score": float(right),
            "videoID": vid}
    # lmms-eval 0.7 flattens filtered_resps to the response and drops resps when they are the same
    return {"doc_id": i, "target": answer, "filtered_resps": f"{pred}.", "token_counts": [None],
            "doc_hash": f"{i:064x}", "videomme_perception_score": info, "input": f"Question {qid} ..."}


def _write_run(root: Path, date: str, task: str, model: str, frames: int, visual: str, right, **config: str) -> Path:
    d = root / _sanitized(model)
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{date}_results.json").write_text(json.dumps(_results(date, task, model, frames, visual, **config), indent=2))
    samples = d / f"{date}_samples_{task}.jsonl"
    samples.write_text("".join(json.dumps(_sample(i, right(i))) + "\n" for i in range(N_ITEMS)))
    return samples


def _logs(root: Path) -> Path:
    for run in RUNS:
        _write_run(root, *run)
    return root


def _shards(out: Path) -> list[Path]:
    return sorted((out / "results").glob("*.parquet")) if (out / "results").is_dir() else []


def test_each_log_keeps_its_own_budget_model_and_dataset(tmp_path: Path) -> None:
    out = tmp_path / "out"
    summary = import_lmms_eval([_logs(tmp_path / "logs")], out, model_id="qwen2.5-vl-7b")
    assert (summary.rows, summary.skipped) == (4 * N_ITEMS, 0)
    assert sorted(summary.placed.values()) == [("qwen2.5-vl-7b", "videomme", b) for b in ("f16", "f4", "f8", "text")]
    rows = scan_results(out).collect()
    got = rows.group_by("budget_id").agg(pl.col("frames").first(), pl.len(), pl.col("correct").sum()).sort("frames")
    assert got.rows() == [("text", 0, 18, 6), ("f4", 4, 18, 9), ("f8", 8, 18, 12), ("f16", 16, 18, 14)]
    assert set(rows["dataset"]) == {"videomme"} and set(rows["model_family"]) == {"qwen2_5_vl"}
    one = rows.filter(pl.col("item_id") == "001-2").sort("frames")  # item 1: wrong, right, wrong, right
    assert one.select("budget_id", "pred", "correct").rows() == [
        ("text", "C", False), ("f4", "C", False), ("f8", "C", False), ("f16", "B", True)]


def test_frames_contradicting_a_log_is_refused_before_writing(tmp_path: Path) -> None:
    logs, out = _logs(tmp_path / "logs"), tmp_path / "out"
    with pytest.raises(ValueError, match=r"20250611_090000_samples_videomme_no_visual.jsonl: task videomme_no_visual "
                                         r"sends no visual \(its doc_to_visual in .*20250611_090000_results.json\): a "
                                         "text-only run, which --frames 32 contradicts"):
        import_lmms_eval([logs], out, frames=32, model_id="m")
    with pytest.raises(ValueError, match=r"20250611_101500_samples_videomme.jsonl: its run records "
                                         r"max_num_frames=4 \(model_args in .*_results.json\); --frames 32"):
        import_lmms_eval([logs / _sanitized(HUB_ID)], out, frames=32)
    assert _shards(out) == []
    f16 = logs / _sanitized(HUB_ID) / "20250611_130500_samples_videomme.jsonl"
    assert import_lmms_eval([f16], out, frames=16).budgets == {f"{f16.parent.name}/{f16.name}": "f16"}  # a check


def test_text_only_log_refuses_frames(tmp_path: Path) -> None:
    samples = _write_run(tmp_path / "logs", *RUNS[0])
    with pytest.raises(ValueError, match="sends no visual .* a text-only run, which --frames 4 contradicts"):
        import_lmms_eval([samples], tmp_path / "out", frames=4, model_id="m", dataset="videomme")


def test_unexpanded_model_name_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=r"20250611_090000_results.json: model_args name the model '\$\{MODEL_DIR\}'"
                                         r": \$\{MODEL_DIR\} is an environment variable that was never "
                                         "expanded; pass --model-id"):
        import_lmms_eval([_logs(tmp_path / "logs")], out)
    assert _shards(out) == []
    video_only = import_lmms_eval([tmp_path / "logs" / _sanitized(HUB_ID)], out)  # the hub id is a model id
    assert {m for m, _, _ in video_only.placed.values()} == {HUB_ID}


def test_text_only_log_needs_a_video_run_of_its_data(tmp_path: Path) -> None:
    samples = _write_run(tmp_path / "logs", *RUNS[0])
    with pytest.raises(ValueError, match="text-only task videomme_no_visual reads lmms-lab/Video-MME test, and no "
                                         "video run of this import does; pass --dataset"):
        import_lmms_eval([samples], tmp_path / "out", model_id="m")
    summary = import_lmms_eval([samples], tmp_path / "out", model_id="m", dataset="videomme")
    assert list(summary.placed.values()) == [("m", "videomme", "text")]


def test_two_logs_one_key_different_answers_names_both(tmp_path: Path) -> None:
    logs = _logs(tmp_path / "logs")
    rerun = _write_run(tmp_path / "logs", "20250612_080000", "videomme", HUB_ID, 8, "videomme_doc_to_visual",
                       lambda i: i % 3 != 2)  # another f8 run: items 1 and 2 answered otherwise
    out = tmp_path / "out"
    with pytest.raises(ValueError) as err:
        import_lmms_eval([logs], out, model_id="m")
    msg = str(err.value)
    assert f"{rerun.parent}/20250611_113000_samples_videomme.jsonl and {rerun} both give " in msg
    assert "(model_id 'm', dataset 'videomme', item_id '001-2', budget_id 'f8'), with different answers" in msg
    assert _shards(out) == []


def test_identical_logs_and_reimports_are_idempotent(tmp_path: Path) -> None:
    logs, out = _logs(tmp_path / "logs"), tmp_path / "out"
    f8 = logs / _sanitized(HUB_ID) / "20250611_113000_samples_videomme.jsonl"
    copy = tmp_path / "copy" / f8.parent.name
    copy.mkdir(parents=True)
    for name in (f8.name, "20250611_113000_results.json"):
        shutil.copy(f8.parent / name, copy / name)
    first = import_lmms_eval([logs, copy], out, model_id="m")
    assert (first.rows, first.skipped, first.duplicates) == (4 * N_ITEMS, 0, N_ITEMS)
    again = import_lmms_eval([logs], out, model_id="m")
    assert (again.rows, again.skipped) == (0, 4 * N_ITEMS)


def test_a_key_held_with_another_answer_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    import_lmms_eval([_write_run(tmp_path / "a", *RUNS[2])], out)
    other = _write_run(tmp_path / "b", "20250612_080000", "videomme", HUB_ID, 8, "videomme_doc_to_visual",
                       lambda i: True)
    with pytest.raises(ValueError, match=f"{re.escape(str(other))}: {re.escape(str(out))} already holds .*'f8'\\) with "
                                         "another answer"):
        import_lmms_eval([other], out)
    assert len(_shards(out)) == 1


def _sweep_dir(out: Path, sweep_id: str = "qwen-frames") -> None:
    with ResultStore(out) as store:  # what `framesweep run` leaves: a manifest naming the sweep
        store.write_manifest({"sweep_id": sweep_id, "spec": {"sweep_id": sweep_id}})


def test_sweep_directory_needs_its_sweep_id(tmp_path: Path) -> None:
    logs, out = _logs(tmp_path / "logs"), tmp_path / "sweep"
    _sweep_dir(out)
    with pytest.raises(ValueError, match=r"sweep holds sweep 'qwen-frames' \(its manifest.json\): rows imported "
                                         "without --sweep-id would count for nothing there; pass --sweep-id "
                                         "qwen-frames"):
        import_lmms_eval([logs], out, model_id="m")
    with pytest.raises(ValueError, match="rows imported as sweep 'other' .* pass --sweep-id qwen-frames"):
        import_lmms_eval([logs], out, model_id="m", sweep_id="other")
    assert _shards(out) == []
    summary = import_lmms_eval([logs], out, model_id="m", sweep_id="qwen-frames")
    assert summary.rows == 4 * N_ITEMS
    assert own_rows(out)[0].collect().height == 4 * N_ITEMS
    assert json.loads((out / "manifest.json").read_text())["spec"] == {"sweep_id": "qwen-frames"}  # kept


def test_rows_of_another_sweep_do_not_block_a_corrected_import(tmp_path: Path) -> None:
    logs, out = _logs(tmp_path / "logs"), tmp_path / "sweep"
    import_lmms_eval([logs], out, model_id="m")  # rows of sweep 'lmms-eval' (as the old importer left them)
    _sweep_dir(out)  # ... in what is the directory of sweep 'qwen-frames'
    summary = import_lmms_eval([logs], out, model_id="m", sweep_id="qwen-frames")
    assert (summary.rows, summary.skipped) == (4 * N_ITEMS, 0)
    own, foreign = own_rows(out)
    assert own.collect().height == 4 * N_ITEMS and len(foreign) == 1


def test_an_earlier_import_directory_keeps_its_id(tmp_path: Path) -> None:
    logs, out = _logs(tmp_path / "logs"), tmp_path / "out"
    import_lmms_eval([logs / _sanitized(HUB_ID)], out, sweep_id="peer")
    summary = import_lmms_eval([logs], out, model_id=HUB_ID)  # no --sweep-id: the import's own directory
    assert (summary.rows, summary.skipped) == (N_ITEMS, 3 * N_ITEMS)
    assert set(latest_rows(scan_results(out)).collect()["sweep_id"]) == {"peer"}


@pytest.mark.parametrize(("args", "frames"), [
    ("pretrained=OpenGVLab/InternVL2-8B,modality=video,num_frame=16", 16),  # internvl2
    ("pretrained=lmms-lab/LLaVA-Video-7B-Qwen2,max_frames_num=64,mm_spatial_pool_mode=average", 64),  # llava_vid
    ("pretrained=Qwen/Qwen2-VL-7B-Instruct,max_num_frames=8,max_pixels=360000", 8),  # qwen2_vl
    ("pretrained=Qwen/Qwen2.5-VL-7B-Instruct,max_pixels=602112", None),  # the model's default: not recorded
    ({"pretrained": "x", "max_num_frames": 16}, 16),  # model_args recorded as a mapping
])
def test_frame_keys_of_lmms_eval_models(tmp_path: Path, args: str | dict, frames: int | None) -> None:
    """The frame count each lmms-eval model's own key records, as the import reads it from the results.json."""
    date, task, model, _, visual, right = RUNS[1]
    (run,) = find_runs([_write_run(tmp_path / "logs", date, task, model, 0, visual, right, model_args=args)])
    assert sorted(set(read_config(run).frames.values())) == ([frames] if frames else [])


def test_fps_sampling_needs_frames(tmp_path: Path) -> None:
    samples = _write_run(tmp_path / "logs", *RUNS[3], model_args=f"pretrained={HUB_ID},max_num_frames=16,fps=1.0")
    with pytest.raises(ValueError, match="sample at fps=1.0, so the frame count varies per video"):
        import_lmms_eval([samples], tmp_path / "out")
    assert import_lmms_eval([samples], tmp_path / "out", frames=16).budgets == {
        f"{samples.parent.name}/{samples.name}": "f16"}


def test_two_frame_keys_disagreeing_need_frames(tmp_path: Path) -> None:
    samples = _write_run(tmp_path / "logs", *RUNS[3], model_args=f"pretrained={HUB_ID},max_num_frames=32,nframes=16")
    with pytest.raises(ValueError, match="record max_num_frames=32 and nframes=16, not which one the model used"):
        import_lmms_eval([samples], tmp_path / "out")
    with pytest.raises(ValueError, match="--frames 8 contradicts it"):
        import_lmms_eval([samples], tmp_path / "out", frames=8)
    assert list(import_lmms_eval([samples], tmp_path / "out", frames=16).budgets.values()) == ["f16"]


def test_budget_id_over_several_frame_counts_is_refused(tmp_path: Path) -> None:
    logs = _logs(tmp_path / "logs") / _sanitized(HUB_ID)
    with pytest.raises(ValueError, match=r"--budget-id f32 would put runs of \[4, 8, 16\] frames under one budget"):
        import_lmms_eval([logs], tmp_path / "out", budget_id="f32")


def test_cli_exit_codes(tmp_path: Path) -> None:
    logs, out = _logs(tmp_path / "logs"), tmp_path / "sweep"
    runner = CliRunner()
    res = runner.invoke(app, ["import-lmms-eval", str(logs), "--out", str(out), "--frames", "32", "--model-id", "m"])
    assert res.exit_code == 2 and "a text-only run, which --frames 32 contradicts" in res.output
    assert not _shards(out)
    res = runner.invoke(app, ["import-lmms-eval", str(logs), "--out", str(out)])
    assert res.exit_code == 2 and PLACEHOLDER in res.output and "pass --model-id" in res.output
    _sweep_dir(out)
    res = runner.invoke(app, ["import-lmms-eval", str(logs), "--out", str(out), "--model-id", "m"])
    assert res.exit_code == 2 and "pass --sweep-id qwen-frames" in res.output and not _shards(out)
    res = runner.invoke(app, ["import-lmms-eval", str(logs), "--out", str(out), "--model-id", "m",
                              "--sweep-id", "qwen-frames"])
    assert res.exit_code == 0, res.output
    assert "20250611_090000_samples_videomme_no_visual.jsonl -> model m, dataset videomme, budget text" in res.output
    assert "imported 4 runs: 72 rows written, 0 already there" in res.output
    found = find_runs([logs])
    assert len(found) == 4 and found[0].results is not None


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"sweep_id": 7}'])
def test_a_damaged_manifest_is_named_not_overwritten(tmp_path: Path, text: str) -> None:
    logs, out = _logs(tmp_path / "logs"), tmp_path / "sweep"
    out.mkdir()
    (out / "manifest.json").write_text(text)
    res = CliRunner().invoke(app, ["import-lmms-eval", str(logs), "--out", str(out), "--model-id", "m"])
    assert res.exit_code == 2, res.output
    assert "manifest.json" in res.output and "Traceback" not in res.output
    assert (out / "manifest.json").read_text() == text and not _shards(out)
