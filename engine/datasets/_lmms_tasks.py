"""lmms-eval's side of the bridge: its task index, one task loaded from local data, and what the bridge refuses.

lmms-eval is an optional extra (``framesweep[lmms]``); nothing here imports it before a task is asked for, so
framesweep runs without it. A task is loaded through lmms-eval's own `TaskManager` and YAML (includes, the
``!function`` utils, ``lmms_eval_specific_kwargs``): the bridge only changes where its dataset is read
(``dataset_path``: a local copy of the task's release, else the task's hub id from the Hugging Face cache) and
never lets lmms-eval fetch media (its ``video`` / ``From_YouTube`` download steps are dropped: the media must
already be under the media root).

What the bridge cannot run faithfully is refused before any item is made (`refusal`), naming the task and the
reason: a task that is not one task (a group or tag), one whose answers are not generated text
(``output_type`` other than ``generate_until``), one with several filter pipelines (lmms-eval reports a score per
pipeline; the bridge applies a task's one pipeline before scoring), one scored by an LLM judge (its ``process_results`` reaches an HTTP or OpenAI client, or lmms-eval's
``llm_judge``) or by a server submission, one with no local score, one without a visual.
"""

from __future__ import annotations

import difflib
import functools
import importlib.metadata
import importlib.util
import inspect
import logging
import os
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

__all__ = ["INSTALL_HINT", "LMMS_EVAL_PIN", "LmmsTaskError", "LoadedTask", "TaskListing", "aggregate", "aggregation",
           "installed_version", "list_tasks", "load_task", "media_root_of", "refusal", "remember_task_folders",
           "task_config"]

log = logging.getLogger(__name__)

LMMS_EVAL_PIN = "0.7.3"
"""The lmms-eval release the bridge is tested with (``framesweep[lmms]`` pins it). Earlier wheels on PyPI lack
the task YAMLs (0.6.1, 0.7) or their extensionless include files (0.7.1, 0.7.2): their task list is empty or
broken."""
INSTALL_HINT = (f"install it with `FRAMESWEEP_EXTRA=lmms bash tools/setup.sh` (lmms-eval=={LMMS_EVAL_PIN}, without "
                "its own requirements) or `pip install 'framesweep[lmms]'` (which also downgrades av and protobuf)")

_DOWNLOAD_KWARGS = ("video", "cache_dir", "From_YouTube", "force_download", "force_unzip", "create_link",
                    "builder_script", "token")
"""dataset_kwargs that make lmms-eval download or unpack a release (or ask for a hub token): dropped, the
bridge reads what is already on disk."""
_JUDGE_MODULES = ("openai", "requests", "httpx", "aiohttp", "lmms_eval.llm_judge", "anthropic", "google")
_JUDGE_WORDS = ("gpt", "judge", "llm_eval")
_SUBMISSION_WORDS = ("submission", "submit")


class LmmsTaskError(ValueError):
    """An lmms-eval task the bridge cannot load or run faithfully: the message names the task and the reason."""

    def __init__(self, task: str, reason: str) -> None:
        super().__init__(f"lmms-eval task {task!r}: {reason}")
        self.task = task
        self.reason = reason


def installed_version() -> str | None:
    """The installed lmms-eval's version; None when it is not installed."""
    if importlib.util.find_spec("lmms_eval") is None:
        return None
    try:
        return importlib.metadata.version("lmms_eval")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _need_lmms_eval(task: str) -> str:
    version = installed_version()
    if version is None:
        raise LmmsTaskError(task, f"lmms-eval is not installed: {INSTALL_HINT}")
    return version


@functools.cache
def _task_manager(include_path: str | None, model_name: str | None) -> Any:
    """lmms-eval's task index (it reads every task YAML once: seconds), kept per include path and model."""
    from lmms_eval import tasks

    logger = tasks.eval_logger  # lmms-eval's loguru logger: silence its line per YAML it cannot index
    logger.disable("lmms_eval")
    try:
        return tasks.TaskManager(verbosity="ERROR", include_path=include_path, model_name=model_name)
    finally:
        logger.enable("lmms_eval")


def _check_name(manager: Any, task: str, include_path: str | None) -> None:
    """Refuse a name that is not one task of the index, naming close ones."""
    if task not in manager.all_tasks:
        where = f"the installed lmms-eval {installed_version()}" + (f" or {include_path}" if include_path else "")
        close = difflib.get_close_matches(task, manager.all_subtasks, n=5)
        hint = f"; close: {', '.join(close)}" if close else "; `framesweep datasets --lmms-eval` lists them"
        raise LmmsTaskError(task, f"unknown task: not in {where}{hint}")
    kind = manager.task_index[task]["type"]
    if kind != "task":
        raise LmmsTaskError(task, f"is a {kind}, not one task: the bridge runs one task at a time (name one of its "
                            "tasks)")


def task_config(task: str, *, include_path: Path | None = None, model_name: str | None = None) -> dict[str, Any]:
    """The task's YAML as lmms-eval reads it (includes merged, ``!function`` utils imported)."""
    _need_lmms_eval(task)
    include = str(include_path) if include_path is not None else None
    manager = _task_manager(include, model_name)
    _check_name(manager, task, include)
    try:
        return dict(manager._get_config(task))
    except Exception as err:  # the task's own utils run on import (a missing module, HF_HOME unset)
        raise LmmsTaskError(task, f"its YAML or utils cannot be loaded: {type(err).__name__}: {err}") from err


_TASK_FOLDERS: dict[str, Path] = {}
"""The user's task folder (``include_path``) of each task a run or a results directory's spec named, in this
process: where the metrics step finds a task lmms-eval itself does not hold."""


def remember_task_folders(spec: Any) -> None:
    """Note the ``include_path`` of each lmms-eval dataset of a spec recorded as a mapping (a manifest's), so that a
    later `aggregation` of its task finds the task's YAML; anything malformed is skipped."""
    datasets = spec.get("datasets") if isinstance(spec, dict) else None
    for ds in datasets if isinstance(datasets, list) else []:
        if (isinstance(ds, dict) and ds.get("name") == "lmms_eval" and ds.get("include_path")
                and isinstance(ds.get("task"), str)):
            _TASK_FOLDERS[ds["task"]] = Path(str(ds["include_path"]))


def aggregation(task: str, metric: str, *, include_path: Path | None = None) -> Callable[..., Any]:
    """The task's own aggregation of `metric`, as lmms-eval's `ConfigurableTask` picks it: the metric's
    ``aggregation`` in the YAML (a ``!function`` or a registered name), else the metric's registered default.
    A task from a user's folder is looked for there (`include_path`, else the folder a spec named for the task:
    `remember_task_folders`).

    Raises `LmmsTaskError` when lmms-eval, the task or the metric is not there, or no aggregation is declared."""
    from lmms_eval.api import registry

    include_path = include_path or _TASK_FOLDERS.get(task)
    entries = task_config(task, include_path=include_path).get("metric_list") or []
    entry = next((m for m in entries if str(m.get("metric")) == metric), None)
    if entry is None:
        raise LmmsTaskError(task, f"declares no metric {metric!r} in its metric_list")
    named = entry.get("aggregation")
    found = named if callable(named) else (registry.AGGREGATION_REGISTRY.get(named) if isinstance(named, str)
                                           else registry.METRIC_AGGREGATION_REGISTRY.get(metric))
    if found is None:
        raise LmmsTaskError(task, f"its metric {metric!r} has no aggregation lmms-eval knows ({named!r})")
    return cast(Callable[..., Any], found)


def aggregate(task: str, metric: str, results: list[Any]) -> Any:
    """The task's `aggregation` of `metric` over per-document `results`, called as lmms-eval's evaluator calls it
    (``args=None`` where it takes them), its log lines silenced. Raises `LmmsTaskError` (see `aggregation`)."""
    fn = aggregation(task, metric)
    logger = _lmms_logger()
    logger.disable("")  # the task's utils log under their own module name (`utils`), not lmms_eval's
    try:
        takes_args = "args" in inspect.signature(fn).parameters
        return fn(results, args=None) if takes_args else fn(results)
    finally:
        logger.enable("")


def _lmms_logger() -> Any:
    from lmms_eval.utils import eval_logger

    return eval_logger


def _reached(fn: Callable[..., Any], seen: set[int] | None = None) -> Iterator[Any]:
    """Every global a function names, and those of the functions of its own module it calls (transitively)."""
    seen = set() if seen is None else seen
    code = getattr(fn, "__code__", None)
    if code is None or id(code) in seen:
        return
    seen.add(id(code))
    scope = getattr(fn, "__globals__", {})
    names = set(code.co_names)
    for const in code.co_consts:  # nested functions and comprehensions
        if isinstance(const, types.CodeType):
            names |= set(const.co_names)
    for name in names:
        if name not in scope:
            continue
        value = scope[name]
        yield value
        if isinstance(value, types.FunctionType) and value.__globals__ is scope:
            yield from _reached(value, seen)


def _module_name(value: Any) -> str:
    if isinstance(value, types.ModuleType):
        return value.__name__
    return str(getattr(value, "__module__", "") or "")


def _judged(fn: Callable[..., Any]) -> str | None:
    """The judge a `process_results` calls (an HTTP or OpenAI client, lmms-eval's llm_judge), else None."""
    for value in _reached(fn):
        module = _module_name(value)
        if any(module == m or module.startswith(m + ".") for m in _JUDGE_MODULES):
            return module
    return None


def refusal(config: dict[str, Any], *, static: bool = False) -> str | None:
    """Why the bridge cannot run this task faithfully (from its YAML alone), else None.

    `static`: the YAML was read without importing its utils (``!function`` entries are not callables), so an LLM
    judge is told by its metric's name alone."""
    output_type = config.get("output_type", "generate_until")
    if output_type != "generate_until":
        return f"its output_type is {output_type!r}: the bridge scores generated answers (generate_until) only"
    if config.get("doc_to_visual") is None:
        return "it has no doc_to_visual: a text-only task has no frame budget to sweep"
    filters = config.get("filter_list") or []
    if len(filters) > 1:
        names = ", ".join(str(f.get("name")) for f in filters)
        return (f"its filter_list has {len(filters)} pipelines ({names}): lmms-eval reports a score per pipeline, "
                "the bridge scores each answer once")
    metrics = [str(m.get("metric")) for m in config.get("metric_list") or []]
    if not metrics:
        return "it declares no metric (metric_list)"
    process = config.get("process_results")
    if process is None or (not static and not callable(process)):
        return "it has no process_results function: the bridge scores each answer with the task's own"
    judge = None if static else _judged(process)
    if judge is not None or any(w in metrics[0].lower() for w in _JUDGE_WORDS):
        via = f" (process_results reaches {judge})" if judge else ""
        return f"its metric {metrics[0]!r} is scored by an LLM judge{via}: a judged score is not reproducible offline"
    if any(w in metrics[0].lower() for w in _SUBMISSION_WORDS):
        return f"its metric {metrics[0]!r} is a submission to the benchmark's server, not a local score"
    return None


def media_root_of(config: dict[str, Any]) -> Path:
    """Where lmms-eval unpacks the task's media: ``$HF_HOME/<dataset_kwargs.cache_dir>`` (else ``$HF_HOME``)."""
    home = Path(os.environ.get("HF_HOME", "~/.cache/huggingface")).expanduser()
    cache = (config.get("dataset_kwargs") or {}).get("cache_dir")
    return home / str(cache) if cache else home


@dataclass(frozen=True)
class LoadedTask:
    """A task as lmms-eval built it, and where lmms-eval would have unpacked its media."""

    task: Any
    """lmms-eval's `ConfigurableTask`."""
    media_root: Path
    """`media_root_of` the task's YAML (the bridge drops the download kwargs before lmms-eval sees them)."""


@contextmanager
def _offline() -> Iterator[None]:
    """Hugging Face's hub and datasets in offline mode while a task loads, so that a dataset missing from the cache
    fails at once instead of after lmms-eval's retries of a download (each of its tries otherwise waits on the
    network); the previous modes are restored after."""
    import datasets.config
    import huggingface_hub.constants

    saved = (datasets.config.HF_DATASETS_OFFLINE, huggingface_hub.constants.HF_HUB_OFFLINE,
             {k: os.environ.get(k) for k in _OFFLINE_ENV})
    datasets.config.HF_DATASETS_OFFLINE = huggingface_hub.constants.HF_HUB_OFFLINE = True
    os.environ.update(dict.fromkeys(_OFFLINE_ENV, "1"))
    try:
        yield
    finally:
        datasets.config.HF_DATASETS_OFFLINE, huggingface_hub.constants.HF_HUB_OFFLINE = saved[0], saved[1]
        for k, v in saved[2].items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


_OFFLINE_ENV = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")


def _last_try(err: BaseException) -> BaseException:
    """The error of lmms-eval's last try where its retry wrapper (tenacity's RetryError) hides it."""
    last = getattr(err, "last_attempt", None)
    cause = last.exception() if last is not None and hasattr(last, "exception") else None
    return cause if isinstance(cause, BaseException) else err


def load_task(task: str, *, include_path: Path | None = None, dataset_path: Path | None = None,
              model_name: str | None = None) -> LoadedTask:
    """The task as an lmms-eval `ConfigurableTask`, its documents read from disk (never downloaded).

    Raises `LmmsTaskError` naming the task when it is unknown, cannot be run faithfully (`refusal`), or its
    dataset cannot be read.
    """
    config = task_config(task, include_path=include_path, model_name=model_name)
    reason = refusal(config)
    if reason is not None:
        runnable = _runnable_variants(task, include_path)
        hint = f"; its variants the bridge runs: {', '.join(runnable)}" if runnable else ""
        raise LmmsTaskError(task, reason + hint)
    from lmms_eval.api.task import ConfigurableTask

    media_root = media_root_of(config)

    kwargs = {k: v for k, v in (config.get("dataset_kwargs") or {}).items() if k not in _DOWNLOAD_KWARGS}
    kwargs["local_files_only"] = True
    config = {**config, "dataset_kwargs": kwargs}
    if dataset_path is not None:
        config["dataset_path"] = str(dataset_path)
    try:
        with _offline():
            return LoadedTask(ConfigurableTask(config=config, model_name=model_name), media_root)
    except Exception as err:  # datasets' errors for a missing cache or a bad folder are many types
        cause = _last_try(err)
        where = dataset_path or (f"the Hugging Face cache ({config.get('dataset_path')}; read offline: download it "
                                 "once, or give dataset_path)")
        raise LmmsTaskError(task, f"its dataset could not be read from {where}: {type(cause).__name__}: "
                                  f"{cause}") from err


def _runnable_variants(task: str, include_path: Path | None) -> list[str]:
    """The tasks named ``<task>_...`` that the bridge runs, by their YAML (`egoschema_subset` for ``egoschema``,
    whose full test set is scored by a server): what a refused task's message suggests."""
    from lmms_eval import utils as lmms_utils

    include = str(include_path) if include_path is not None else None
    manager = _task_manager(include, None)
    found = []
    for name in sorted(n for n in manager.all_subtasks if n.startswith(f"{task}_")):
        try:
            config = dict(lmms_utils.load_yaml_config(manager.task_index[name]["yaml_path"], mode="simple"))
        except Exception:  # noqa: BLE001,S112 - a variant whose YAML cannot be read is no suggestion
            continue
        if refusal(config, static=True) is None:
            found.append(name)
    return found[:5]


@dataclass(frozen=True)
class TaskListing:
    """One lmms-eval task and whether the bridge runs it."""

    task: str
    runs: bool
    reason: str
    """Why not (empty when it runs)."""


def list_tasks(include_path: Path | None = None) -> list[TaskListing]:
    """Every task of the installed lmms-eval (and `include_path`), each with the bridge's verdict from its YAML.

    The YAMLs are read without running their utils (some fetch files on import): an LLM judge is told by its
    metric's name; `load_task` (``framesweep inspect``) checks what the task's process_results calls."""
    from lmms_eval import utils as lmms_utils

    _need_lmms_eval("*")
    include = str(include_path) if include_path is not None else None
    manager = _task_manager(include, None)
    out = []
    for task in manager.all_subtasks:
        path = manager.task_index[task]["yaml_path"]
        try:
            reason = refusal(dict(lmms_utils.load_yaml_config(path, mode="simple")), static=True)
        except Exception as err:  # noqa: BLE001 - a task whose utils need a module that is not installed
            reason = f"its YAML or utils cannot be loaded: {type(err).__name__}: {err}"
        out.append(TaskListing(task, reason is None, reason or ""))
    return out
