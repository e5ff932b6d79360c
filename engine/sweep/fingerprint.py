"""Answer fingerprints: everything that shapes an answer, per (model, dataset, budget).

A job's fingerprint is the SHA-256 of a canonical JSON of named fields (`answer_fields`):

- ``checkpoint``: ``sha256:<content>`` of a local checkpoint folder (`engine.runtime.checkpoint`; a
  ``tiny:`` checkpoint is built first), ``served:<name>`` for an OpenAI-compatible server, and
  ``unresolved:<path>`` for a hub id not in the local cache (vLLM downloads it). The folder's path is
  not part of it: a checkpoint moved elsewhere is the same checkpoint.
- ``family`` and ``template``: the model family and a digest of the prompts it builds for a probe
  question, text-only and with a video (its chat template, default system message and media tags); for a model
  with ``prompt = "checkpoint_template"``, ``checkpoint_template:`` and that digest (the template itself is
  in the checkpoint's content).
- ``engine.*``: the engine settings, except those that only change throughput (`THROUGHPUT_ONLY`,
  `EXTRA_THROUGHPUT_ONLY`); ``http.*`` for a server: `HTTP_FIELDS`.
- ``prompt.*``: scoring, extraction, system prompt and ``max_new_tokens`` (open items are generated under
  either scoring).
- ``dataset.*``: the adapter and its version, and the dataset's settings, except paths (a data folder may
  move), the settings that only choose which items and budgets exist (`DATASET_SELECTORS`, the dataset's
  ``budgets`` among them) and an image benchmark's image size (`IMAGE_SIZE_FIELDS`: it is its image
  budgets' ``budget.max_pixels`` / ``short_side`` / ``min_pixels``).
- ``budget.*``: frames, sizes (``max_pixels``, ``short_side``, ``min_pixels``, and ``exact_pixels`` when set:
  `LATER_BUDGET_FIELDS`), policy, seed and pipeline;
  for a visual budget also ``decode.decoder`` (``pyav`` for image items) and, for a cached one,
  ``decode.cache_format``.

Each field belongs to a part of the run (`field_scope`): the sweep (``prompt.*``), the model (``checkpoint``,
``family``, ``template``, ``engine.*``, ``http.*``), the dataset (``dataset.*``, the synthetic ``seed`` among
them: it names the items) or the (model, dataset, budget) itself (``budget.*``, ``decode.*``). Every row of a
model shares its model's fields, every row of a dataset its dataset's, every row of a sweep its prompt.

Rows carry their fingerprint (`answer_fingerprint`); the manifest keeps each one's fields, so a
refused resume can name what changed (`engine.sweep.resume`).
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np

from engine.backends.chat_template import PROBE
from engine.backends.families import get_family
from engine.backends.model_ids import resolve_model_path
from engine.config import BudgetPoint, ModelSpec, SweepSpec, dataset_id
from engine.frames.view import MediaView
from engine.items import Item, Job
from engine.runtime.checkpoint import checkpoint_fingerprint, model_folder

__all__ = ["DATASET_SELECTORS", "EXTRA_THROUGHPUT_ONLY", "HTTP_FIELDS", "IMAGE_SIZE_FIELDS", "LATER_BUDGET_FIELDS",
           "THROUGHPUT_ONLY",
           "AnswerPrints", "FieldScope",
           "checkpoint_identity", "field_scope", "fingerprint", "item_decoder", "template_digest"]

log = logging.getLogger(__name__)

THROUGHPUT_ONLY = frozenset({
    "max_model_len", "max_num_seqs", "max_num_batched_tokens", "enable_prefix_caching", "enforce_eager",
    "mm_processor_cache_gb", "kv_cache_gib", "gpu_memory_utilization", "engine_core", "num_gpus",
    "placement_timeout_s", "replicas", "deadline_base_s", "deadline_per_request_s", "deadline_per_frame_s",
    "tensor_parallel_size", "pipeline_parallel_size",
})
"""`[models.engine]` settings left out: how fast and where, never what (a longer `max_model_len` changes which
prompts fit, and a prompt that did not fit is an error row, retried anyway)."""
EXTRA_THROUGHPUT_ONLY = frozenset({
    "tensor_parallel_size", "pipeline_parallel_size", "distributed_executor_backend", "swap_space",
    "cpu_offload_gb", "block_size", "disable_log_stats", "max_seq_len_to_capture",
})
"""`[models.engine.extra]` keys left out; every other key handed to vLLM is part of the fingerprint."""
HTTP_FIELDS = ("served_model", "jpeg_quality", "send_video_metadata")
"""`[models.http]` settings that change what the server answers (its address, key and retries do not)."""
DATASET_SELECTORS = frozenset({
    "id", "strict", "limit", "n_videos", "questions", "durations", "tasks", "configs", "categories", "tracks",
    "turns", "video_exts", "video_ext", "budgets",
})
"""Dataset settings that choose which items and budgets exist, not how one is asked or scored: adding items or
budgets resumes."""
IMAGE_SIZE_FIELDS = frozenset({"max_pixels", "short_side", "min_pixels"})
"""An image benchmark's image size: fingerprinted as its image budgets' ``budget.*`` fields (the jobs it shapes),
not as ``dataset.*`` (a text-only answer does not depend on it)."""



def item_decoder(spec: SweepSpec, item: Item) -> str:
    """The decoder of an item's media: the spec's, except still images (decord cannot open them; PyAV decodes
    them, EXIF rotation applied)."""
    return "pyav" if item.media_kind == "image" else spec.decode.decoder


FieldScope = Literal["sweep", "model", "dataset", "budget"]
_MODEL_FIELDS = frozenset({"checkpoint", "family", "template"})


def field_scope(name: str) -> FieldScope:
    """The part of a run that an answer field belongs to (see the module docstring)."""
    if name.startswith("prompt."):
        return "sweep"
    if name in _MODEL_FIELDS or name.startswith(("engine.", "http.")):
        return "model"
    if name.startswith("dataset."):
        return "dataset"
    return "budget"


def fingerprint(fields: dict[str, Any]) -> str:
    """SHA-256 hex of the canonical JSON of `fields`."""
    return hashlib.sha256(json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


def checkpoint_identity(model: ModelSpec) -> str:
    """What the `checkpoint` field records for `model` (see the module docstring)."""
    if model.backend == "openai":
        return f"served:{(model.http.served_model if model.http else None) or model.path}"
    folder = model_folder(model.path)
    if folder is None and model.path.startswith("tiny:"):
        folder = resolve_model_path(model.path)  # built now: the engine needs it anyway
    digest = checkpoint_fingerprint(folder, mtime=False) if folder is not None else None
    return f"sha256:{digest}" if digest else f"unresolved:{model.path}"


def template_digest(family: str) -> str:
    """A digest of the prompts `family` builds for a probe question, without media and with two frames."""
    fam = get_family(family)
    video = MediaView(np.zeros((2, 28, 28, 3), np.uint8), np.arange(2), 1.0, 2, "probe:probe:f2", "pyav")
    parts = []
    try:
        for media in (None, video):
            req = fam.build("probe", PROBE, media, "generate", None, 16)
            parts += [req.prompt, json.dumps(req.messages, sort_keys=True, default=str)]
    except Exception as err:  # noqa: BLE001 - a family that cannot build the probe is fingerprinted by name
        log.warning("family %s cannot build the template probe (%s: %s); its name stands for its template",
                    family, type(err).__name__, err)
        return f"unprobed:{family}"
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _template_field(model: ModelSpec, digest: str) -> str:
    """The `template` field: the family's digest, marked when the checkpoint's chat template writes the prompts."""
    return digest if model.prompt == "family" else f"{model.prompt}:{digest}"


def _is_path(annotation: Any) -> bool:
    return annotation is Path or Path in get_args(annotation)


def _dataset_fields(ds: Any, version: str | None) -> dict[str, Any]:
    dumped = ds.model_dump(mode="json")
    out: dict[str, Any] = {"dataset.adapter": ds.name, "dataset.version": version}
    skip = DATASET_SELECTORS | (IMAGE_SIZE_FIELDS if getattr(ds, "asks_images", False) else frozenset())
    for name, info in type(ds).model_fields.items():
        if name != "name" and name not in skip and not _is_path(info.annotation):
            out[f"dataset.{name}"] = dumped[name]
    return out


def _model_fields(model: ModelSpec) -> dict[str, Any]:
    if model.backend == "openai" and model.http is not None:  # the server's engine settings are not ours
        return {"family": model.family, **{f"http.{k}": getattr(model.http, k) for k in HTTP_FIELDS}}
    engine = model.engine.model_dump(mode="json")
    out = {f"engine.{k}": v for k, v in engine.items() if k not in THROUGHPUT_ONLY and k != "extra"}
    out |= {f"engine.extra.{k}": v for k, v in engine["extra"].items() if k not in EXTRA_THROUGHPUT_ONLY}
    return {"family": model.family, **out}


def _prompt_fields(spec: SweepSpec) -> dict[str, Any]:
    p = spec.prompt
    # max_new_tokens always: open items (token-F1) are generated under either scoring, and it cuts their answers
    return {"prompt.scoring": p.scoring, "prompt.extraction": p.extraction, "prompt.system_prompt": p.system_prompt,
            "prompt.max_new_tokens": p.max_new_tokens}


LATER_BUDGET_FIELDS = frozenset({"exact_pixels"})
"""Budget fields added after fingerprints existed: named only when set, so a budget without them keeps the
fingerprint it had (its committed rows resume)."""


def _budget_fields(spec: SweepSpec, budget: BudgetPoint, decoder: str | None) -> dict[str, Any]:
    unset = {k for k in LATER_BUDGET_FIELDS if getattr(budget, k) is None}
    out = {f"budget.{k}": v for k, v in budget.model_dump(mode="json", exclude={"id", *unset}).items()}
    if not budget.is_text_only:
        out["decode.decoder"] = decoder
        if budget.pipeline == "cached":
            out["decode.cache_format"] = spec.decode.cache_format
    return out


class AnswerPrints:
    """The answer fingerprint of each job of one run, cached per (model, dataset, budget protocol, decoder).

    Args:
        spec: The run's spec.
        adapter_versions: Each dataset id's adapter version.
        checkpoints: Checkpoint identities already known, by model id (computed when missing).
        templates: Template digests already known, by family (computed when missing).
    """

    def __init__(self, spec: SweepSpec, adapter_versions: dict[str, str | None],
                 checkpoints: dict[str, str] | None = None, templates: dict[str, str] | None = None) -> None:
        self.spec = spec
        self._models = {m.id: m for m in spec.models}
        self._datasets = {dataset_id(d): d for d in spec.dataset_specs()}
        self._versions = adapter_versions
        self.checkpoints: dict[str, str] = dict(checkpoints or {})
        self.templates: dict[str, str] = dict(templates or {})
        self._cache: dict[tuple[Any, ...], str] = {}
        self.fields: dict[str, dict[str, Any]] = {}
        """Every fingerprint handed out, with its fields."""

    def of(self, job: Job) -> str:
        """The fingerprint of `job`'s answer."""
        b = job.budget
        decoder = None if b.is_text_only else item_decoder(self.spec, job.item)
        key = (job.model_id, job.item.dataset, b.model_dump_json(exclude={"id"}), decoder)  # every budget field
        fp = self._cache.get(key)
        if fp is None:
            fields = self.fields_for(job.model_id, job.item.dataset, b, decoder)
            fp = self._cache[key] = fingerprint(fields)
            self.fields[fp] = fields
        return fp

    def fields_for(self, model_id: str, dataset: str, budget: BudgetPoint, decoder: str | None) -> dict[str, Any]:
        """The named fields of one (model, dataset, budget, decoder)'s answers."""
        model = self._models[model_id]
        if model_id not in self.checkpoints:
            self.checkpoints[model_id] = checkpoint_identity(model)
        if model.family not in self.templates:
            self.templates[model.family] = template_digest(model.family)
        ds = self._datasets.get(dataset)
        return {
            "checkpoint": self.checkpoints[model_id], "template": _template_field(model, self.templates[model.family]),
            **_model_fields(model), **_prompt_fields(self.spec),
            **(_dataset_fields(ds, self._versions.get(dataset)) if ds is not None else {}),
            **_budget_fields(self.spec, budget, decoder),
        }
