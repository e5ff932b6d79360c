"""What an engine starts with, from the spec alone (`engine.backends.vllm_args`): `vllm.LLM`'s arguments for the
CPU build (core in the actor or in its own process), a GPU and several GPUs, checked as whole dicts without vLLM; and
the split of the engine actor: the argument builder is pure (no vLLM, no process), the actor neither builds its
arguments nor watches its processes itself."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from engine.backends.vllm_args import engine_env, in_process_core, llm_kwargs
from engine.config import EngineSpec

BACKENDS = Path(__file__).resolve().parents[2] / "engine" / "backends"

COMMON = {"model": "/m", "max_model_len": 4096, "max_num_seqs": 16, "enable_prefix_caching": True,
          "mm_processor_cache_gb": 4.0, "dtype": "float32", "seed": 7, "logprobs_mode": "processed_logprobs",
          "limit_mm_per_prompt": {"video": 1, "image": 1}}


def test_the_cpu_build_runs_one_eager_worker_in_the_actor() -> None:
    engine = EngineSpec(max_model_len=4096, dtype="float32")
    assert in_process_core(engine, cuda=False)
    assert llm_kwargs("/m", engine, 7, {"mm_processor_kwargs": {"fps": 2}}, cuda=False) == {
        **COMMON, "mm_processor_kwargs": {"fps": 2}, "enforce_eager": True, "distributed_executor_backend": "uni"}


def test_a_core_in_its_own_process_leaves_the_executor_to_vllm() -> None:
    engine = EngineSpec(max_model_len=4096, dtype="float32", engine_core="process", max_num_batched_tokens=2048)
    assert not in_process_core(engine, cuda=False)
    assert llm_kwargs("/m", engine, 7, None, cuda=False) == {**COMMON, "enforce_eager": True,
                                                              "max_num_batched_tokens": 2048}


def test_a_gpu_engine_gets_its_memory_share_and_several_gpus_vllms_own_workers() -> None:
    one = EngineSpec(max_model_len=4096, dtype="float32", gpu_memory_utilization=0.5)
    assert not in_process_core(one, cuda=True)
    assert llm_kwargs("/m", one, 7, None, cuda=True) == {**COMMON, "gpu_memory_utilization": 0.5}
    two = EngineSpec(max_model_len=4096, dtype="float32", tensor_parallel_size=2, extra={"max_logprobs": 30})
    assert llm_kwargs("/m", two, 7, None, cuda=True) == {
        **COMMON, "tensor_parallel_size": 2, "gpu_memory_utilization": 0.85, "distributed_executor_backend": "mp",
        "max_logprobs": 30}


@pytest.mark.parametrize(("extra", "seen"), [({"dtype": "bfloat16"}, "bfloat16"), ({}, "float32")])
def test_extra_is_handed_to_vllm_last(extra: dict, seen: str) -> None:
    engine = EngineSpec(max_model_len=4096, dtype="float32", extra=extra)
    assert llm_kwargs("/m", engine, 7, None, cuda=False)["dtype"] == seen


def test_the_environment_rounds_the_kv_cache_up_to_whole_gib(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_CPU_NUM_OF_RESERVED_CPU", raising=False)
    assert engine_env(EngineSpec(kv_cache_gib=1.5)) == {
        "VLLM_CPU_KVCACHE_SPACE": "2", "VLLM_CPU_NUM_OF_RESERVED_CPU": "0", "TOKENIZERS_PARALLELISM": "false"}


def _imports(module: str) -> set[str]:
    tree = ast.parse((BACKENDS / module).read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    return names | {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}


def _defines(module: str) -> set[str]:
    tree = ast.parse((BACKENDS / module).read_text())
    return {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def test_the_engine_actor_is_split_into_its_arguments_and_its_process_watch() -> None:
    """The builder imports neither vLLM nor psutil (a pure function of the spec); the process discovery and watchdog
    live in the supervisor, not in the actor's module."""
    assert _imports("vllm_args.py") <= {"__future__", "math", "os", "typing", "engine.config"}
    assert "psutil" in _imports("vllm_supervisor.py") and "vllm" not in _imports("vllm_supervisor.py")
    actor = _defines("vllm_actor.py")
    assert not {"_engine_processes", "_core_pids", "_alive", "_tree_rss_mb", "_watch_engine", "_die"} & actor
    assert "llm_kwargs" not in actor and "LLM(**llm_kwargs(" in (BACKENDS / "vllm_actor.py").read_text()
