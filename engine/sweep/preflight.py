"""Checks a spec's environment before any work: what pydantic cannot see from the spec alone.

Every problem is named by its spec field and reported together, before the results
directory, the manifest or an engine is touched (`SpecError`, exit 2 in the CLI):
unknown model families and decoders, a model path that does not exist, an unset API key
variable, a server `base_url` that is not an http(s) URL, an output directory that is a file
or cannot be written. A model path or output directory the system cannot even look up (a NUL
byte, a name longer than the file system takes) is named first, alone: every other check of
it would fail inside the OS.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from engine.backends.families import get_family
from engine.backends.kinds import BACKENDS
from engine.config import SpecError, SweepSpec
from engine.frames.decode import get_decoder

__all__ = ["preflight"]


_NAME_MAX, _PATH_MAX = 255, 4096  # where the file system does not say (Linux's limits)


def _limits(path: Path) -> tuple[int, int]:
    """The longest file name and path the file system of `path`'s nearest existing ancestor takes."""
    probe = path if path.is_absolute() else Path.cwd() / path
    while True:
        try:
            return os.pathconf(probe, "PC_NAME_MAX"), os.pathconf(probe, "PC_PATH_MAX")
        except (OSError, ValueError):
            if probe.parent == probe:
                return _NAME_MAX, _PATH_MAX
            probe = probe.parent


def _lookup_problem(path: str) -> str | None:
    """Why the system cannot look `path` up at all (a NUL byte, a name or a path too long), or None."""
    if "\x00" in path:
        return "holds a NUL byte, which no path can"
    p = Path(path).expanduser()
    name_max, path_max = _limits(p)
    if (n := len(os.fsencode(p))) > path_max:
        return f"is {n} bytes long, more than the {path_max} the system takes"
    long = next((part for part in p.parts if len(os.fsencode(part)) > name_max), None)
    if long is not None:
        return (f"has a name of {len(os.fsencode(long))} bytes ({long[:24]}...), more than the {name_max} the file "
                "system takes")
    return None


def _unusable_paths(spec: SweepSpec, engines: bool, only_engines: bool) -> list[str]:
    """The model paths and the output directory that cannot be looked up (`_lookup_problem`), by field."""
    found = []
    for i, m in enumerate(spec.models):
        checked = engines and BACKENDS.get(m.backend).in_cluster and not m.path.startswith("tiny:")
        if checked and (why := _lookup_problem(m.path)):
            found.append(f"models.{i}.path: {why}")
    if not only_engines and (why := _lookup_problem(str(spec.store.out_dir))):
        found.append(f"store.out_dir: {why}")
    return found


def _base_url_problem(url: str) -> str | None:
    """Why `url` cannot be an OpenAI-compatible server's root, or None (its query, which may hold a key, unshown)."""
    shown = url.split("?", 1)[0]
    try:
        parts = urlsplit(url)
        port_ok = parts.port is None or parts.port > 0
    except ValueError as err:  # a port that is no number, a bracketed host that is no address
        return f"{shown!r} is not a URL ({err})"
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok or any(c.isspace() for c in url):
        return f"{shown!r} is not an http(s) URL of a server (e.g. http://127.0.0.1:8000)"
    return None


def _base_url_problems(spec: SweepSpec, engines: bool, only_engines: bool) -> list[str]:
    if not engines or only_engines:
        return []
    return [f"models.{i}.http.base_url: {why}" for i, m in enumerate(spec.models)
            if m.http is not None and not BACKENDS.get(m.backend).in_cluster
            and (why := _base_url_problem(m.http.base_url))]


def _refuse(source: str, what: str, problems: list[str]) -> None:
    raise SpecError("\n".join([f"{source}: {what} cannot start ({len(problems)} problem(s))",
                               *(f"  {p}" for p in problems)]))


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
    what = "the engines" if only_engines else "the sweep"
    if unusable := _unusable_paths(spec, engines, only_engines):
        _refuse(source, what, unusable)  # nothing else can be checked of a path the system cannot look up
    problems: list[str] = _base_url_problems(spec, engines, only_engines)
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
    if problems:
        _refuse(source, what, problems)
