"""Checks a spec's environment before any work: what pydantic cannot see from the spec alone.

Every problem is named by its spec field and reported together, before the results
directory, the manifest or an engine is touched (`SpecError`, exit 2 in the CLI):
unknown model families and decoders, a model path that does not exist (with the nearest
existing folder), a hub id that is not in the local Hugging Face cache while downloads are off
(`HF_HUB_OFFLINE` or `TRANSFORMERS_OFFLINE`), an unset API key variable, an API key or a Ray token
too short or too plain to be redacted safely, a server `base_url` that is not an http(s) URL, an
output directory that is a file or cannot be written. A model path or output directory the system
cannot even look up (a NUL byte, a name longer than the file system takes) is named first, alone:
every other check of it would fail inside the OS.

A run checks once: `preflight` returns a `Preflight` record of what passed, and a `Sweep` given one that covers its
spec (`Sweep(..., checked=...)`, as `framesweep run` does after its own check) does not check again; a `Sweep`
without one checks when it starts.
"""

from __future__ import annotations

import difflib
import itertools
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from engine.backends.families import get_family
from engine.backends.kinds import BACKENDS, BackendKind
from engine.config import ModelSpec, SpecError, SweepSpec
from engine.frames.decode import get_decoder
from engine.runtime.checkpoint import model_folder
from engine.runtime.secrets import MIN_SECRET_LEN, secret_problem

__all__ = ["Preflight", "close_sibling", "hub_cache", "is_hub_id", "model_problems", "offline_hub_problem",
           "preflight"]

_OFFLINE_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
_SIBLINGS_READ = 10_000
"""Entries of a folder read when looking for the name nearest a missing one (a huge folder is not listed whole)."""


def is_hub_id(path: str) -> bool:
    """Whether a model path is taken as a hub id (`org/name`) when no such folder exists here."""
    return path.count("/") == 1 and not path.startswith(("/", ".", "~", "tiny:"))


def hub_cache() -> Path:
    """The local Hugging Face hub cache huggingface_hub reads (`HF_HUB_CACHE`, else `HF_HOME/hub`)."""
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def _offline_var() -> str | None:
    """The variable that turns the hub's downloads off (`HF_HUB_OFFLINE=1`), None when downloads are on."""
    from huggingface_hub import constants

    for name in _OFFLINE_VARS:
        if os.environ.get(name, "").strip().upper() in ("1", "ON", "YES", "TRUE"):
            return f"{name}={os.environ[name]}"
    return "HF_HUB_OFFLINE" if constants.HF_HUB_OFFLINE else None


def close_sibling(path: str) -> str | None:
    """The existing path nearest a missing one: its first missing part swapped for the closest name beside it
    (`./modles/Qwen` -> `models/Qwen`, or `models` when that has no `Qwen`); None when nothing is close."""
    if path.startswith("tiny:"):
        return None
    try:
        parts = Path(path).expanduser().parts
        depth = next((i for i in range(len(parts)) if not Path(*parts[: i + 1]).exists()), None)
        if depth is None:
            return None
        parent = Path(*parts[:depth]) if depth else Path(".")
        names = [e.name for e in itertools.islice(parent.iterdir(), _SIBLINGS_READ)]
        near = difflib.get_close_matches(parts[depth], names, n=1, cutoff=0.7)
        if not near:
            return None
        guess = parent / near[0]
        whole = guess.joinpath(*parts[depth + 1:])
        return str(whole if whole.exists() else guess)
    except OSError:  # a name too long, a folder that cannot be listed: no guess
        return None


def offline_hub_problem(path: str) -> str | None:
    """Why a hub id cannot be loaded here: no folder of that name, not in the local hub cache, and downloads off
    (vLLM would fail on it only after Ray and the engine started); None otherwise."""
    if not is_hub_id(path) or (offline := _offline_var()) is None:
        return None
    try:
        if model_folder(path) is not None:
            return None
    except OSError:  # a name the file system refuses: the backend's own check names it
        return None
    near = close_sibling(path)
    return (f"{path} is no folder here, and as a hub id it is not in the local Hugging Face cache ({hub_cache()}); "
            f"{offline} forbids downloading it" + (f" (did you mean {near}?)" if near else ""))


def model_problems(m: ModelSpec, kind: BackendKind | None = None) -> list[tuple[str, str]]:
    """(field, why) for each setting of model `m` that cannot work here: its backend's own check (a missing
    checkpoint folder named with the nearest existing one), then a hub id out of reach offline."""
    kind = kind or BACKENDS.get(m.backend)
    found = []
    for field, why in kind.check(m):
        near = close_sibling(m.path) if field == "path" else None
        found.append((field, why + (f" (did you mean {near}?)" if near else "")))
    if kind.in_cluster and not found and (offline := offline_hub_problem(m.path)):
        found.append(("path", offline))
    return found


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


def _token_problem() -> str | None:
    """The Ray token in RAY_AUTH_TOKEN is redacted wherever it shows up: one that could be ordinary text is
    refused (never naming its value)."""
    token = os.environ.get("RAY_AUTH_TOKEN")
    if token and (why := secret_problem(token)):
        return (f"RAY_AUTH_TOKEN: the cluster's token cannot be kept out of files and results ({why}: redacting it "
                f"could rewrite ordinary text); give the cluster a random token of at least {MIN_SECRET_LEN} "
                "characters (`ray get-auth-token --generate` makes one)")
    return None


@dataclass(frozen=True, eq=False)
class Preflight:
    """A spec that passed `preflight`, and what was checked of it.

    Attributes:
        spec: The spec checked (the very object: a copy with another field is another spec).
        engines: What starting its engines needs was checked too.
        only_engines: Only what starting its vLLM engines needs was checked (`framesweep engines up`).
    """

    spec: SweepSpec
    engines: bool
    only_engines: bool

    def covers(self, spec: SweepSpec, engines: bool) -> bool:
        """Whether this check is the one a run of `spec` needs (`engines`: it starts its own engines)."""
        return self.spec is spec and not self.only_engines and (self.engines or not engines)


def preflight(spec: SweepSpec, source: str = "<spec>", engines: bool = True, *,
              only_engines: bool = False) -> Preflight:
    """Raise `SpecError` naming every field whose value cannot work here; else the record of the check.

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
        problems += [f"models.{i}.{field}: {why}" for field, why in model_problems(m, kind)]  # its path, its key
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
        _refuse(source, what, problems)
    return Preflight(spec, engines, only_engines)
