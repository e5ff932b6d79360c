"""Sweep specifications: the TOML a user writes, loaded into pydantic models.

Every model forbids unknown fields and describes every field, so a typo fails
before any work starts, with the field's dotted path in the message.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args

from pydantic import AfterValidator, Field, ValidationError, ValidationInfo, field_validator, model_validator

from engine.frames.plan import get_policy
from engine.spec.checkpoint import CheckpointSpec
from engine.spec.datasets import IMAGE_BUDGETS, DatasetSpec, StrictModel, SyntheticDatasetSpec
from engine.spec.source import SpecFileError, read_spec_file
from engine.spec.vllm_args import unknown_engine_args

__all__ = [
    "BudgetPoint",
    "CheckpointSpec",
    "DecodeSpec",
    "EngineSpec",
    "GridSpec",
    "HTTPSpec",
    "IsoComputeSpec",
    "ModelSpec",
    "PredictorSpec",
    "PromptSpec",
    "SpecError",
    "StoreSpec",
    "SweepSpec",
    "SyntheticDatasetSpec",
    "dataset_id",
    "dataset_spec_classes",
    "load_spec",
    "parse_spec",
    "register_dataset_spec",
    "unregister_dataset_spec",
]


class SpecError(ValueError):
    """A sweep spec that cannot be used; the message names the file and field paths."""


_Strict = StrictModel

MAX_SEED = 2**63 - 1
"""The largest seed a result row can hold (its `seed` column is Int64)."""
_SEED_DOC = f"from 0 to {MAX_SEED} (numpy's generators take no negative seed)"


def _check_policy(policy: str, frames: Iterable[int]) -> str:
    """`policy` if it is a known policy whose parameter can plan each visual frame count in `frames`."""
    name, at, param = policy.partition("@")
    if at and not param.strip():
        raise ValueError(f"sampling policy {policy!r} has nothing after '@': give {name}@<value>, or {name} for "
                         "its default")
    try:
        known = get_policy(policy)
        for n in frames:
            if n:  # text-only budgets sample nothing
                known.validate(n)
    except KeyError as err:
        raise ValueError(err.args[0]) from None
    return policy


def _grid_policy(policy: str, info: ValidationInfo) -> str:
    return _check_policy(policy, info.data.get("frames") or [])


class BudgetPoint(_Strict):
    """One visual budget of the grid: how many frames, at what size, sampled how."""

    frames: int = Field(ge=0, le=4096, description="Frames sent to the model; 0 means text-only (no media).")
    max_pixels: int | None = Field(
        default=None, gt=0, description="Upper bound on width*height of each frame (aspect kept); null: decoded size."
    )
    short_side: int | None = Field(
        default=None, gt=0, description="Resize each frame so its short side has this many pixels (aspect kept)."
    )
    min_pixels: int | None = Field(
        default=None, gt=0, description="Lower bound on width*height of each frame (aspect kept): smaller frames "
        "are enlarged to it, as Qwen-VL processors' min_pixels does (match tokens per frame to another harness); "
        "max_pixels and short_side never enlarge. Part of the protocol (`min<N>` in the budget id).",
    )
    exact_pixels: int | None = Field(
        default=None, gt=0, description="Exact width*height of each frame (aspect kept, each side rounded to the "
        "nearest even number): frames are shrunk or enlarged to it, so a budget sends the pixels it names "
        "whatever the video's size (iso-compute allocations). Excludes max_pixels, short_side and min_pixels. "
        "Part of the protocol (`ex<N>` in the budget id).",
    )
    policy: str = Field(
        default="uniform",
        description="Sampling policy: uniform, segment_centre, random, dense_head@<share>, fps@<rate>, "
        "nested or nested@<largest budget> (see `engine.frames.plan`).",
    )
    seed: int = Field(default=0, ge=0, le=MAX_SEED,
                      description=f"Seed for randomised sampling policies, {_SEED_DOC}; recorded on every row.")
    pipeline: Literal["raw", "cached"] | None = Field(
        default=None,
        description="raw: frames decoded from the video; cached: frames from the on-disk frame cache (see "
        "[decode]); null: the [decode] setting. Part of the protocol; a cached budget's id ends in -cached, so "
        "raw and cached budgets run side by side in one sweep. Text-only budgets take none.",
    )
    id: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9_.@+-]+$",
        description="Stable budget id used as a result key; derived from the other fields when omitted.",
    )

    @field_validator("policy")
    @classmethod
    def _known_policy(cls, policy: str, info: ValidationInfo) -> str:
        """A known policy whose parameter can plan this budget (`fps@0`, `nested@2` for 4 frames fail here)."""
        frames = info.data.get("frames")  # none when `frames` failed: it is reported on its own
        return _check_policy(policy, [frames] if frames else [])

    @model_validator(mode="after")
    def _one_size(self) -> BudgetPoint:
        if self.max_pixels is not None and self.short_side is not None:
            raise ValueError("set at most one of max_pixels and short_side")
        if self.min_pixels is not None and self.max_pixels is not None and self.min_pixels > self.max_pixels:
            raise ValueError(f"min_pixels ({self.min_pixels}) is above max_pixels ({self.max_pixels})")
        if self.exact_pixels is not None and (self.max_pixels or self.short_side or self.min_pixels):
            raise ValueError("exact_pixels sets the frame size: give no max_pixels, short_side or min_pixels with it")
        if self.frames == 0 and (self.max_pixels or self.short_side or self.min_pixels or self.exact_pixels):
            raise ValueError("a text-only budget (frames = 0) takes no resolution")
        if self.frames == 0 and self.pipeline == "cached":
            raise ValueError("a text-only budget (frames = 0) decodes nothing: it takes no cached pipeline")
        return self

    @property
    def budget_id(self) -> str:
        """The key of this budget in result rows."""
        if self.id is not None:
            return self.id
        if self.frames == 0:
            return "text"
        return f"f{self.frames}" if self.protocol_id == "default" else f"f{self.frames}-{self.protocol_id}"

    @property
    def protocol_id(self) -> str:
        """Everything but the frame count, named as in the budget id (``default`` when nothing remains).

        `engine.metrics.grid.protocol_id` derives the same from a result row's columns.
        """
        parts = []
        if self.max_pixels is not None:
            parts.append(f"px{self.max_pixels}")
        if self.short_side is not None:
            parts.append(f"s{self.short_side}")
        if self.min_pixels is not None:
            parts.append(f"min{self.min_pixels}")
        if self.exact_pixels is not None:
            parts.append(f"ex{self.exact_pixels}")
        if self.policy != "uniform":
            parts.append(self.policy)
        if self.seed != 0:
            parts.append(f"seed{self.seed}")
        if self.pipeline == "cached":
            parts.append("cached")
        return "-".join(parts) or "default"

    @property
    def is_text_only(self) -> bool:
        return self.frames == 0


_PARALLEL = ("tensor_parallel_size", "pipeline_parallel_size")


class EngineSpec(_Strict):
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


class HTTPSpec(_Strict):
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
    max_retries: int = Field(default=3, ge=0, description="Retries on 5xx, connection errors and timeouts.")
    backoff_s: float = Field(default=0.5, ge=0, description="First retry delay; doubles each retry.")
    jpeg_quality: int = Field(default=85, ge=1, le=100, description="JPEG quality of the frames sent.")
    send_video_metadata: bool = Field(
        default=True,
        description="Send fps/frame indices per request (server needs --trust-request-mm-kwargs).",
    )


class ModelSpec(_Strict):
    """A frozen model to audit."""

    id: str = Field(pattern=r"^[A-Za-z0-9_.:@+-]+$", description="Model id used as a result key.")
    family: str = Field(description="Model family (prompt and media packing); see `engine.backends.prompts`.")
    path: str = Field(
        description="Checkpoint directory, or `tiny:<family>` for the locally built tiny random checkpoint."
    )
    backend: Literal["vllm", "openai"] = Field(
        default="vllm", description="vllm: engine in a Ray actor; openai: an OpenAI-compatible server (see `http`)."
    )
    max_frames: int | None = Field(
        default=None, gt=0, description="Frame ceiling from the context limit; budgets above it are skipped."
    )
    engine: EngineSpec = Field(default_factory=EngineSpec, description="Engine settings.")
    http: HTTPSpec | None = Field(default=None, description="Server settings for backend = openai.")
    checkpoint: CheckpointSpec | None = Field(
        default=None, description="Checkpoint-study metadata (base model, train frames, size, label), read by "
        "`framesweep checkpoints`.")

    def fits(self, budget: BudgetPoint) -> bool:
        """Whether `budget` is within this model's context ceiling (`max_frames`)."""
        return self.max_frames is None or budget.frames <= self.max_frames

    @model_validator(mode="after")
    def _http_needs_server(self) -> ModelSpec:
        if self.backend == "openai" and self.http is None:
            raise ValueError("backend = 'openai' needs an [models.http] table with base_url")
        return self





class PromptSpec(_Strict):
    """How questions are asked and answers scored."""

    scoring: Literal["letter", "generate"] = Field(
        default="letter",
        description="letter: one constrained answer token with option-letter probabilities; "
        "generate: free greedy answer + official extraction.",
    )
    system_prompt: str | None = Field(default=None, description="System message; null uses the family default.")
    max_new_tokens: int = Field(default=16, ge=1, description="Token limit for `generate` scoring.")
    extraction: Literal["official", "strict", "lmms_eval"] = Field(
        default="official",
        description="How an MCQ option letter is read from generated text: official: the benchmark adapter's own "
        "rule; strict: a corrected reading (engine.scoring.extract_letter_videomme_strict); lmms_eval: lmms-eval "
        "0.7.x's extract_mcq_answer, for item-by-item comparison with lmms-eval logs. Recorded in `scoring`.",
    )


class PredictorSpec(_Strict):
    """The hybrid-frame predictor (`framesweep predict`): what it may answer."""

    text_only_option: bool = Field(
        default=False,
        description="Offer 'no frames (text only)' among the predictor's options (when the grid has a "
        "text-only budget); false: the options are the grid's visual frame counts only.",
    )


class DecodeSpec(_Strict):
    """How videos are decoded."""

    decoder: str = Field(default="pyav", description="Decoder name (see `engine.frames.decode.DECODERS`).")
    pipeline: Literal["raw", "cached"] = Field(
        default="raw",
        description="raw: decode the video files; cached: frames from the on-disk frame cache (decoded once, "
        "kept by video content hash, frame index and size), shared by later sweeps and models.",
    )
    cache_dir: Path | None = Field(default=None, description="Frame cache folder; null: <framesweep cache>/frames.")
    cache_format: Literal["jpeg", "png", "npy"] = Field(
        default="jpeg", description="How cached frames are stored: jpeg (q95, lossy) or png / npy (lossless)."
    )
    max_videos_in_flight: int = Field(default=4, ge=1, description="Videos decoded or being answered at once.")
    threads: int = Field(
        default=2, ge=1,
        description="Decode worker threads in this process; each decodes one video at a time on one core "
        "(pyav), so raise it (with max_videos_in_flight) on machines with more cores.")
    actors: int | None = Field(
        default=None, ge=0,
        description="CPU decode actors in the Ray cluster (spread over nodes); decoded frames travel through "
        "Ray's object store. 0: decode in this process's threads. null (auto): one per node when joining a "
        "cluster (ray_address / --address), threads in this process otherwise.",
    )
    actor_cpus: float = Field(default=1.0, gt=0, description="CPUs each decode actor reserves.")
    max_source_pixels: int | None = Field(
        default=7680 * 4320, gt=0,
        description="Largest stored frame (width x height) a video or image may have; a larger one is refused "
        "before any frame is decoded, its jobs error rows (error_kind permanent) naming the file and its size. "
        "Default: 8K UHD (33.2 MP, ~100 MB per RGB frame). null: no cap.")


class StoreSpec(_Strict):
    """Where and how often results are committed."""

    out_dir: Path = Field(description="Results directory (relative paths are taken from the working directory).")
    commit_interval_s: float = Field(default=5.0, gt=0, description="Commit buffered rows at least this often.")
    max_buffered_rows: int = Field(default=512, ge=1, description="Commit once this many rows are buffered.")


class GridSpec(_Strict):
    """A cross product of budgets, expanded into `budgets` at load (text-only, frames = 0, once)."""

    frames: list[Annotated[int, Field(ge=0, le=4096)]] = Field(min_length=1, description="Frame counts (0: text-only).")
    max_pixels: list[Annotated[int, Field(gt=0)] | None] = Field(
        default=[None], description="Pixel caps per frame (null: stored size).")
    short_sides: list[Annotated[int, Field(gt=0)]] = Field(
        default=[], description="Short-side sizes, crossed after `max_pixels`.")
    policies: list[Annotated[str, AfterValidator(_grid_policy)]] = Field(
        default=["uniform"], description="Sampling policies (each must plan every frame count of `frames`).")
    seeds: list[Annotated[int, Field(ge=0, le=MAX_SEED)]] = Field(
        default=[0], description=f"Seeds of the randomised policies, {_SEED_DOC}.")

    def expand(self) -> list[BudgetPoint]:
        """frames x resolutions x policies x seeds, in that order, without repeats."""
        sizes = [(m, None) for m in self.max_pixels] + [(None, s) for s in self.short_sides]
        out: dict[str, BudgetPoint] = {}
        for n in self.frames:
            for mp, ss in sizes:
                for pol in self.policies:
                    for seed in self.seeds:
                        b = (BudgetPoint(frames=0) if n == 0 else
                             BudgetPoint(frames=n, max_pixels=mp, short_side=ss, policy=pol, seed=seed))
                        out.setdefault(b.budget_id, b)
        return list(out.values())

class IsoComputeSpec(_Strict):
    """Budgets that all spend one pixel budget (frames x pixels per frame) differently, expanded at load.

    Every point has ``frames * max_pixels == total_pixels`` (rounded down per frame), or on the
    `exact_pixels` axis ``frames * exact_pixels == total_pixels`` (frames enlarged or shrunk to it, so
    a video smaller than the cap still sends its pixels), or on the `short_side` axis, for a video of
    aspect `aspect` (long / short side), the even short side whose frame holds ``total_pixels /
    frames`` pixels (rounded down). `engine.spec.grid.iso_compute` builds the same points.
    """

    total_pixels: int = Field(gt=0, description="Pixels across all frames of one request (e.g. 9_700_000).")
    frames: list[Annotated[int, Field(gt=0, le=4096)]] = Field(
        default=[32, 64, 128], min_length=1, description="Frame counts to allocate over.")
    axis: Literal["max_pixels", "exact_pixels", "short_side"] = Field(
        default="max_pixels", description="max_pixels: a pixel cap per frame (only shrinks: a smaller video "
        "sends fewer pixels); exact_pixels: every frame shrunk or enlarged to that many pixels, so each "
        "allocation sends its total on any video; short_side: the short side that gives that many pixels for a "
        "video of `aspect`.")
    aspect: float = Field(default=16 / 9, gt=0, description="Long side over short side (short_side axis only).")
    policy: Annotated[str, AfterValidator(_grid_policy)] = Field(
        default="uniform", description="Sampling policy of every point.")
    seed: int = Field(default=0, ge=0, le=MAX_SEED, description=f"Seed of every point, {_SEED_DOC}.")
    pipeline: Literal["raw", "cached"] | None = Field(default=None, description="Pipeline of every point.")

    @model_validator(mode="after")
    def _points_plan(self) -> IsoComputeSpec:
        self.expand()  # a frame count that leaves too few pixels fails here, with this table's path
        return self

    def expand(self) -> list[BudgetPoint]:
        """One budget point per frame count, in the order given."""
        points = []
        for n in self.frames:
            if n <= 0:
                raise ValueError(f"frame counts must be positive, got {n}")
            per_frame = self.total_pixels // n
            if per_frame < 4:
                raise ValueError(f"{n} frames leave fewer than 4 pixels per frame of {self.total_pixels}")
            size = ({self.axis: per_frame} if self.axis != "short_side" else
                    {"short_side": max(2, int(math.sqrt(per_frame / self.aspect)) // 2 * 2)})
            points.append(BudgetPoint(frames=n, policy=self.policy, seed=self.seed, pipeline=self.pipeline, **size))
        return points


class SweepSpec(_Strict):
    """A whole sweep: models x dataset items x budget grid."""

    sweep_id: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="Name of this sweep; recorded on every row.")
    models: list[ModelSpec] = Field(min_length=1, description="Models to run.")
    dataset: DatasetSpec | None = Field(default=None, description="Benchmark adapter and its settings (one "
                                        "dataset; or give `[[datasets]]`).")
    datasets: list[DatasetSpec] = Field(default=[], description="Several benchmarks run in one sweep on the same "
                                        "engines (instead of `[dataset]`); items, jobs, status and metrics are "
                                        "per dataset.")
    budgets: list[BudgetPoint] = Field(default=[], description="The budget grid (with those `grids` expand to).")
    grids: list[GridSpec] = Field(default=[], description="Budget cross products, added to `budgets` at load.")
    iso_compute: list[IsoComputeSpec] = Field(
        default=[], description="Iso-compute allocations (one pixel budget over several frame counts), added to "
        "`budgets` at load.")
    primary_protocol: str | None = Field(
        default=None, description="The protocol (budget id without f<N>: default, px50176, random-seed1, cached, "
        "...) whose chain the report leads with; null: the protocol with the most budgets (ties: default, then "
        "the one with the fewest options).")
    prompt: PromptSpec = Field(default_factory=PromptSpec, description="Prompt and scoring options.")
    predictor: PredictorSpec = Field(default_factory=PredictorSpec, description="Hybrid-frame predictor options.")
    decode: DecodeSpec = Field(default_factory=DecodeSpec, description="Decoding options.")
    store: StoreSpec = Field(description="Results store (optional when the command line gives --out).")
    ray_address: str | None = Field(
        default=None, description="Ray cluster to join; null: the cluster in RAY_ADDRESS (as ray.init reads it, "
        "e.g. under `ray job submit`), else the local cluster `framesweep engines up` started, else a new local one.")
    ray_dashboard: bool = Field(
        default=False, description="Start Ray's dashboard with a new local cluster (`--dashboard`; its address is "
        "printed); a cluster that is joined keeps its own setting.")
    max_attempts: int = Field(default=3, ge=1, description="Attempts per job before it is recorded as an error.")

    @model_validator(mode="after")
    def _one_way_to_name_datasets(self) -> SweepSpec:
        if (self.dataset is None) == (not self.datasets):
            raise ValueError("give one [dataset] table or [[datasets]] tables (exactly one of the two)")
        ids = [dataset_id(d) for d in self.dataset_specs()]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"datasets named twice: {', '.join(dup)} (give each an `id`)")
        return self

    def dataset_specs(self) -> list[Any]:
        """The sweep's datasets: `[[datasets]]`, or the one `[dataset]`."""
        return list(self.datasets) if self.datasets else [self.dataset]

    @model_validator(mode="after")
    def _expand_grids(self) -> SweepSpec:
        """Add the budgets of [[iso_compute]] and [[grids]]; every visual budget without a pipeline takes
        the [decode] one first, so a budget given twice (by hand and by a grid) is one budget only when
        it is the same budget, pipeline included."""
        def resolved(b: BudgetPoint) -> BudgetPoint:
            if b.pipeline is None and not b.is_text_only:
                return b.model_copy(update={"pipeline": self.decode.pipeline})
            return b

        self.budgets[:] = [resolved(b) for b in self.budgets]
        ids = {b.budget_id for b in self.budgets}
        for added in [*(b for iso in self.iso_compute for b in iso.expand()), *(b for g in self.grids for b in g.expand())]:
            b = resolved(added)
            if b.budget_id not in ids:
                ids.add(b.budget_id)
                self.budgets.append(b)
        if not self.budgets:
            raise ValueError("no budgets: give [[budgets]] or [[grids]]")
        return self

    @model_validator(mode="after")
    def _protocols(self) -> SweepSpec:
        """One frame count per protocol (visual budgets took the [decode] pipeline in `_expand_grids`)."""
        seen: dict[tuple[str, int], str] = {}
        for b in self.budgets:
            if b.is_text_only:
                continue
            other = seen.setdefault((b.protocol_id, b.frames), b.budget_id)
            if other != b.budget_id:
                raise ValueError(f"budgets {other} and {b.budget_id} have the same frame count ({b.frames}) and "
                                 f"protocol ({b.protocol_id}): a chain orders its budgets by frames")
        known = {b.protocol_id for b in self.budgets if not b.is_text_only} or {"default"}
        if self.primary_protocol is not None and self.primary_protocol not in known:
            raise ValueError(f"primary_protocol {self.primary_protocol!r} is no protocol of the budgets; "
                             f"known: {', '.join(sorted(known))}")
        return self

    @model_validator(mode="after")
    def _unique_keys(self) -> SweepSpec:
        for what, ids in (("models", [m.id for m in self.models]), ("budgets", [b.budget_id for b in self.budgets])):
            dup = sorted({i for i in ids if ids.count(i) > 1})
            if dup:
                raise ValueError(f"duplicate {what} ids: {', '.join(dup)}")
        return self

    @model_validator(mode="after")
    def _dataset_budget_names(self) -> SweepSpec:
        """Every budget a dataset names exists; an image budget's id is no budget of the sweep's."""
        ids = {b.budget_id for b in self.budgets}
        for i, ds in enumerate(self.dataset_specs()):
            images = [b.budget_id for b in self.image_budgets(ds)] if getattr(ds, "asks_images", False) else []
            where = f"datasets.{i}.{ds.name}.budgets" if self.datasets else f"dataset.{ds.name}.budgets"
            if clash := sorted(ids & set(IMAGE_BUDGETS.values())) if images else []:
                raise ValueError(f"budget id {clash[0]!r} is the name of image benchmark {dataset_id(ds)!r}'s "
                                 "image budget: give that budget another id")
            named = getattr(ds, "budgets", None) or []
            if dup := sorted({n for n in named if named.count(n) > 1}):
                raise ValueError(f"{where} names {', '.join(dup)} twice")
            if unknown := [n for n in named if n not in ids and n not in images]:
                raise ValueError(f"{where} names {', '.join(map(repr, unknown))}, no budget of this sweep; known: "
                                 f"{', '.join([*sorted(ids), *images])}")
        return self

    @model_validator(mode="after")
    def _checkpoint_bases(self) -> SweepSpec:
        ids = {m.id for m in self.models}
        for m in self.models:
            base = m.checkpoint.base if m.checkpoint else None
            if base is not None and (base == m.id or base not in ids):
                raise ValueError(f"models {m.id}: checkpoint.base {base!r} names no other model of this spec; "
                                 f"known: {', '.join(sorted(ids - {m.id}))}")
        return self

    def budgets_in_cost_order(self) -> list[BudgetPoint]:
        """Budgets ordered text-only first, then by frames and pixels."""
        return _cost_order(self.budgets)

    def budgets_for(self, model: ModelSpec, dataset: str | None = None) -> list[BudgetPoint]:
        """The budgets `model` runs, in cost order: those within its context ceiling (`max_frames`); with a
        `dataset` id, that dataset's (`dataset_budgets`; an id no dataset of the spec has: every budget)."""
        spec = self._dataset(dataset)
        budgets = self.budgets_in_cost_order() if spec is None else self.dataset_budgets(spec)
        return [b for b in budgets if model.fits(b)]

    def image_budgets(self, dataset: Any) -> list[BudgetPoint]:
        """An image benchmark's image budgets: one image at the dataset's size (null: as stored, the model's
        processor then applies its own limits), once per pipeline the sweep's visual budgets use (the [decode]
        one when there is none), named as in `IMAGE_BUDGETS`."""
        pipelines = {b.pipeline or self.decode.pipeline for b in self.budgets if not b.is_text_only}
        size = {k: getattr(dataset, k, None) for k in ("max_pixels", "short_side", "min_pixels")}
        return [BudgetPoint(frames=1, pipeline=p, id=IMAGE_BUDGETS[p], **size)  # type: ignore[arg-type]
                for p in sorted(pipelines or {self.decode.pipeline}, key=list(IMAGE_BUDGETS).index)]

    def dataset_budgets(self, dataset: Any) -> list[BudgetPoint]:
        """The budgets a dataset spec runs, in cost order: those its `budgets` names; by default every budget
        of the sweep, or for an image benchmark its image budgets (the sweep's budgets when it has no visual
        one: a text-only sweep stays text-only)."""
        named = getattr(dataset, "budgets", None)
        images = self.image_budgets(dataset) if getattr(dataset, "asks_images", False) else []
        if named is None:
            has_visual = any(not b.is_text_only for b in self.budgets)
            return _cost_order(images) if images and has_visual else self.budgets_in_cost_order()
        known = {b.budget_id: b for b in [*self.budgets, *images]}
        return _cost_order([known[n] for n in named])

    def _dataset(self, dataset: str | None) -> Any:
        return next((d for d in self.dataset_specs() if dataset_id(d) == dataset), None) if dataset else None

    def with_out_dir(self, out_dir: Path) -> SweepSpec:
        """A copy of this spec writing to another directory."""
        return self.model_copy(update={"store": self.store.model_copy(update={"out_dir": Path(out_dir)})})


def _cost_order(budgets: Iterable[BudgetPoint]) -> list[BudgetPoint]:
    """Text-only first, then by frames and pixels."""
    return sorted(budgets, key=lambda b: (b.frames, b.max_pixels or b.exact_pixels or b.short_side or 0, b.budget_id))


_DATASET_SPECS: list[type[StrictModel]] = list(get_args(get_args(DatasetSpec)[0]))


def dataset_id(spec: Any) -> str:
    """The `dataset` column of a dataset spec's rows: its `id`, else its adapter's name."""
    return getattr(spec, "id", None) or str(spec.name)


def dataset_spec_classes() -> dict[str, type[StrictModel]]:
    """Adapter name -> the spec class of its `[dataset]` table (built-in and registered)."""
    return {get_args(cls.model_fields["name"].annotation)[0]: cls for cls in _DATASET_SPECS}


def register_dataset_spec(cls: type[StrictModel]) -> type[StrictModel]:
    """Accept `cls` as a `[dataset]` table, tagged by its `name: Literal["..."]` field.

    A new adapter module registers its spec class here and its factory with
    `engine.datasets.register_adapter`: nothing else needs editing.
    """
    (name,) = get_args(cls.model_fields["name"].annotation)
    known = dataset_spec_classes()
    if name in known and known[name] is not cls:
        raise ValueError(f"a dataset spec named {name!r} is registered twice")
    if name not in known:
        _DATASET_SPECS.append(cls)
        _rebuild_dataset_fields()
    return cls


def unregister_dataset_spec(cls: type[StrictModel]) -> None:
    """Forget a registered dataset spec class (tests that register one for a while)."""
    if cls in _DATASET_SPECS:
        _DATASET_SPECS.remove(cls)
        _rebuild_dataset_fields()


def _rebuild_dataset_fields() -> None:
    union = Union[tuple(_DATASET_SPECS)]  # noqa: UP007 - a union built at run time
    SweepSpec.model_fields["dataset"].annotation = Annotated[union, Field(discriminator="name")] | None
    SweepSpec.model_fields["datasets"].annotation = list[Annotated[union, Field(discriminator="name")]]
    SweepSpec.model_rebuild(force=True)


def _format_error(source: str, err: ValidationError) -> str:
    lines = [f"{source}: invalid sweep spec ({err.error_count()} error(s))"]
    for e in err.errors():
        path = ".".join(str(p) for p in e["loc"]) or "<root>"
        lines.append(f"  {path}: {e['msg']}")
    return "\n".join(lines)


def parse_spec(data: dict[str, Any], source: str = "<spec>") -> SweepSpec:
    """Validate a spec mapping; raise `SpecError` naming each bad field path."""
    try:
        return SweepSpec.model_validate(data)
    except ValidationError as err:
        raise SpecError(_format_error(source, err)) from None


def load_spec(path: str | Path, out_dir: str | Path | None = None, *, writes: bool = True) -> SweepSpec:
    """Load and validate a TOML sweep spec; `out_dir` (the CLI's --out) sets `store.out_dir`, so a spec
    needs no [store] table when it is given. A command that writes no results (`writes=False`:
    inspect, engines) needs neither: its spec gets a store in the current folder that it never uses."""
    p = Path(path)
    try:
        data = read_spec_file(p)
    except SpecFileError as err:
        raise SpecError(str(err)) from None
    if out_dir is not None and isinstance(data.get("store", {}), dict):
        data["store"] = {**data.get("store", {}), "out_dir": str(out_dir)}
    elif not writes and "store" not in data:
        data["store"] = {"out_dir": "."}
    return parse_spec(data, str(p))
