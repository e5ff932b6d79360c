"""What one vLLM engine is started with: its environment and `vllm.LLM`'s arguments, from the spec alone.

Pure functions of an `EngineSpec` (and the model, seed, family arguments and whether CUDA is there): no vLLM
import, no process, so every setting's effect is tested without an engine. The engine actor
(`engine.backends.vllm_actor.VLLMWorker`) applies them; its processes are watched by
`engine.backends.vllm_supervisor`.
"""

from __future__ import annotations

import math
import os
from typing import Any

from engine.config import EngineSpec

__all__ = ["engine_env", "in_process_core", "llm_kwargs"]


def engine_env(engine: EngineSpec) -> dict[str, str]:
    """Environment variables the engine process needs (CPU build settings are harmless on GPU)."""
    return {
        "VLLM_CPU_KVCACHE_SPACE": str(max(1, math.ceil(engine.kv_cache_gib))),
        "VLLM_CPU_NUM_OF_RESERVED_CPU": os.environ.get("VLLM_CPU_NUM_OF_RESERVED_CPU", "0"),
        "TOKENIZERS_PARALLELISM": "false",
    }


def in_process_core(engine: EngineSpec, cuda: bool) -> bool:
    """Whether vLLM's engine core runs in the actor's own process (`engine.engine_core`; auto: on the CPU
    build with one worker, where a separate core process only costs two more vLLM start-ups)."""
    if engine.engine_core != "auto":
        return engine.engine_core == "in_process"
    return not cuda and engine.world_size == 1


def llm_kwargs(model_path: str, engine: EngineSpec, seed: int, family_kwargs: dict[str, Any] | None, *,
               cuda: bool) -> dict[str, Any]:
    """The arguments of `vllm.LLM` for one engine: the spec's settings, the family's engine arguments, and what the
    machine decides (`cuda`: a GPU build with a GPU; the core in this process or not, `in_process_core`).

    MCQ scoring constrains the first answer token to the option letters; `logprobs_mode="processed_logprobs"`
    makes the returned log-probabilities the full, renormalised distribution over them. `engine.extra` is handed
    to vLLM untouched, last (it wins)."""
    kwargs: dict[str, Any] = {
        "model": model_path,
        "max_model_len": engine.max_model_len,
        "max_num_seqs": engine.max_num_seqs,
        "enable_prefix_caching": engine.enable_prefix_caching,
        "mm_processor_cache_gb": engine.mm_processor_cache_gb,
        "dtype": engine.dtype,
        "seed": seed,
        "logprobs_mode": "processed_logprobs",
        "limit_mm_per_prompt": {"video": 1, "image": 1},
        **(family_kwargs or {}),
        **engine.vllm_args(cuda),  # enforce_eager (vLLM's default on a GPU), the parallel sizes
    }
    if engine.max_num_batched_tokens is not None:
        kwargs["max_num_batched_tokens"] = engine.max_num_batched_tokens
    if cuda:
        kwargs["gpu_memory_utilization"] = engine.gpu_memory_utilization
    elif in_process_core(engine, cuda):
        kwargs["distributed_executor_backend"] = "uni"  # the CPU build's one worker, in this process too
    if engine.world_size > 1:
        # this actor holds all the engine's GPUs (one placement-group bundle): vLLM's own worker
        # processes drive them; its Ray executor would look for one bundle per GPU instead
        kwargs["distributed_executor_backend"] = "mp"
    kwargs.update(engine.extra)
    return kwargs
