"""Engine start-up: one backend per model of a spec (vLLM in Ray actors, replica pools, HTTP clients).

A vLLM engine whose settings match a live warm engine (`framesweep engines up`) exactly is reused
(`engine.backends.warm`); otherwise a new one starts, and the log says which. Start-up is
cancel-safe: whatever was started is closed again when the caller cancels (a sweep that finds
nothing pending). An engine that dies while it starts (vLLM refused a setting, the checkpoint did not
load) ends the start with `EngineStartError`: one paragraph with vLLM's own last error line and the
spec fields it names, instead of the actor's traceback (which goes to the log).

Progress: `progress("ray", 0)` / `progress("ray_up", 0)` around starting or joining Ray, and
`progress("engine_up", i)` once the backend of the spec's i-th model answers (`engine.cli.progress`).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from typing import Any

from engine.backends.base import Backend
from engine.backends.families import get_family
from engine.backends.openai_http import OpenAIHTTPBackend
from engine.backends.pool import EnginePool
from engine.backends.tiny import resolve_model_path
from engine.backends.vllm_actor import VLLMActorBackend
from engine.backends.warm import engine_key, engine_settings, list_engines, warm_name
from engine.config import ModelSpec, SweepSpec
from engine.runtime.cluster import ensure_ray
from engine.runtime.placement import Placement, check_cpu_capacity, resolve_gpus

__all__ = ["EngineStartError", "engine_nodes", "start_backends"]

log = logging.getLogger(__name__)

Progress = Callable[[str, int], None]


class EngineStartError(RuntimeError):
    """A model's engine died while it started; the message names vLLM's error and the spec fields it points at."""


# the last exception line of a traceback (`pydantic_core._pydantic_core.ValidationError: 1 validation error ...`)
_ERROR_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?([A-Za-z_]\w*(?:Error|Exception|Exit)):[ \t]*", re.MULTILINE)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ENV_FIELDS = {"VLLM_CPU_KVCACHE_SPACE": "kv_cache_gib"}  # settings vLLM reads from the environment


def _cause(err: BaseException) -> str:
    """vLLM's own error from the traceback Ray carries: the last exception line and the lines after it (a
    pydantic error's message, without its dump of every argument), on one line."""
    text = _ANSI.sub("", str(err))
    found = list(_ERROR_LINE.finditer(text))
    if not found:
        return next((line.strip() for line in text.splitlines() if line.strip()), type(err).__name__)
    last = found[-1]
    lines = []
    for line in text[last.end():].splitlines():
        if line.strip().startswith("For further information visit"):
            break
        lines.append(line.strip())
    message = " ".join(part for part in lines if part).split(" [type=")[0]
    return f"{last.group(1)}: {message}" if message else last.group(1)


def _fields(index: int, m: ModelSpec, cause: str) -> list[str]:
    """The spec fields of model `index` that vLLM's message names (as vLLM spells them: `max_model_len`)."""
    engine = m.engine
    names = {k: f"models.{index}.engine.{k}" for k in type(engine).model_fields if k != "extra"}
    names |= {k: f"models.{index}.engine.extra.{k}" for k in engine.extra}
    names |= {env: f"models.{index}.engine.{field}" for env, field in _ENV_FIELDS.items()}
    return sorted({path for key, path in names.items() if re.search(rf"\b{re.escape(key)}\b", cause)})


def _start_failure(index: int, m: ModelSpec, err: BaseException) -> EngineStartError | None:
    """`err` as an `EngineStartError`, when it is an engine actor that died starting (None: anything else)."""
    from ray.exceptions import RayError

    if not isinstance(err, RayError):
        return None
    cause = _cause(err)
    fields = _fields(index, m, cause)
    where = (f"the spec field{'s' if len(fields) > 1 else ''} it names: {', '.join(fields)}" if fields else
             f"models.{index}.path ({m.path}) and models.{index}.engine")
    return EngineStartError(f"models.{index} ({m.id}): its vLLM engine did not start. vLLM said: {cause}. "
                            f"Check {where}.")


async def _start_one(index: int, m: ModelSpec, b: Backend, progress: Progress) -> None:
    try:
        await b.start()
    except Exception as err:
        if (failed := _start_failure(index, m, err)) is None:
            raise
        raise failed from err
    progress("engine_up", index)


async def _vllm_backend(m: ModelSpec, detached: bool) -> Backend:
    path = await asyncio.to_thread(resolve_model_path, m.path)
    family_kwargs = get_family(m.family).engine_kwargs(m.max_frames)
    key = engine_key(engine_settings(path, m.engine, family_kwargs))
    replicas = [VLLMActorBackend(path, m.engine, family_kwargs=family_kwargs, warm_name=warm_name(key, i),
                                 detached=detached) for i in range(m.engine.replicas)]
    return replicas[0] if len(replicas) == 1 else EnginePool(replicas)


def _check_capacity(spec: SweepSpec, engines_only: bool) -> None:
    """CPU engines that the cluster could never hold all at once (beside the run's decode actors, unless
    only the engines start: `engines up`) fail here, before any of them starts."""
    import ray

    engines = {m.id: (m.engine.replicas, Placement(gpus=resolve_gpus(m.engine.num_gpus, m.engine.world_size)))
               for m in spec.models if m.backend != "openai"}
    d = spec.decode
    n_decode = d.actors if d.actors is not None else (
        sum(1 for n in ray.nodes() if n.get("Alive")) if spec.ray_address else 0)
    decode_cpus = n_decode * d.actor_cpus if any(b.frames for b in spec.budgets) and not engines_only else 0.0
    check_cpu_capacity(engines, decode_cpus, ray.cluster_resources().get("CPU", 0.0))


def _log_start(model_id: str, b: Backend) -> None:
    replicas = b.replicas
    reused = [r for r in replicas if r.reused]
    if reused:
        log.info("%s: reusing %d warm engine(s) (%s)", model_id, len(reused),
                 ", ".join(str(r.warm_name) for r in reused if isinstance(r, VLLMActorBackend)))
    if len(reused) < len(replicas) and isinstance(replicas[0], VLLMActorBackend):
        what = "warm engine" if replicas[0].detached else "engine"
        log.info("%s: started %d new %s(s) (key %s)", model_id, len(replicas) - len(reused), what,
                 replicas[0].warm_name)


async def start_backends(spec: SweepSpec, *, detached: bool = False,
                         progress: Progress | None = None) -> dict[str, Backend]:
    """Start one backend per model of the spec (vLLM in a Ray actor, or an HTTP client).

    `detached`: the vLLM engines started are warm engines (named by their settings, outliving this
    process); live warm engines with the same settings are reused either way. `progress(event, n)`
    hears "ray", "ray_up" and "engine_up" (see the module's docstring).

    Raises:
        EngineStartError: an engine died while it started (vLLM's error and the spec fields it names).
    """
    say = progress or (lambda event, n: None)
    backends: dict[str, Backend] = {}
    try:
        if any(m.backend != "openai" for m in spec.models):
            say("ray", 0)
            await asyncio.to_thread(ensure_ray, spec.ray_address, dashboard=spec.ray_dashboard)
            say("ray_up", 0)
            await asyncio.to_thread(_check_capacity, spec, detached)
        for m in spec.models:
            if m.backend == "openai":
                assert m.http is not None
                backends[m.id] = OpenAIHTTPBackend(m.http, m.path)
            else:
                backends[m.id] = await _vllm_backend(m, detached)
        starts = [asyncio.ensure_future(_start_one(i, m, backends[m.id], say)) for i, m in enumerate(spec.models)]
        try:
            await asyncio.gather(*starts)
        except BaseException:
            for t in starts:
                t.cancel()
            await asyncio.gather(*starts, return_exceptions=True)
            raise
    except BaseException:  # a failed or cancelled start leaves nothing running
        await asyncio.gather(*(b.close() for b in backends.values()), return_exceptions=True)
        raise
    for mid, b in backends.items():
        _log_start(mid, b)
        await _explain_mismatch(mid, b)
    return backends


def engine_nodes(backends: dict[str, Backend]) -> set[str]:
    """The Ray nodes the backends' engines run on (where videos should be decoded); empty for HTTP servers."""
    return {node for b in backends.values() for r in b.replicas if (node := getattr(r, "node_id", None))}


async def _explain_mismatch(model_id: str, b: Backend) -> None:
    """A new engine started while warm engines of the same model run with other settings: say which differ."""
    first = b.replicas[0]
    if not isinstance(first, VLLMActorBackend) or first.reused or first.detached:
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
