"""lmms-eval's log layout, and what each log's own configuration records about its run.

``lmms-eval --log_samples --output_path OUT`` writes, per run, ``OUT/<model>/<date_id>_results.json``
and one ``OUT/<model>/<date_id>_samples_<task>.jsonl`` per task (``<model>`` is the model name
sanitised, ``<date_id>`` the run's start, e.g. ``20250611_101500``). The results.json holds the
run's ``config`` (``model``: the model class, e.g. ``qwen2_5_vl``; ``model_args``: the string given
on the command line, e.g. ``pretrained=Qwen/Qwen2.5-VL-7B-Instruct,max_num_frames=32``), the
model name lmms-eval read from model_args (``model_name``), and per task its ``configs`` (the
task's YAML as run: ``dataset_path``, ``dataset_name``, ``test_split``, ``doc_to_visual``) and
``versions``; beside them lmms-eval's version (``lmms_eval_version``), the run's ``date`` and per task a
hash of its documents (``task_hashes``).

A run is text-only when its task sends no visual: lmms-eval's ``<task>_no_visual`` variants
(``videomme_no_visual``: ``doc_to_visual`` is ``videomme_doc_to_visual_empty``, returning ``[]``)
or a task whose config has no ``doc_to_visual``. Such a run reads the same data as its video task.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["FRAME_KEYS", "LmmsRun", "LogConfig", "find_runs", "placeholder", "read_config"]

_SAMPLES = re.compile(r"^(?P<date>.+?)_samples_(?P<task>.+)\.jsonl$")
FRAME_KEYS: tuple[str, ...] = (
    "max_num_frames", "max_frames_num", "num_frames", "nframes", "max_frames", "max_frame_num", "num_frame",
    "video_max_frames", "num_video_frames", "fixed_num_frames", "frames_num", "frame_num", "num_frm")
"""model_args keys that set the number of frames a model is sent (qwen2_5_vl: max_num_frames, llava_vid and
llava_onevision: max_frames_num, internvl2: num_frame, ...)."""
# lmms-eval's own order for naming the model (GeneralConfigTracker._get_model_name)
_MODEL_KEYS = ("peft", "delta", "pretrained", "model", "model_version", "model_name", "model_id", "path", "engine")
_PLACEHOLDER = re.compile(r"\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|%[A-Za-z_][A-Za-z0-9_]*%")
_FUNCTION = re.compile(r"<function (?P<name>[\w.<>]+) at ")
_NO_VISUAL = re.compile(r"no_visual|visual_empty|text_only|textonly")


@dataclass(frozen=True)
class LmmsRun:
    """One lmms-eval samples file and the results.json of its run (if found)."""

    samples: Path
    results: Path | None
    date_id: str
    task: str


@dataclass(frozen=True)
class LogConfig:
    """What a run's results.json records about one of its tasks (all None without a results.json)."""

    source: str
    """Where it was read: the results.json, or the samples file when there is none."""
    model: str | None
    """The model name lmms-eval took from model_args (``model_name``), as written there."""
    family: str | None
    frames: dict[str, int]
    """Frame-count keys of model_args and their values."""
    fps: str | None
    visual: bool | None
    """False: the task sends no visual (a text-only run); None: the log does not say."""
    data: tuple[str, ...] | None
    """The task's source data (dataset_path, dataset_name, test_split)."""
    version: str | None
    model_args: str | None = None
    """model_args as given on lmms-eval's command line (a mapping is written ``k=v,...``)."""
    lmms_eval_version: str | None = None
    """lmms-eval's own version string (``branch@commit``; ``unknown@unknown`` for a PyPI install)."""
    task_hash: str | None = None
    """lmms-eval's hash over the task's documents as run (``task_hashes``): two logs of one task agree on it."""
    date: str | None = None
    """When lmms-eval started the run (its ``date``)."""


def find_runs(paths: Iterable[str | Path]) -> list[LmmsRun]:
    """Every ``*_samples_*.jsonl`` under the given files or directories, with its results.json."""
    files: list[Path] = []
    for p in map(Path, paths):
        files += sorted(p.rglob("*_samples_*.jsonl")) if p.is_dir() else [p]
    runs = []
    for f in files:
        m = _SAMPLES.match(f.name)
        if not m:
            raise ValueError(f"{f}: not an lmms-eval samples file (<date_id>_samples_<task>.jsonl)")
        results = f.with_name(f"{m['date']}_results.json")
        runs.append(LmmsRun(f, results if results.exists() else None, m["date"], m["task"]))
    return runs


def _model_args(config: dict[str, Any]) -> dict[str, str]:
    """``config.model_args`` as a mapping (lmms-eval splits the string on commas, then on the first '=')."""
    args = (config.get("config") or {}).get("model_args") or ""
    if isinstance(args, dict):
        return {str(k): str(v) for k, v in args.items()}
    pairs = (part.partition("=") for part in str(args).split(","))
    return {k.strip(): v.strip() for k, sep, v in pairs if sep and k.strip()}


def _frame_counts(args: dict[str, str], source: str) -> dict[str, int]:
    counts = {}
    for key in FRAME_KEYS:
        if key in args:
            if not re.fullmatch(r"\d+", args[key]):
                raise ValueError(f"{source}: model_args {key}={args[key]} is not a frame count")
            counts[key] = int(args[key])
    return counts


def _visual(task: str, task_config: dict[str, Any] | None) -> bool | None:
    """Whether the task sends a visual, by its config (None: no config recorded)."""
    if task_config is None:
        return None
    fn = task_config.get("doc_to_visual")
    if fn is None:  # lmms-eval leaves null fields out: doc_to_visual unset, the model gets no visual
        return False
    m = _FUNCTION.match(str(fn))
    name = m["name"] if m else ""
    return not (_NO_VISUAL.search(name) or _NO_VISUAL.search(task))


def read_config(run: LmmsRun) -> LogConfig:
    """What the run's results.json records for the run's task.

    Raises:
        ValueError: An unreadable results.json or an unreadable frame count, naming the file.
    """
    if run.results is None:
        return LogConfig(str(run.samples), None, None, {}, None, None, None, None)
    source = str(run.results)
    try:
        doc = json.loads(run.results.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ValueError(f"{source}: not readable as JSON ({err})") from None
    except RecursionError:  # json's decoder recurses once per level: 100,000 levels end Python's stack
        raise ValueError(f"{source}: not readable as JSON (nested too deeply)") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{source}: not an lmms-eval results.json (no JSON object)")
    args = _model_args(doc)
    task_config = (doc.get("configs") or {}).get(run.task)
    task_config = task_config if isinstance(task_config, dict) else None
    data = None
    if task_config and task_config.get("dataset_path"):
        data = tuple(str(task_config.get(k) or "") for k in ("dataset_path", "dataset_name", "test_split"))
    version = (doc.get("versions") or {}).get(run.task)
    fps = args.get("fps")
    return LogConfig(
        source=source,
        model=doc.get("model_name") or next((args[k] for k in _MODEL_KEYS if args.get(k)), None),
        family=(doc.get("config") or {}).get("model"),
        frames=_frame_counts(args, source),
        fps=fps if fps not in (None, "", "None", "none") else None,
        visual=_visual(run.task, task_config), data=data,
        version=None if version is None else str(version),
        model_args=_raw_args(doc) or None,
        lmms_eval_version=_text_or_none(doc.get("lmms_eval_version")),
        task_hash=_text_or_none((doc.get("task_hashes") or {}).get(run.task)),
        date=_text_or_none(doc.get("date")),
    )


def _raw_args(doc: dict[str, Any]) -> str:
    """model_args as lmms-eval recorded them: the command line's string, or a mapping written ``k=v,...``."""
    args = (doc.get("config") or {}).get("model_args") or ""
    return ",".join(f"{k}={v}" for k, v in args.items()) if isinstance(args, dict) else str(args)


def _text_or_none(value: Any) -> str | None:
    return None if value in (None, "") else str(value)


def placeholder(text: str) -> str | None:
    """The first unexpanded environment variable in `text` (``${MODEL_DIR}``, ``$MODEL_DIR``, ``%MODEL_DIR%``)."""
    m = _PLACEHOLDER.search(text)
    return m[0] if m else None
