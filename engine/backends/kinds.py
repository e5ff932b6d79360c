"""The backends a model may name (`ModelSpec.backend`), registered by name: how each is built for a model.

`engine.sweep.engines` starts a spec's models through this registry alone; it never asks which class a
backend is. A `BackendKind` declares what the start-up needs to know of it: how to build one for a model,
whether its engines are Ray actors (the run starts or joins Ray and checks the cluster can hold them
first), and what to log once it answers.

    vllm    the vLLM engine in Ray actors (`VLLMActorBackend`), a replica pool (`EnginePool`) for several
            replicas; a live warm engine of the same settings is reused (`engine.backends.warm`); before it
            starts, the family's prompt is checked against the checkpoint's chat template
            (`engine.backends.chat_template.check_prompt`)
    openai  an OpenAI-compatible HTTP server (`OpenAIHTTPBackend`)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

from engine.backends.base import Backend
from engine.backends.chat_template import check_prompt
from engine.backends.families import get_family
from engine.backends.model_ids import model_path_problem, resolve_model_path
from engine.backends.openai_http import OpenAIHTTPBackend
from engine.backends.pool import EnginePool
from engine.backends.vllm_actor import VLLMActorBackend
from engine.backends.warm import engine_key, engine_settings, list_engines, warm_name
from engine.config import ModelSpec
from engine.config.backends import BACKENDS

__all__ = ["BACKENDS", "OPENAI", "VLLM", "BackendKind", "in_cluster", "register_backend"]

log = logging.getLogger(__name__)


async def _nothing(model_id: str, backend: Backend) -> None:
    return None


def _no_problems(model: ModelSpec) -> list[tuple[str, str]]:
    return []


@dataclass(frozen=True)
class BackendKind:
    """One value of `ModelSpec.backend`.

    Attributes:
        build: (model spec, detached) -> the model's backend, not started yet (`detached`: an engine it
            starts is a warm engine, outliving the process).
        in_cluster: Its engines are Ray actors: a run starts or joins Ray first and checks the cluster's CPUs.
        started: (model id, backend) once every backend answers: log what was reused or started.
        check: (model spec) -> (its field, why) for each setting that cannot work here, checked before
            anything starts (`engine.sweep.preflight`): a checkpoint folder that is not there, an unset key.
    """

    build: Callable[[ModelSpec, bool], Awaitable[Backend]]
    in_cluster: bool = False
    started: Callable[[str, Backend], Awaitable[None]] = _nothing
    check: Callable[[ModelSpec], list[tuple[str, str]]] = _no_problems


def register_backend(name: str, kind: BackendKind) -> BackendKind:
    """Register the backend `name` (`BACKENDS`, below the spec: `ModelSpec.backend` then accepts `name`; a name
    registered twice is an error)."""
    BACKENDS.register(name, kind)
    return kind


def in_cluster(model: ModelSpec) -> bool:
    """Whether `model`'s engines run in the Ray cluster (its backend's `in_cluster`)."""
    return BACKENDS.get(model.backend).in_cluster


# --- vllm ---------------------------------------------------------------------------------------------------


def _vllm_check(m: ModelSpec) -> list[tuple[str, str]]:
    return [("path", why)] if (why := model_path_problem(m.path)) else []


async def _vllm_backend(m: ModelSpec, detached: bool) -> Backend:
    path = await asyncio.to_thread(resolve_model_path, m.path)
    await asyncio.to_thread(check_prompt, path, m.family, m.prompt, f"model {m.id}: ")
    family_kwargs = get_family(m.family).engine_kwargs(m.max_frames)
    key = engine_key(engine_settings(path, m.engine, family_kwargs))
    replicas = [VLLMActorBackend(path, m.engine, family_kwargs=family_kwargs, warm_name=warm_name(key, i),
                                 detached=detached) for i in range(m.engine.replicas)]
    return replicas[0] if len(replicas) == 1 else EnginePool(replicas)


async def _vllm_started(model_id: str, b: Backend) -> None:
    """Log which warm engines were reused and which started; a new engine beside warm ones of the same model with
    other settings: say which differ."""
    replicas = cast(list[VLLMActorBackend], list(b.replicas))
    reused = [r for r in replicas if r.reused]
    if reused:
        log.info("%s: reusing %d warm engine(s) (%s)", model_id, len(reused), ", ".join(str(r.warm_name)
                                                                                       for r in reused))
    if len(reused) < len(replicas):
        what = "warm engine" if replicas[0].detached else "engine"
        log.info("%s: started %d new %s(s) (key %s)", model_id, len(replicas) - len(reused), what,
                 replicas[0].warm_name)
    await _explain_mismatch(model_id, replicas[0])


async def _explain_mismatch(model_id: str, first: VLLMActorBackend) -> None:
    """A new engine started while warm engines of the same model run with other settings: say which differ."""
    if first.reused or first.detached:
        return
    mine = engine_settings(first.model_path, first.engine, first.family_kwargs, first.seed)
    for other in await list_engines(timeout_s=5.0):
        theirs = other.get("settings")
        if not theirs or theirs.get("model_path") != mine["model_path"]:
            continue
        diff = _diff(mine, theirs)
        log.warning("%s: warm engine %s serves %s with other settings (%s); a new engine was started for this "
                    "run", model_id, other["name"], mine["model_path"], "; ".join(diff[:6]) or "?")


def _diff(a: dict[str, Any], b: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for k in sorted(set(a) | set(b)):
        x, y = a.get(k), b.get(k)
        if isinstance(x, dict) and isinstance(y, dict):
            out += _diff(x, y, f"{prefix}{k}.")
        elif x != y:
            out.append(f"{prefix}{k}: {y!r} there, {x!r} here")
    return out


# --- openai -------------------------------------------------------------------------------------------------


async def _openai_backend(m: ModelSpec, detached: bool) -> Backend:
    assert m.http is not None  # the spec requires [models.http] for backend = "openai"
    return OpenAIHTTPBackend(m.http, m.path)


def _openai_check(m: ModelSpec) -> list[tuple[str, str]]:
    why = m.http.api_key_problem() if m.http is not None else None  # unset, or too weak to be redacted
    return [("http.api_key_env", why)] if why else []


VLLM = BackendKind(_vllm_backend, in_cluster=True, started=_vllm_started, check=_vllm_check)
"""`backend = "vllm"` (registered in `BACKENDS` as ``engine.backends.kinds:VLLM``)."""
OPENAI = BackendKind(_openai_backend, check=_openai_check)
"""`backend = "openai"` (registered in `BACKENDS` as ``engine.backends.kinds:OPENAI``)."""
