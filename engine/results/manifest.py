"""`OUT/manifest.json`: what was run in a results directory, read and written in one place.

Every reader goes through `read_manifest`, with one failure rule: a manifest that is not
JSON, not an object, or whose known fields have the wrong shape (a count that is not a
non-negative integer, a spec that is not a table, ...) raises `ManifestError`, one sentence
naming the file and the field, which every command reports as exit 2. Keys it does not
know are kept as they are (an importer may add its own).

Fields `run` writes: ``sweep_id``, ``framesweep_version``, ``spec`` (the latest run's),
``datasets``, ``expected_jobs`` / ``expected_by_dataset`` (what `status` counts),
``answer_fingerprints`` (per model, dataset and budget id: the fingerprints of how its
answers are made, `engine.sweep.fingerprint`), ``answer_fields`` (each fingerprint's fields,
so a refused resume can name what changed), ``history`` (one entry per run: start time,
framesweep version, policy, spec, counts) and ``created_at`` / ``updated_at``.

The manifest is written scrubbed of every registered secret (`engine.runtime.output.write_json`);
reading one registers the secrets its specs name (`engine.config.register_spec_secrets`: the
credentials in a server's URL, the key in the variable a model names), so that a command that reads
a directory written before the scrub (`report`, `export`, `status`) writes none of them anywhere.
"""

from __future__ import annotations

import errno
import json
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.config import register_spec_secrets
from engine.results.errors import ManifestError, StoreFullError
from engine.runtime.output import write_json

__all__ = ["MANIFEST", "ManifestError", "manifest_sweep_id", "read_manifest", "write_manifest"]

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"

_Count = Annotated[int, Field(strict=True, ge=0)]


class _Manifest(BaseModel):
    """The shape of the fields framesweep reads (checked, never used to rewrite the file)."""

    model_config = ConfigDict(extra="allow")

    sweep_id: str | None = None
    framesweep_version: str | None = None
    dataset: str | None = None
    datasets: list[str] = []
    spec: dict[str, Any] | None = None
    expected_jobs: dict[str, dict[str, _Count]] = {}
    expected_by_dataset: dict[str, dict[str, dict[str, _Count]]] = {}
    answer_fingerprints: dict[str, dict[str, dict[str, list[str]]]] = {}
    answer_fields: dict[str, dict[str, Any]] = {}
    history: list[dict[str, Any]] = []


def _shape_problem(err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "<root>"
    got = repr(first.get("input"))
    got = got if len(got) <= 60 else got[:57] + "..."
    return f"{where} is {got} ({first['msg'].lower()})"


def read_manifest(out_dir: str | Path, *, required: bool = False) -> dict[str, Any]:
    """`OUT/manifest.json` as a dict; {} when there is none (unless `required`).

    Raises:
        ManifestError: naming the file: it is missing (with `required`), unreadable, not JSON, not an
            object, or a known field has the wrong shape.
    """
    path = Path(out_dir) / MANIFEST
    if not path.is_file():
        if required or path.exists():
            raise ManifestError(f"{Path(out_dir)}: no {MANIFEST} file (not a framesweep results directory?)")
        return {}
    fix = "restore it, or remove it and rerun `framesweep run` to write a new one"
    try:
        doc = json.loads(path.read_bytes())
    except OSError as err:
        raise ManifestError(f"{path}: cannot be read ({err.strerror or err})") from None
    except (ValueError, UnicodeDecodeError) as err:  # JSONDecodeError is a ValueError
        raise ManifestError(f"{path}: not valid JSON ({str(err).splitlines()[0]}); {fix}") from None
    if not isinstance(doc, dict):
        raise ManifestError(f"{path}: a JSON {type(doc).__name__}, not a framesweep manifest (an object); {fix}")
    try:
        _Manifest.model_validate(doc)
    except ValidationError as err:
        raise ManifestError(f"{path}: not a framesweep manifest: {_shape_problem(err)}; {fix}") from None
    for spec in [doc.get("spec"), *(run.get("spec") for run in doc.get("history", []) if isinstance(run, dict))]:
        register_spec_secrets(spec)
    return doc


def manifest_sweep_id(out_dir: str | Path) -> str | None:
    """The sweep id `OUT/manifest.json` names (None without a manifest; `ManifestError` for a damaged one)."""
    return read_manifest(out_dir).get("sweep_id")


def write_manifest(out_dir: str | Path, info: dict[str, Any]) -> None:
    """Write `OUT/manifest.json` atomically, keeping its first creation time.

    Raises:
        StoreFullError: for lack of space (the old manifest stays as it was).
    """
    path = Path(out_dir) / MANIFEST
    now = datetime.now(UTC).isoformat()
    try:
        created = read_manifest(out_dir).get("created_at", now)
    except ManifestError as err:
        log.warning("%s; it is rewritten", err)
        created = now
    doc = {**info, "created_at": created, "updated_at": now}
    try:
        write_json(path, doc)
    except OSError as err:
        if err.errno in (errno.ENOSPC, errno.EDQUOT):
            raise StoreFullError(err.errno, f"{path}: no space left on device to write the manifest (every "
                                 "committed shard is intact: free space and rerun)") from err
        raise
