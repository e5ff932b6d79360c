"""Checks a spec's environment before any work: what pydantic cannot see from the spec alone.

Every problem is named by its spec field and reported together, before the results
directory, the manifest or an engine is touched (`SpecError`, exit 2 in the CLI):
unknown model families and decoders, a model path that does not exist, an unset API key
variable, an API key or a Ray token too short or too plain to be redacted safely, an output
directory that is a file or cannot be written.
"""

from __future__ import annotations

import os
from pathlib import Path

from engine.backends.families import get_family
from engine.backends.kinds import BACKENDS
from engine.config import SpecError, SweepSpec
from engine.frames.decode import get_decoder
from engine.runtime.secrets import MIN_SECRET_LEN, secret_problem

__all__ = ["preflight"]


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


def _token_problem() -> str | None:
    """The Ray token in RAY_AUTH_TOKEN is redacted wherever it shows up: one that could be ordinary text is
    refused (never naming its value)."""
    token = os.environ.get("RAY_AUTH_TOKEN")
    if token and (why := secret_problem(token)):
        return (f"RAY_AUTH_TOKEN: the cluster's token cannot be kept out of files and results ({why}: redacting it "
                f"could rewrite ordinary text); give the cluster a random token of at least {MIN_SECRET_LEN} "
                "characters (`ray get-auth-token --generate` makes one)")
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
        kind = BACKENDS.get(m.backend)
        if only_engines and not kind.in_cluster:
            continue
        try:
            get_family(m.family)
        except KeyError as err:
            problems.append(f"models.{i}.family: {err.args[0]}")
        if not engines:
            continue
        problems += [f"models.{i}.{field}: {why}" for field, why in kind.check(m)]  # its path, its key
    if not only_engines and any(b.frames for b in spec.budgets):
        try:
            get_decoder(spec.decode.decoder)
        except KeyError as err:
            problems.append(f"decode.decoder: {err.args[0]}")
        except ImportError as err:  # registered, but its library is not installed
            problems.append(f"decode.decoder: {spec.decode.decoder} cannot load ({err})")
    if not only_engines and (why := _out_dir_problem(Path(spec.store.out_dir))):
        problems.append(f"store.out_dir: {why}")
    if why := _token_problem():
        problems.append(why)
    if problems:
        what = "the engines" if only_engines else "the sweep"
        raise SpecError("\n".join([f"{source}: {what} cannot start ({len(problems)} problem(s))",
                                   *(f"  {p}" for p in problems)]))
