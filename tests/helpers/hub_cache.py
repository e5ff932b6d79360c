"""A local Hugging Face hub cache in a test folder, laid out as huggingface_hub writes it (no network).

`models--<org>--<name>/blobs/<sha256>` holds each file's bytes, `snapshots/<commit>/<file>` links to its blob,
and `refs/main` names the commit: what `snapshot_download(..., local_files_only=True)` and
`try_to_load_from_cache` read.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def cache_model(cache: Path, repo_id: str, files: dict[str, bytes]) -> Path:
    """Put `files` of model `repo_id` into the hub cache at `cache` (its default revision); returns the snapshot."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / COMMIT
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    snapshot.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        link = snapshot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(COMMIT)
    return snapshot
