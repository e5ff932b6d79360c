"""Checks a spec's environment before any work: what pydantic cannot see from the spec alone.

Every problem is named by its spec field and reported together, before the results
directory, the manifest or an engine is touched (`SpecError`, exit 2 in the CLI):
unknown model families and decoders, a model path that does not exist, an unset API key
variable, an output directory that is a file or cannot be written.
"""

from __future__ import annotations

import os
from pathlib import Path

from engine.backends.families import get_family
from engine.backends.tiny import BUILDERS
from engine.config import SpecError, SweepSpec
from engine.frames.decode import get_decoder

__all__ = ["preflight"]


def _model_path_problem(path: str) -> str | None:
    if path.startswith("tiny:"):
        family = path.removeprefix("tiny:")
        return None if family in BUILDERS else (f"no tiny checkpoint for {family!r}; known: "
                                                f"{', '.join('tiny:' + f for f in sorted(BUILDERS))}")
    p = Path(path).expanduser()
    if p.exists():
        return None if p.is_dir() else f"{path} is not a checkpoint directory"
    # `org/name` may be a model hub id that vLLM downloads; a path that looks local must exist
    if path.startswith(("/", ".", "~")) or path.count("/") != 1:
        return f"{path}: no such checkpoint directory"
    return None


def _out_dir_problem(out: Path) -> str | None:
    probe = out
    while not probe.exists():  # the nearest existing ancestor must be a writable directory
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is a file, not a directory"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{probe} is not writable"
    return None


def preflight(spec: SweepSpec, source: str = "<spec>", engines: bool = True, *, only_engines: bool = False) -> None:
    """Raise `SpecError` naming every field whose value cannot work here.

    Args:
        spec: The validated spec.
        source: The spec's file name, for the message.
        engines: Check what starting the engines needs (model paths, API keys); False where the
            caller brings its own backends.
        only_engines: Check only what starting the spec's vLLM engines needs (their families and
            model paths; `framesweep engines up`, which decodes nothing, writes no results and
            leaves the HTTP models alone).
    """
    problems: list[str] = []
    for i, m in enumerate(spec.models):
        if only_engines and m.backend == "openai":
            continue
        try:
            get_family(m.family)
        except KeyError as err:
            problems.append(f"models.{i}.family: {err.args[0]}")
        if not engines:
            continue
        if m.backend == "vllm" and (why := _model_path_problem(m.path)):
            problems.append(f"models.{i}.path: {why}")
        if m.http is not None and m.backend == "openai" and m.http.api_key_env \
                and not os.environ.get(m.http.api_key_env):
            problems.append(f"models.{i}.http.api_key_env: environment variable {m.http.api_key_env} is not set")
    if not only_engines and any(b.frames for b in spec.budgets):
        try:
            get_decoder(spec.decode.decoder)
        except KeyError as err:
            problems.append(f"decode.decoder: {err.args[0]}")
        except ImportError as err:  # registered, but its library is not installed
            problems.append(f"decode.decoder: {spec.decode.decoder} cannot load ({err})")
    if not only_engines and (why := _out_dir_problem(Path(spec.store.out_dir))):
        problems.append(f"store.out_dir: {why}")
    if problems:
        what = "the engines" if only_engines else "the sweep"
        raise SpecError("\n".join([f"{source}: {what} cannot start ({len(problems)} problem(s))",
                                   *(f"  {p}" for p in problems)]))
