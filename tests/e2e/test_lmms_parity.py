"""A bridged lmms-eval run's official score per budget is what lmms-eval's own evaluator reports on the same items.

Three real lmms-eval tasks (the installed package's YAMLs and utils, unmodified): ``videomme``, ``nextqa_mc_test``
and ``perceptiontest_val_mc``,
over small local data in each task's real schema, written here (no hub). Their videos are the synthetic v2 clips
the trained tiny model `tiny:qwen2_5_vl_seen` learned (64 frames, 8 fps) and their questions are those clips'
questions, so the model's answers depend on what it is shown and vary with the budget.

1. framesweep sweeps the three tasks on the real CPU engine at 2, 4 and 8 frames (policy ``uniform``), the answers
   generated as lmms-eval generates them (``scoring = "generate"``, the task's generation_kwargs).
2. lmms-eval's own evaluator (`lmms_eval.evaluator.simple_evaluate`) runs each task on the same documents, once per
   budget, with `ReplayLmms`, a model registered as lmms-eval 0.7.3 registers one (a `ModelManifest` in
   `MODEL_REGISTRY_V2`, the class an `lmms` subclass). It is the one stand-in: it answers each request with the
   response framesweep's row recorded for that document at that budget. lmms-eval's own wrappers cannot give the
   model framesweep's inputs on a CPU machine: its ``vllm`` wrapper sends a video as separate PNG images (plus a
   last frame, below), and its transformers ``qwen2_5_vl`` wrapper computes the video's positions differently from
   vLLM, so the same tiny model answers otherwise. What the replay checks per request, before answering:
   - its ``contexts`` (the task's doc_to_text, as lmms-eval built it) is the text the row was asked with: the row
     keeps `prompt_hash` (the family's whole prompt and the media uuid), rebuilt here from ``contexts`` in the
     Qwen2.5-VL chat template framesweep sends;
   - its visual (the task's doc_to_visual) is the one video file the row was decoded from;
   - the frame indices lmms-eval's ``vllm`` wrapper samples (its own `VLLM.encode_video`, run on that file with a
     PyAV reader in place of decord, which is not installed) are the row's `frame_indices`. They agree here because
     framesweep's ``uniform`` policy is ``rint(linspace(0, n - 1, k))`` and lmms-eval's is
     ``linspace(0, n - 1, k, dtype=int)`` (truncation): the two are equal where every point of the linspace has
     a fractional part below one half, as for 64 frames at 2, 4 and 8 (63 / (k - 1) is whole). They differ
     elsewhere (64 frames at 3: framesweep 0, 32, 63; lmms-eval 0, 31, 63); no framesweep policy truncates.
     lmms-eval also appends the last frame where the linspace lacks it, which only happens at k = 1 (it sends
     frames 0 and n - 1) and k = 0 (frame n - 1; framesweep's 0 frames is text only): those budgets are not
     compared (`test_where_lmms_evals_sampling_differs_from_uniform`).
3. lmms-eval's reported score of the task's first metric, per budget, equals framesweep's `lmms_eval_score` of that
   budget in the metrics document, and framesweep's paired metrics are over the same documents.

lmms-eval 0.7.3's evaluator calls `_enable_reentrant_filelocks`, which imports ``filelock._api``, a module
filelock 4 removed: with filelock 4 (framesweep's environment) it cannot start. The test replaces that one patch (a
re-entrancy fix for dataset locks shared by several processes) with a no-op; the tasks load and score unchanged.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl
import pytest
import yaml
from helpers.lmms import NEEDS_LMMS, empty_hf_home

from engine.config import parse_spec
from engine.datasets import build_adapter
from engine.datasets.lmms_eval import LmmsEvalSpec
from engine.datasets.synthetic import SyntheticBenchmark, SyntheticDatasetSpec
from engine.frames.plan import uniform
from engine.metrics.document import summary_document
from engine.metrics.options import SummaryOptions
from engine.metrics.summary import load_rows, summary_tables
from engine.results import ResultsDir
from engine.sweep import Sweep

pytestmark = [
    pytest.mark.engine,  # starts processes (see conftest: the fast tier)
    *NEEDS_LMMS,
]

SEED, VIDEOS, KINDS = 77, 3, ("first_colour", "last_colour", "flash_count")
BUDGETS = (2, 4, 8)
MODEL = {"id": "seen", "family": "qwen2_5_vl", "path": "tiny:qwen2_5_vl_seen", "max_frames": 8,
         "engine": {"max_model_len": 4096, "max_num_seqs": 16, "dtype": "float32"}}
REPLAY = "framesweep_replay"
# Video-MME's task type of each synthetic question (its aggregation counts only the categories it knows)
TASK_TYPES = {"first_colour": "Attribute Perception", "last_colour": "Temporal Perception",
              "flash_count": "Counting Problem"}
LETTERS = "ABCDE"


@dataclass(frozen=True)
class Task:
    """One lmms-eval task of the test: its documents and where its utils look for their videos."""

    name: str
    docs: list[dict[str, Any]]
    config: str | None  # the hub dataset's config (`dataset_name` of the YAML)
    split: str
    media: str  # under HF_HOME: where the task's utils look for the videos
    metric: str  # the YAML's first metric

    def key(self, doc_id: int) -> str:
        """framesweep's item id of lmms-eval's document (`question_id`, else the doc id)."""
        return str(self.docs[doc_id].get("question_id", doc_id))


def _tasks(root: Path) -> tuple[list[Task], dict[str, Path]]:
    """Video-MME, NExT-QA and PerceptionTest documents asking the synthetic clips' questions; the clips by video id."""
    bench = SyntheticBenchmark(SyntheticDatasetSpec(name="synthetic", version=2, n_videos=VIDEOS, seed=SEED,
                                                    root=root))
    items = [it for it in bench.items() if it.item_id.rsplit("/", 1)[1] in KINDS]
    videos = {it.video_id: it.video_path for it in items}
    videomme = [{"video_id": f"{i:03d}", "duration": "short", "domain": "Knowledge", "sub_category": "Humanity & History",
                 "url": "u", "videoID": it.video_id, "question_id": f"{i:03d}-1", "task_type": TASK_TYPES[it.task_type],
                 "question": it.question, "options": [f"{LETTERS[j]}. {o}" for j, o in enumerate(it.options)],
                 "answer": it.answer} for i, it in enumerate(items)]
    nextqa = [{"video": it.video_id, "frame_count": 64, "width": 112, "height": 84, "qid": i, "type": "CW",
               "question": it.question, **{f"a{j}": o for j, o in enumerate((*it.options, "none of them"))},
               "answer": LETTERS.index(it.answer)} for i, it in enumerate(items)]
    perception = [{"video_name": it.video_id, "question_id": 100 + i, "question": it.question,
                   "options": list(it.options), "answer_id": LETTERS.index(it.answer), "area": "semantics",
                   "reasoning": "descriptive", "tag": [it.task_type]} for i, it in enumerate(items)]
    return ([Task("videomme", videomme, None, "test", "videomme/data", "videomme_perception_score"),
             Task("nextqa_mc_test", nextqa, "MC", "test", "nextqa/NExTVideo", "exact_match"),
             Task("perceptiontest_val_mc", perception, "mc_question_val", "validation", "perceptiontest_val/videos",
                  "accuracy")], videos)


def _release(root: Path, task: Task) -> Path:
    """A local copy of the task's hub dataset (``<config>/<split>-00000-of-00001.parquet``, a README configs block
    for a named config) and its videos where the task's utils look for them."""
    folder = root / task.name / (task.config or "data")
    folder.mkdir(parents=True)
    pl.DataFrame(task.docs).write_parquet(folder / f"{task.split}-00000-of-00001.parquet")
    if task.config:
        block = {"configs": [{"config_name": task.config, "data_files": [
            {"split": task.split, "path": f"{task.config}/{task.split}-*.parquet"}]}]}
        (root / task.name / "README.md").write_text(f"---\n{yaml.safe_dump(block)}---\n")
    return root / task.name


def _sweep(out: Path, releases: dict[str, Path]) -> None:
    import ray

    spec = {"sweep_id": "parity", "models": [MODEL],
            "datasets": [{"name": "lmms_eval", "id": t, "task": t, "dataset_path": str(p)} for t, p in releases.items()],
            "budgets": [{"frames": k, "policy": "uniform"} for k in BUDGETS],
            "prompt": {"scoring": "generate"},
            "decode": {"max_videos_in_flight": 1}, "store": {"out_dir": str(out), "commit_interval_s": 0.5}}
    try:
        summary = asyncio.run(Sweep(parse_spec(spec)).run())
    finally:
        ray.shutdown()
    assert summary.jobs_failed == 0, summary


# ---------------------------------------------------------------------------------------------------------------
# lmms-eval's side


def qwen_prompt(contexts: str) -> str:
    """framesweep's Qwen2.5-VL prompt around one video and a task's text (`engine.backends.families`)."""
    return ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
            f"<|vision_start|><|video_pad|><|vision_end|>{contexts}<|im_end|>\n<|im_start|>assistant\n")


def row_prompt_hash(contexts: str, media_uuid: str) -> str:
    """A row's `prompt_hash` had it been asked with `contexts` (`engine.backends.prompts.prompt_hash`)."""
    return hashlib.sha256(f"{qwen_prompt(contexts)}\x00{media_uuid}".encode()).hexdigest()[:16]


class _PyAVReader:
    """decord's VideoReader as lmms-eval's vllm wrapper uses it (len, get_batch(...).asnumpy()), on PyAV; records
    the indices asked for."""

    asked: ClassVar[list[list[int]]] = []
    total = 0

    def __init__(self, path: str, ctx: Any = None) -> None:
        import av

        with av.open(path) as container:
            self.frames = np.stack([f.to_ndarray(format="rgb24") for f in container.decode(video=0)])

        _PyAVReader.total = len(self.frames)

    def __len__(self) -> int:
        return len(self.frames)

    def get_batch(self, indices: list[int]) -> Any:
        _PyAVReader.asked.append(list(indices))
        frames = self.frames[indices]
        return type("Batch", (), {"asnumpy": lambda self: frames})()


def lmms_vllm_indices(video: str, max_frame_num: int) -> list[int]:
    """The frame indices lmms-eval 0.7.3's ``vllm`` wrapper decodes from `video` for `max_frame_num` frames: its
    own `VLLM.encode_video`, run with a PyAV reader in place of decord."""
    from lmms_eval.models.simple import vllm as lmms_vllm

    wrapper = type("Wrapper", (), {"max_frame_num": max_frame_num, "_maybe_resize_image": lambda self, img: img})()
    old = lmms_vllm.VideoReader, lmms_vllm.cpu
    lmms_vllm.VideoReader, lmms_vllm.cpu = _PyAVReader, lambda i: None
    try:
        _PyAVReader.asked.clear()
        lmms_vllm.VLLM.encode_video(wrapper, video)
        [indices] = _PyAVReader.asked
        return indices
    finally:
        lmms_vllm.VideoReader, lmms_vllm.cpu = old


def _replay_class() -> type:
    from lmms_eval.api.model import lmms

    class ReplayLmms(lmms):
        """Answers each lmms-eval request with the response framesweep recorded for its document at one budget
        (``model_args``: ``replay=<json file>``: per task, per framesweep item id, the row's response, prompt
        hash, media uuid, video and frame indices), after checking the request is what the row was asked."""

        is_simple = True
        seen: ClassVar[list[dict[str, Any]]] = []

        def __init__(self, replay: str, **kwargs: Any) -> None:
            super().__init__()
            self.replay = json.loads(Path(replay).read_text())

        def generate_until(self, requests: list[Any]) -> list[str]:
            out = []
            for request in requests:
                contexts, _gen, doc_to_visual, doc_id, task, split = request.args
                row = self.replay["rows"][task][str(doc_id)]
                [video] = doc_to_visual(self.task_dict[task][split][doc_id])
                ReplayLmms.seen.append({
                    "task": task, "doc_id": doc_id, "budget": self.replay["frames"],
                    "prompt_hash": row_prompt_hash(contexts, row["media_uuid"]) == row["prompt_hash"],
                    "video": Path(video).resolve() == Path(row["video"]).resolve(),
                    "indices": (lmms_vllm_indices(video, self.replay["frames"]), row["frame_indices"]),
                    "n_frames": (_PyAVReader.total, row["video_frames"])})
                out.append(row["response"])
            return out

        def loglikelihood(self, requests: list[Any]) -> list[tuple[float, bool]]:
            raise NotImplementedError("the bridged tasks generate")

        def generate_until_multi_round(self, requests: list[Any]) -> list[str]:
            raise NotImplementedError("the bridged tasks are single turn")

    return ReplayLmms


def _register_replay() -> type:
    """`ReplayLmms` in lmms-eval's model registry, by class path as its built-in models are."""
    from lmms_eval.models import MODEL_REGISTRY_V2
    from lmms_eval.models.registry_v2 import ModelManifest

    cls = _replay_class()
    sys.modules[__name__].ReplayLmms = cls  # type: ignore[attr-defined]  # importable by the path below
    MODEL_REGISTRY_V2.register_manifest(ModelManifest(model_id=REPLAY, simple_class_path=f"{__name__}.ReplayLmms"),
                                        overwrite=True)
    return cls


def lmms_eval_reports(task: Task, release: Path, replay: Path) -> tuple[float, list[int]]:
    """lmms-eval's own evaluation of `task` over the documents of `release`: the reported score of its first metric
    and the doc ids it scored. The task's YAML as lmms-eval's TaskManager reads it, its data read from `release`
    (the download kwargs dropped: no hub)."""
    from lmms_eval import evaluator
    from lmms_eval.tasks import TaskManager

    manager = TaskManager(verbosity="ERROR")
    config = dict(manager._get_config(task.name))
    config["dataset_path"] = str(release)
    config["dataset_kwargs"] = {}
    result = evaluator.simple_evaluate(model=REPLAY, model_args=f"replay={replay}", tasks=[config],
                                       task_manager=manager, bootstrap_iters=0, log_samples=True,
                                       verbosity="ERROR", process_docs_parallel=1)
    assert result is not None
    samples = result["samples"][task.name]
    return float(result["results"][task.name][f"{task.metric},none"]), sorted(s["doc_id"] for s in samples)


def _replay_file(path: Path, rows: pl.DataFrame, frames: int, tasks: list[Task],
                 releases: dict[str, Path]) -> Path:
    """What `ReplayLmms` answers at one budget: per task, per lmms-eval doc id, the row of that document and the
    video its item was decoded from (the adapter's: rows keep the video id, not the file)."""
    mine = rows.filter(pl.col("frames") == frames)
    table: dict[str, dict[str, Any]] = {}
    for task in tasks:
        files = {it.item_id: str(it.video_path) for it in build_adapter(LmmsEvalSpec(
            name="lmms_eval", task=task.name, dataset_path=releases[task.name])).items()}
        by_item = {r["item_id"]: r for r in mine.filter(pl.col("dataset") == task.name).iter_rows(named=True)}
        table[task.name] = {str(i): {**{k: by_item[task.key(i)][k] for k in (
            "response", "prompt_hash", "media_uuid", "frame_indices", "video_frames")},
            "video": files[task.key(i)]} for i in range(len(task.docs)) if task.key(i) in by_item}
    path.write_text(json.dumps({"frames": frames, "rows": table}))
    return path


def _official(out: Path) -> tuple[dict[tuple[str, int], float], dict[str, int]]:
    """framesweep's metrics document: `lmms_eval_score` per (task, frames), and each task's paired item count."""
    opts = SummaryOptions(n_boot=0)
    doc = summary_document(summary_tables(load_rows(out), opts), opts)
    scores, paired = {}, {}
    for group in doc["groups"]:
        frames = group["budget_frames"]
        paired[group["dataset"]] = group["n_items"]
        for r in group["official_scores"]:
            if r["metric"] == "lmms_eval_score":
                scores[(group["dataset"], frames[r["budget_id"]])] = r["value"]
    return scores, paired


def test_where_lmms_evals_sampling_differs_from_uniform() -> None:
    """framesweep's ``uniform`` rounds lmms-eval's linspace; lmms-eval's vllm wrapper truncates it and appends the
    last frame when missing. Equal on 64 frames at 2, 4, 8 (the budgets compared); not at 3, 1 or 0."""
    def lmms(n: int, k: int) -> list[int]:  # lmms_eval/models/simple/vllm.py, VLLM.encode_video
        picked = np.linspace(0, n - 1, k, dtype=int)
        return (picked if n - 1 in picked else np.append(picked, n - 1)).tolist()

    for k in BUDGETS:
        assert uniform(64, 8.0, k, 0).tolist() == lmms(64, k)
    assert (uniform(64, 8.0, 3, 0).tolist(), lmms(64, 3)) == ([0, 32, 63], [0, 31, 63])
    assert (uniform(64, 8.0, 1, 0).tolist(), lmms(64, 1)) == ([0], [0, 63])
    assert lmms(64, 0) == [63]


def test_the_official_score_per_budget_is_lmms_evals_own(tmp_path: Path, fs_cache: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    home = empty_hf_home(tmp_path / "hf", monkeypatch)
    tasks, videos = _tasks(tmp_path / "clips")
    releases = {}
    for task in tasks:
        releases[task.name] = _release(tmp_path / "releases", task)
        (home / task.media).mkdir(parents=True)
        for video_id, path in videos.items():
            shutil.copy(path, home / task.media / f"{video_id}.mp4")
    _sweep(tmp_path / "out", releases)
    rows = ResultsDir.open(tmp_path / "out").scan().collect()
    assert rows.height == sum(len(t.docs) for t in tasks) * len(BUDGETS)
    answers = rows["response"].to_list()
    assert len(set(answers)) > 1, answers  # the trained model's answers vary: the scores below are no constant
    official, paired = _official(tmp_path / "out")

    from lmms_eval import evaluator

    monkeypatch.setattr(evaluator, "_enable_reentrant_filelocks", lambda: None)  # filelock 4: see the docstring
    replay = _register_replay()
    replay.seen.clear()
    for task in tasks:
        for frames in BUDGETS:
            table = _replay_file(tmp_path / f"replay-{task.name}-{frames}.json", rows, frames, tasks, releases)
            reported, doc_ids = lmms_eval_reports(task, releases[task.name], table)
            assert reported == pytest.approx(official[(task.name, frames)], abs=1e-9), (task.name, frames)
            # framesweep's paired metrics are over the documents lmms-eval scored, at every budget
            assert doc_ids == list(range(len(task.docs))) == list(range(paired[task.name]))
            mine = rows.filter((pl.col("dataset") == task.name) & (pl.col("frames") == frames))
            assert sorted(mine["item_id"]) == sorted(task.key(i) for i in doc_ids)
    assert len(replay.seen) == len(rows)  # every request lmms-eval made was one row of the sweep
    for seen in replay.seen:
        lmms_indices, row_indices = seen["indices"]
        assert seen["prompt_hash"] and seen["video"] and lmms_indices == row_indices, seen
        assert seen["n_frames"][0] == seen["n_frames"][1] == 64, seen  # the frame count both sample from
