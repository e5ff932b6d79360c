"""What the parity tests of the lmms-eval bridge share: a task's documents written as a local copy of its hub
release, a framesweep sweep of bridged tasks on the trained tiny model, and lmms-eval's own evaluator run over the
same documents with `ReplayLmms`, a model that answers each request with the response framesweep's row recorded
for it (after checking the request is what the row was asked: the text, the video and the frame indices).

The tests (tests/e2e/test_lmms_parity*.py) say why a replay and not lmms-eval's own model wrappers.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl

from engine.config import parse_spec
from engine.datasets import build_adapter
from engine.datasets.lmms_eval import LmmsEvalSpec
from engine.metrics.document import summary_document
from engine.metrics.options import SummaryOptions
from engine.metrics.summary import load_rows, summary_tables
from engine.sweep import Sweep
from helpers.lmms import hub_release

MODEL = {"id": "seen", "family": "qwen2_5_vl", "path": "tiny:qwen2_5_vl_seen", "max_frames": 8,
         "engine": {"max_model_len": 4096, "max_num_seqs": 16, "dtype": "float32"}}
REPLAY = "framesweep_replay"
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


def release(root: Path, task: Task) -> Path:
    """A local copy of the task's hub dataset under `root`/<task> (`helpers.lmms.hub_release`)."""
    return hub_release(root / task.name, task.config, task.split, task.docs)


def sweep(out: Path, releases: dict[str, Path], budgets: tuple[int, ...], *, policy: str = "uniform",
          extra: dict[str, Any] | None = None) -> None:
    import ray

    spec = {"sweep_id": "parity", "models": [MODEL],
            "datasets": [{"name": "lmms_eval", "id": t, "task": t, "dataset_path": str(p), **(extra or {})}
                         for t, p in releases.items()],
            "budgets": [{"frames": k, "policy": policy} for k in budgets],
            "prompt": {"scoring": "generate"},
            "decode": {"max_videos_in_flight": 1}, "store": {"out_dir": str(out), "commit_interval_s": 0.5}}
    try:
        summary = asyncio.run(Sweep(parse_spec(spec)).run())
    finally:
        ray.shutdown()
    assert summary.jobs_failed == 0, summary


def qwen_prompt(contexts: str, media: str = "video") -> str:
    """framesweep's Qwen2.5-VL prompt around one video (or, `media` ``"image"``, one image) and a task's text
    (`engine.backends.families`)."""
    pad = {"video": "<|video_pad|>", "image": "<|image_pad|>"}[media]
    return ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
            f"<|vision_start|>{pad}<|vision_end|>{contexts}<|im_end|>\n<|im_start|>assistant\n")


def row_prompt_hash(contexts: str, media_uuid: str | None, media: str = "video") -> str:
    """A row's `prompt_hash` had it been asked with `contexts` (`engine.backends.prompts.prompt_hash`): an image's
    request carries no video uuid, so pass None for an image."""
    return hashlib.sha256(f"{qwen_prompt(contexts, media)}\x00{media_uuid or ''}".encode()).hexdigest()[:16]


class PyAVReader:
    """decord's VideoReader as lmms-eval's vllm wrapper uses it (len, get_batch(...).asnumpy()), on PyAV; records
    the indices asked for."""

    asked: ClassVar[list[list[int]]] = []
    total = 0

    def __init__(self, path: str, ctx: Any = None) -> None:
        import av

        with av.open(path) as container:
            self.frames = np.stack([f.to_ndarray(format="rgb24") for f in container.decode(video=0)])

        PyAVReader.total = len(self.frames)

    def __len__(self) -> int:
        return len(self.frames)

    def get_batch(self, indices: list[int]) -> Any:
        PyAVReader.asked.append(list(indices))
        frames = self.frames[indices]
        return type("Batch", (), {"asnumpy": lambda self: frames})()


def lmms_vllm_indices(video: str, max_frame_num: int) -> list[int]:
    """The frame indices lmms-eval 0.7.3's ``vllm`` wrapper decodes from `video` for `max_frame_num` frames: its
    own `VLLM.encode_video`, run with a PyAV reader in place of decord."""
    from lmms_eval.models.simple import vllm as lmms_vllm

    wrapper = type("Wrapper", (), {"max_frame_num": max_frame_num, "_maybe_resize_image": lambda self, img: img})()
    old = lmms_vllm.VideoReader, lmms_vllm.cpu
    lmms_vllm.VideoReader, lmms_vllm.cpu = PyAVReader, lambda i: None
    try:
        PyAVReader.asked.clear()
        lmms_vllm.VLLM.encode_video(wrapper, video)
        [indices] = PyAVReader.asked
        return indices
    finally:
        lmms_vllm.VideoReader, lmms_vllm.cpu = old


def replay_class() -> type:
    from lmms_eval.api.model import lmms

    class ReplayLmms(lmms):
        """Answers each lmms-eval request with the response framesweep recorded for its document at one budget
        (``model_args``: ``replay=<json file>``: per task, per framesweep item id, the row's response, prompt
        hash, media uuid, video and frame indices), after checking the request is what the row was asked: a video
        task's text, video file and frame indices (`_video`), an image task's (``"media": "image"``) text and
        image pixels (`_image`)."""

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
                visuals = doc_to_visual(self.task_dict[task][split][doc_id])
                check = self._image if self.replay.get("media") == "image" else self._video
                ReplayLmms.seen.append({"task": task, "doc_id": doc_id, "budget": self.replay["frames"],
                                        **check(contexts, visuals, row)})
                out.append(row["response"])
            return out

        def _video(self, contexts: str, visuals: list[Any], row: dict[str, Any]) -> dict[str, Any]:
            """The text, the one video file and lmms-eval's frame indices against the row's."""
            [video] = visuals
            return {"prompt_hash": row_prompt_hash(contexts, row["media_uuid"]) == row["prompt_hash"],
                    "video": Path(video).resolve() == Path(row["video"]).resolve(),
                    "indices": (lmms_vllm_indices(video, self.replay["frames"]), row["frame_indices"]),
                    "n_frames": (PyAVReader.total, row["video_frames"])}

        def _image(self, contexts: str, visuals: list[Any], row: dict[str, Any]) -> dict[str, Any]:
            """The text (Qwen's image prompt) and the one PIL image's pixels against the image file the row was
            asked with (the adapter's image cache)."""
            from PIL import Image

            [image] = visuals
            with Image.open(row["video"]) as asked:
                same = isinstance(image, Image.Image) and np.array_equal(np.asarray(image.convert("RGB")),
                                                                         np.asarray(asked.convert("RGB")))
            return {"prompt_hash": row_prompt_hash(contexts, None, "image") == row["prompt_hash"],
                    "pixels": same, "size": image.size}

        def loglikelihood(self, requests: list[Any]) -> list[tuple[float, bool]]:
            raise NotImplementedError("the bridged tasks generate")

        def generate_until_multi_round(self, requests: list[Any]) -> list[str]:
            raise NotImplementedError("the bridged tasks are single turn")

    return ReplayLmms


def register_replay() -> type:
    """`ReplayLmms` in lmms-eval's model registry, by class path as its built-in models are."""
    from lmms_eval.models import MODEL_REGISTRY_V2
    from lmms_eval.models.registry_v2 import ModelManifest

    cls = replay_class()
    sys.modules[__name__].ReplayLmms = cls  # type: ignore[attr-defined]  # importable by the path below
    MODEL_REGISTRY_V2.register_manifest(ModelManifest(model_id=REPLAY, simple_class_path=f"{__name__}.ReplayLmms"),
                                        overwrite=True)
    return cls


def lmms_eval_results(task: Task, release: Path, replay: Path,
                      model_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """lmms-eval's own evaluation of `task` over the documents of `release` (`simple_evaluate`'s result, its samples
    logged). The task's YAML as lmms-eval's TaskManager reads it, its data read from `release` (the download kwargs
    dropped: no hub); `model_kwargs`: entries set in its `lmms_eval_specific_kwargs` default (e.g. ``frame_num``)."""
    from lmms_eval import evaluator
    from lmms_eval.tasks import TaskManager

    manager = TaskManager(verbosity="ERROR")
    config = dict(manager._get_config(task.name))
    config["dataset_path"] = str(release)
    config["dataset_kwargs"] = {}
    if model_kwargs:
        sections = dict(config.get("lmms_eval_specific_kwargs") or {})
        config["lmms_eval_specific_kwargs"] = {**sections, "default": {**sections.get("default", {}), **model_kwargs}}
    result = evaluator.simple_evaluate(model=REPLAY, model_args=f"replay={replay}", tasks=[config],
                                       task_manager=manager, bootstrap_iters=0, log_samples=True,
                                       verbosity="ERROR", process_docs_parallel=1)
    assert result is not None
    return dict(result)


def lmms_eval_reports(task: Task, release: Path, replay: Path,
                      model_kwargs: dict[str, Any] | None = None) -> tuple[float, list[int]]:
    """lmms-eval's reported score of the task's first metric over the documents of `release`, and the doc ids it
    scored (`lmms_eval_results`)."""
    result = lmms_eval_results(task, release, replay, model_kwargs)
    samples = result["samples"][task.name]
    return float(result["results"][task.name][f"{task.metric},none"]), sorted(s["doc_id"] for s in samples)


def replay_file(path: Path, rows: pl.DataFrame, frames: int, tasks: list[Task],
                 releases: dict[str, Path], *, media: str = "video", spec: dict[str, Any] | None = None) -> Path:
    """What `ReplayLmms` answers at one budget: per task, per lmms-eval doc id, the row of that document and the
    video (`media` ``"image"``: the image file) its item was asked with: the adapter's, built with the sweep's
    `spec` fields (rows keep the video id, not the file). An image task's rows are at its image budget (1 frame)."""
    mine = rows.filter(pl.col("frames") == frames)
    table: dict[str, dict[str, Any]] = {}
    for task in tasks:
        files = {it.item_id: str(it.video_path) for it in build_adapter(LmmsEvalSpec(
            name="lmms_eval", task=task.name, dataset_path=releases[task.name], **(spec or {}))).items()}
        by_item = {r["item_id"]: r for r in mine.filter(pl.col("dataset") == task.name).iter_rows(named=True)}
        table[task.name] = {str(i): {**{k: by_item[task.key(i)][k] for k in (
            "response", "prompt_hash", "media_uuid", "frame_indices", "video_frames")},
            "video": files[task.key(i)]} for i in range(len(task.docs)) if task.key(i) in by_item}
    path.write_text(json.dumps({"frames": frames, "media": media, "rows": table}))
    return path


def official(out: Path) -> tuple[dict[tuple[str, int], float], dict[str, int]]:
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


def generation(out: Path) -> tuple[dict[tuple[str, int], float], dict[str, int]]:
    """framesweep's paired metrics of open items (the metrics document's ``generation`` block): the mean score per
    (task, frames), and each task's paired item count."""
    opts = SummaryOptions(n_boot=0)
    doc = summary_document(summary_tables(load_rows(out), opts), opts)
    means, paired = {}, {}
    for group in doc["groups"]:
        block = group["generation"] or {"n_items": 0, "mean_score": {}}
        paired[group["dataset"]] = block["n_items"]
        for budget, value in block["mean_score"].items():
            means[(group["dataset"], group["budget_frames"][budget])] = value
    return means, paired
