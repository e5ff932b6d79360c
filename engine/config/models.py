"""The models of a sweep: how each engine is started (`EngineSpec`), an OpenAI-compatible server that
answers for one (`HTTPSpec`), and the model itself (`ModelSpec`).

A server's secrets are registered for redaction (`engine.runtime.secrets`) as soon as a spec names
them: a credential written into `base_url` when the spec is read (one too short or too plain to be
redacted safely is refused there, naming where it sits), the key in the `api_key_env` variable
when the preflight checks it (`HTTPSpec.api_key_problem`). `register_spec_secrets` does both for a
spec recorded in a results directory, so a later command writes neither into any file.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from engine.config.backends import check_backend
from engine.config.budgets import BudgetPoint
from engine.config.checkpoint import CheckpointSpec
from engine.config.vllm_args import unknown_engine_args
from engine.runtime.secrets import MIN_SECRET_LEN, register_secret, secret_problem, url_credentials
from engine.strict import StrictModel

_KEY_HINT = (f"use a random key of at least {MIN_SECRET_LEN} characters (python -c \"import secrets; "
             "print(secrets.token_urlsafe(24))\")")

PLACEHOLDER_KEYS = frozenset({"empty", "none", "null", "dummy", "no-key", "nokey", "-"})
"""Values that say "no key" to a local server (OpenAI clients need some value; vLLM's docs use EMPTY): sent as
they are, never registered as secrets (they are not, and redacting them would rewrite ordinary words)."""

_PARALLEL = ("tensor_parallel_size", "pipeline_parallel_size")

class EngineSpec(StrictModel):
    """How an engine is started for one model."""

    max_model_len: int = Field(default=8192, gt=0, description="vLLM max_model_len (context length in tokens).")
    max_num_seqs: int = Field(default=16, gt=0, description="vLLM max_num_seqs: sequences scheduled at once.")
    max_num_batched_tokens: int | None = Field(
        default=None, gt=0, description="vLLM max_num_batched_tokens; null lets vLLM choose."
    )
    dtype: str = Field(default="auto", description="Weights dtype handed to vLLM (auto, float32, bfloat16, ...).")
    enable_prefix_caching: bool = Field(
        default=True, description="Share the cached video prefix between questions of one video and budget."
    )
    enforce_eager: bool | None = Field(
        default=None, description="Skip CUDA graph capture (a faster start, slower decoding); null: vLLM's own "
        "default (graphs captured on a GPU), and true on the CPU build, which has no graphs to capture.")
    tensor_parallel_size: int = Field(
        default=1, ge=1, description="GPUs one engine splits each layer over (vLLM tensor_parallel_size); with "
        "pipeline_parallel_size it sets the GPUs each engine actor reserves (num_gpus auto).")
    pipeline_parallel_size: int = Field(
        default=1, ge=1, description="Pipeline stages of one engine, each on its own GPUs (vLLM "
        "pipeline_parallel_size).")
    mm_processor_cache_gb: float = Field(
        default=4.0, ge=0,
        description="vLLM's multimodal processor cache (GiB): holds processed frames of the videos in flight, "
        "keyed by the stable media uuids, so questions sharing a video and budget are processed once.",
    )
    kv_cache_gib: float = Field(
        default=1.0, gt=0, description="KV cache size in GiB on the CPU build (VLLM_CPU_KVCACHE_SPACE)."
    )
    gpu_memory_utilization: float = Field(default=0.85, gt=0, le=1, description="Fraction of GPU memory for vLLM.")
    engine_core: Literal["auto", "process", "in_process"] = Field(
        default="auto",
        description="Where vLLM's engine core runs: process (its own process, vLLM's default: overlaps input "
        "processing with the model; watched by the actor, which restarts when it dies), in_process (in the "
        "engine actor's process, with the model: no second and third vLLM start-up, a crash is the actor's "
        "crash); auto: in_process for a CPU-build engine of one worker, process otherwise.",
    )
    num_gpus: Annotated[float, Field(ge=0)] | Literal["auto"] = Field(
        default="auto",
        description="GPUs per engine actor (reserved together on one node; for a tensor-parallel engine, "
        "tensor_parallel_size x pipeline_parallel_size); auto: that many where CUDA is visible on the "
        "cluster's GPU nodes, else 0 (the CPU build).",
    )
    placement_timeout_s: float = Field(
        default=300.0, gt=0,
        description="How long an engine may wait for its GPUs while other actors hold them before the "
        "sweep stops, naming the missing resource (a request no node can hold fails at once).",
    )
    replicas: int = Field(
        default=1, ge=1,
        description="Engine actors for this model (e.g. one per GPU of the cluster), spread over nodes; each "
        "batch goes to whichever is least busy, and a batch whose engine dies is retried on another.",
    )
    deadline_base_s: float = Field(
        default=120.0, gt=0,
        description="An engine call that has not answered after deadline_base_s + deadline_per_request_s x "
        "requests + deadline_per_frame_s x frames counts as hung: the engine is restarted and the batch retried.",
    )
    deadline_per_request_s: float = Field(default=5.0, ge=0, description="Per-request allowance of the deadline.")
    deadline_per_frame_s: float = Field(default=0.5, ge=0, description="Per-frame allowance of the deadline.")
    extra: dict[str, Any] = Field(
        default_factory=dict, description="Further keyword arguments handed to vllm.LLM untouched."
    )

    @property
    def world_size(self) -> int:
        """GPUs one engine spreads its model over (tensor x pipeline parallel size)."""
        return self.tensor_parallel_size * self.pipeline_parallel_size

    def vllm_args(self, cuda: bool) -> dict[str, Any]:
        """The engine arguments these fields give vLLM on a machine with (`cuda`) or without a GPU: enforce_eager
        only where set, or true on the CPU build; the parallel sizes where above 1."""
        eager = self.enforce_eager if self.enforce_eager is not None else (None if cuda else True)
        args: dict[str, Any] = {} if eager is None else {"enforce_eager": eager}
        for key in _PARALLEL:
            if getattr(self, key) > 1:
                args[key] = getattr(self, key)
        return args

    @model_validator(mode="before")
    @classmethod
    def _parallel_from_extra(cls, data: Any) -> Any:
        """`extra = { tensor_parallel_size = N }` (as before these were fields) sets the field; both, differing,
        fail naming the two."""
        if not isinstance(data, dict) or not isinstance(data.get("extra"), dict):
            return data
        extra = dict(data["extra"])
        out = dict(data)
        for key in _PARALLEL:
            value = extra.get(key)
            if isinstance(value, bool) or not isinstance(value, int):
                continue  # not a size: left in extra, whose check names it
            extra.pop(key)
            if key in data and data[key] != value:
                raise ValueError(f"{key} = {data[key]!r} and extra.{key} = {value!r}: give it once, as "
                                 f"[models.engine] {key}")
            out[key] = value
        out["extra"] = extra
        return out

    @field_validator("extra")
    @classmethod
    def _extra_values(cls, extra: dict[str, Any]) -> dict[str, Any]:
        """Every number finite (vLLM gets them as written); the parallel sizes, counted here (`world_size`),
        whole numbers from 1 (inf, 2.5 or "2" fail)."""
        stack: list[tuple[str, Any]] = list(extra.items())
        while stack:
            key, value = stack.pop()
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{key} = {value}: give a finite number")
            if isinstance(value, dict):
                stack.extend((f"{key}.{k}", v) for k, v in value.items())
            elif isinstance(value, list):
                stack.extend((f"{key}.{i}", v) for i, v in enumerate(value))
        for key in ("tensor_parallel_size", "pipeline_parallel_size"):
            value = extra.get(key, 1)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{key} must be a whole number of at least 1, got {value!r}")
        return extra

    @field_validator("extra")
    @classmethod
    def _extra_keys(cls, extra: dict[str, Any]) -> dict[str, Any]:
        """Every key an argument of the installed vLLM's `LLM` (a typo fails here, with the closest name, instead
        of when the engine starts); nothing is checked where vLLM is not installed."""
        if extra and (problem := unknown_engine_args(list(extra))):
            raise ValueError(problem)
        return extra

    @model_validator(mode="after")
    def _gpus_match_parallelism(self) -> EngineSpec:
        if self.num_gpus != "auto" and self.num_gpus > 0 and self.world_size > 1 and self.num_gpus != self.world_size:
            raise ValueError(f"num_gpus = {self.num_gpus:g} but tensor_parallel_size x pipeline_parallel_size = "
                             f"{self.world_size}: a tensor-parallel engine needs one GPU per rank")
        return self

class HTTPSpec(StrictModel):
    """An OpenAI-compatible server (e.g. `vllm serve`) that answers for this model."""

    base_url: str = Field(description="Server root, e.g. http://127.0.0.1:8000 (the /v1 paths are appended).")
    served_model: str | None = Field(default=None, description="Model name on the server; null: the model path.")
    api_key_env: str | None = Field(
        default=None, description="Environment variable holding the API key (never logged or stored)."
    )
    concurrency: int = Field(default=8, ge=1, description="Requests in flight at once.")
    timeout_s: float = Field(default=120.0, gt=0, description="Timeout in seconds of each connect, read and write "
                             "of a request (a server that trickles bytes never trips it: see request_timeout_s).")
    request_timeout_s: float = Field(
        default=600.0, gt=0, allow_inf_nan=False,
        description="Deadline in seconds of one whole request, from sending it to the reply's last byte; past it "
        "the request counts as timed out (retried like a timeout, then an error row).")
    max_retries: int = Field(default=3, ge=0, description="Retries on 429, 5xx, connection errors and timeouts.")
    backoff_s: float = Field(default=0.5, ge=0, description="First retry delay; doubles each retry.")
    retry_after_max_s: float = Field(
        default=60.0, ge=0, allow_inf_nan=False,
        description="Longest Retry-After (of a 429 or 5xx) waited for before a retry; a reply asking for longer "
        "fails its request at once (an error row a rerun retries).")
    max_reply_bytes: int = Field(
        default=16 * 2**20, gt=0,
        description="Most bytes of one reply read (after decompression); a longer reply is not read further and "
        "fails its request (ReplyTooLarge).")
    jpeg_quality: int = Field(default=85, ge=1, le=100, description="JPEG quality of the frames sent.")
    send_video_metadata: bool = Field(
        default=True,
        description="Send fps/frame indices per request (server needs --trust-request-mm-kwargs).",
    )

    @field_validator("base_url")
    @classmethod
    def _url_credentials_are_secrets(cls, url: str) -> str:
        """A credential in the URL (`?api_key=...`, `user:password@`) is registered for redaction now, before any
        file is written; one that redaction could not tell from other text is refused (never naming it)."""
        for where, value in url_credentials(url):
            if why := secret_problem(value):
                raise ValueError(f"{where} holds a credential framesweep cannot keep out of its files and results "
                                 f"({why}); {_KEY_HINT}, or pass it in api_key_env instead")
            register_secret(value)
        return url

    def api_key_problem(self) -> str | None:
        """What is wrong with the key `api_key_env` names, in this environment (unset, or too short or too plain
        to be redacted safely: never naming its value); None when it is fine or none is named. A good key is
        registered for redaction."""
        env = self.api_key_env
        if not env:
            return None
        key = os.environ.get(env)
        if not key:
            return f"environment variable {env} is not set"
        if key.strip().lower() in PLACEHOLDER_KEYS:
            return None  # the "no key" convention of local servers (vLLM's docs: EMPTY): nothing to keep secret
        if why := secret_problem(key):
            return (f"environment variable {env} holds an API key framesweep cannot keep out of its files and "
                    f"results ({why}: redacting it could rewrite ordinary text); {_KEY_HINT}, or leave "
                    "api_key_env out for a server that needs no key")
        register_secret(key)
        return None

class ModelSpec(StrictModel):
    """A frozen model to audit."""

    id: str = Field(pattern=r"^[A-Za-z0-9_.:@+-]+$", description="Model id used as a result key.")
    family: str = Field(description="Model family (prompt and media packing); see `engine.backends.families`.")
    path: str = Field(
        description="Checkpoint directory, or `tiny:<family>` for the locally built tiny random checkpoint."
    )
    backend: str = Field(
        default="vllm", description="A registered backend (`engine.config.backends`): vllm: engine in a Ray actor; "
        "openai: an OpenAI-compatible server (see `http`)."
    )
    max_frames: int | None = Field(
        default=None, gt=0, description="Frame ceiling from the context limit; budgets above it are skipped."
    )
    prompt: Literal["family", "checkpoint_template"] = Field(
        default="family", description="How the in-process engine's prompt is written: family: by the model "
        "family, checked once per engine start against what the checkpoint's own chat template renders for the "
        "same messages (a mismatch stops the run, naming both strings); checkpoint_template: by the checkpoint's "
        "chat template, for every request (a fine-tuned checkpoint with a template of its own). backend = openai: "
        "the server always renders its checkpoint's template, so leave it at family.")
    engine: EngineSpec = Field(default_factory=EngineSpec, description="Engine settings.")
    http: HTTPSpec | None = Field(default=None, description="Server settings for backend = openai.")
    checkpoint: CheckpointSpec | None = Field(
        default=None, description="Checkpoint-study metadata (base model, train frames, size, label), read by "
        "`framesweep checkpoints`.")

    def fits(self, budget: BudgetPoint) -> bool:
        """Whether `budget` is within this model's context ceiling (`max_frames`)."""
        return self.max_frames is None or budget.frames <= self.max_frames

    @field_validator("backend")
    @classmethod
    def _registered_backend(cls, v: str) -> str:
        return check_backend(v)

    @model_validator(mode="after")
    def _http_needs_server(self) -> ModelSpec:
        if self.backend == "openai" and self.http is None:
            raise ValueError("backend = 'openai' needs an [models.http] table with base_url")
        return self

    @model_validator(mode="after")
    def _template_choice_for_engine(self) -> ModelSpec:
        if self.backend == "openai" and self.prompt != "family":
            raise ValueError(f"prompt = {self.prompt!r} with backend = 'openai': the server renders its checkpoint's "
                             "chat template itself; leave prompt out")
        return self


def register_spec_secrets(spec_doc: Any) -> None:
    """Register the secrets of a spec recorded as a mapping (a manifest's): the credentials in each server's
    `base_url` and the key in the `api_key_env` variable each names (from this environment). Values too short
    or too plain to be redacted safely are left out (a run refuses them); anything malformed is skipped."""
    models = spec_doc.get("models") if isinstance(spec_doc, Mapping) else None
    for m in models if isinstance(models, list) else []:
        http = m.get("http") if isinstance(m, Mapping) else None
        if not isinstance(http, Mapping):
            continue
        url, env = http.get("base_url"), http.get("api_key_env")
        values = [v for _, v in url_credentials(url)] if isinstance(url, str) else []
        values += [os.environ.get(env, "")] if isinstance(env, str) and env else []
        for value in values:
            if value and secret_problem(value) is None:
                register_secret(value)
