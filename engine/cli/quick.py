"""`framesweep run` without a spec file, and the overrides a spec file takes from the command line.

The quick path (`--model PATH --family F --dataset NAME --data DIR --frames 0,8,32 --limit 20 --out OUT`)
builds a spec as a dict: one model (its family from `--family`, else from `tiny:<family>[_<build>]` or the
checkpoint's `config.json` model_type: a folder's, or a hub id's in the local Hugging Face cache), one dataset whose path fields come from the data folder's
layout (`engine.datasets.sources`), a budget per frame count, the results in OUT. It is validated
like a spec file (every problem named, exit 2) and written to `OUT/spec.toml` before the run, so the
run can be repeated or edited as a file. On a spec file, `--limit`, `--models` and `--budgets` change
the dict read from it before it is validated.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from engine.config import SpecError, SweepSpec, dataset_spec_classes, parse_spec
from engine.config.source import SpecFileError, read_spec_file

__all__ = ["QUICK_FLAGS", "lmms_quick_spec", "load_with_overrides", "quick_spec"]

QUICK_FLAGS = {"--model": "model", "--family": "family", "--dataset": "dataset", "--data": "data",
               "--frames": "frames", "--lmms-eval-task": "lmms_task", "--media-root": "media_root",
               "--include-path": "include_path", "--dataset-path": "dataset_path"}
"""The flags that build a spec (the quick path), each with its key; none of them goes with a spec file."""
LMMS_FLAGS = ("--media-root", "--include-path", "--dataset-path")
"""The quick path's flags of an lmms-eval task alone."""


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.@+-]+", "-", text).strip("-") or "model"


def _family(model: str) -> str:
    """The family of `tiny:<family>`, or the model_type of the checkpoint's config.json (a folder, or a hub id's
    snapshot in the local Hugging Face cache) when it is a known family. SpecError otherwise: first for a
    checkpoint that is not there (a missing folder, a hub id out of reach offline), then asking for --family."""
    from engine.backends.families import FAMILIES
    from engine.config import ModelSpec
    from engine.runtime.checkpoint import model_folder
    from engine.sweep.preflight import close_sibling, hub_cache, is_hub_id, model_problems

    if model.startswith("tiny:"):
        return _tiny_family(model.removeprefix("tiny:"))
    try:
        folder = model_folder(model)
    except OSError:  # a name the file system refuses: the path check below names it
        folder = None
    kind = _model_type(folder) if folder is not None else None
    if kind in FAMILIES:
        return str(kind)
    if problems := model_problems(ModelSpec(id="quick", family="?", path=model)):
        raise SpecError(f"--model: {problems[0][1]}")
    if folder is not None:
        said = f" (its config.json says model_type {kind!r})" if kind else " (its config.json names no model_type)"
    elif is_hub_id(model):
        near = close_sibling(model)
        said = (f" (no folder here, and as a hub id not in the local Hugging Face cache, {hub_cache()}: its "
                "config.json cannot be read before vLLM downloads it" + (f"; did you mean {near}?)" if near else ")"))
    else:
        said = ""
    raise SpecError(f"--family: give the model family of {model}{said}; known: {', '.join(sorted(FAMILIES))}")


def _tiny_family(name: str) -> str:
    """The family of the tiny build `name`: its name, or the family it is a build of (``qwen2_5_vl_seen``, the
    trained one: qwen2_5_vl); else `name` itself, which the spec's check names as an unknown family."""
    from engine.backends.families import FAMILIES

    found = [f for f in FAMILIES if name == f or name.startswith(f"{f}_")]
    return max(found, key=len) if found else name


def _model_type(folder: Path) -> str | None:
    """The `model_type` of a checkpoint folder's config.json (None when it has none or cannot be read)."""
    try:
        kind = json.loads((folder / "config.json").read_text()).get("model_type")
    except (OSError, ValueError, AttributeError):
        return None
    return kind if isinstance(kind, str) else None


def _need_folder(data: Path) -> None:
    """`--data DIR` is a folder (else one sentence, with the nearest existing name), before anything is built."""
    from engine.sweep.preflight import close_sibling

    try:
        if data.is_dir():
            return
        what = "is not a folder" if data.exists() else "no such folder"
    except OSError as err:
        raise SpecError(f"--data: {data}: {err.strerror or err}") from None
    near = close_sibling(str(data)) if what == "no such folder" else None
    raise SpecError(f"--data: {data}: {what}" + (f" (did you mean {near}?)" if near else ""))


def _frames(text: str) -> list[int]:
    try:
        frames = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SpecError(f"--frames: give frame counts separated by commas (0 for text-only), got {text!r}") from None
    if not frames or any(f < 0 for f in frames):
        raise SpecError(f"--frames: give frame counts of 0 or more separated by commas, got {text!r}")
    return sorted(set(frames))


def quick_spec(*, model: str, family: str | None, dataset: str, data: Path | None, frames: str, limit: int | None,
               out: Path) -> tuple[SweepSpec, dict[str, Any]]:
    """The spec the quick path's flags describe (validated), and its dict (what `OUT/spec.toml` holds)."""
    from engine.datasets.sources import known_sources, layout_fields

    if dataset not in dataset_spec_classes():
        raise SpecError(f"--dataset: unknown dataset {dataset!r}; known: {', '.join(sorted(dataset_spec_classes()))}")
    table: dict[str, Any] = {"name": dataset}
    if data is not None:
        if dataset not in known_sources():
            raise SpecError(f"--data: no known layout for {dataset}; write a spec file (`framesweep spec --example`)")
        _need_folder(data)
        table |= layout_fields(dataset, data.resolve())
    doc = _doc(model, family, dataset, table, frames, out)
    _limit(doc["dataset"], limit)
    return parse_spec(doc, "the command line"), doc


def _doc(model: str, family: str | None, name: str, table: dict[str, Any], frames: str, out: Path) -> dict[str, Any]:
    """The quick path's spec dict: one model, the dataset `table`, a budget per frame count, the results in OUT."""
    return {
        "sweep_id": _slug(f"{Path(model.removeprefix('tiny:')).name}-{name}"),
        "models": [{"id": _slug(Path(model).name if not model.startswith("tiny:") else model.replace(":", "-")),
                    "family": family or _family(model), "path": model}],
        "dataset": table,
        "budgets": [{"frames": f} for f in _frames(frames)],
        "store": {"out_dir": str(out)},
    }


def lmms_quick_spec(*, task: str, model: str, family: str | None, frames: str, limit: int | None, out: Path,
                    media_root: Path | None = None, include_path: Path | None = None,
                    dataset_path: Path | None = None) -> tuple[SweepSpec, dict[str, Any]]:
    """The spec of ``run --lmms-eval-task TASK`` (validated) and its dict: the spec file's ``[dataset] name =
    "lmms_eval"`` table with the task and the given folders, as `quick_spec` builds the rest.

    Raises SpecError, one sentence, when lmms-eval is not installed (with the install hint) or the task is not one
    of its tasks (with the close names), cannot be read, or is one the bridge refuses from its YAML (a submission
    or LLM-judge metric, ...: `engine.datasets._lmms_tasks.refusal`)."""
    from engine.datasets._lmms_tasks import LmmsTaskError, refusal, task_config

    try:
        reason = refusal(task_config(task, include_path=include_path))
        if reason is not None:  # before anything is built or started (the model's checkpoint, the engines)
            raise LmmsTaskError(task, reason)
    except LmmsTaskError as err:
        raise SpecError(f"--lmms-eval-task: {err}") from None
    table: dict[str, Any] = {"name": "lmms_eval", "task": task}
    table |= {k: str(v.resolve()) for k, v in (("media_root", media_root), ("include_path", include_path),
                                                ("dataset_path", dataset_path)) if v is not None}
    doc = _doc(model, family, task, table, frames, out)
    _limit(doc["dataset"], limit)
    return parse_spec(doc, "the command line"), doc


def _limit(table: dict[str, Any], limit: int | None) -> None:
    """`--limit N` on one dataset table: its `limit`, or for the synthetic set the videos that hold N questions."""
    if limit is None:
        return
    if limit < 1:
        raise SpecError(f"--limit: give a number of questions of at least 1, got {limit}")
    cls = dataset_spec_classes().get(str(table.get("name")))
    fields = cls.model_fields if cls is not None else {}
    if "limit" in fields:
        table["limit"] = limit
    elif "n_videos" in fields:  # the synthetic set: questions per video from its `questions`
        per_video = len(table.get("questions") or fields["questions"].get_default(call_default_factory=True))
        table["n_videos"] = max(1, math.ceil(limit / per_video))
    else:
        raise SpecError(f"--limit: dataset {table.get('name')} has no limit")


def _only(items: list[dict[str, Any]], keep: list[str], what: str, flag: str) -> list[dict[str, Any]]:
    known = [str(x.get("id")) for x in items]
    if unknown := [k for k in keep if k not in known]:
        raise SpecError(f"{flag}: no {what} {', '.join(map(repr, unknown))} in the spec; known: {', '.join(known)}")
    return [x for x in items if str(x.get("id")) in keep]


def load_with_overrides(path: Path, out: Path | None, *, limit: int | None = None, models: list[str] | None = None,
                        budgets: list[str] | None = None) -> SweepSpec:
    """A spec file, with `--out`, `--limit` (every dataset), `--models` (keep these model ids) and `--budgets` (run
    only these budget ids: each dataset's `budgets`) applied before it is validated."""
    try:
        data = read_spec_file(path)
    except SpecFileError as err:
        raise SpecError(str(err)) from None
    if out is not None and isinstance(data.get("store", {}), dict):
        data["store"] = {**data.get("store", {}), "out_dir": str(out)}
    tables = [data["dataset"]] if isinstance(data.get("dataset"), dict) else \
        [t for t in data.get("datasets") or [] if isinstance(t, dict)]
    for table in tables:
        _limit(table, limit)
        if budgets:
            table["budgets"] = list(budgets)
    if models and isinstance(data.get("models"), list):
        data["models"] = _only([m for m in data["models"] if isinstance(m, dict)], models, "model", "--models")
    return parse_spec(data, str(path))
