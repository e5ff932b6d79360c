"""A model entry's checkpoint on disk: where it is (`model_folder`) and what it is (`checkpoint_fingerprint`).

One resolver and one fingerprint serve every reader: the warm-engine key, the answer fingerprint
recorded on result rows and in the manifest, and the export's model hash.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from engine.backends.tiny import tiny_checkpoint_dir
from engine.runtime.atomic import file_sha256

__all__ = ["checkpoint_fingerprint", "model_folder"]

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")


def model_folder(path: str) -> Path | None:
    """The local folder of a spec's `models.N.path`, None when there is none.

    `path` is a folder, ``tiny:<family>`` (the local tiny build, when built) or a hub id, found in the
    local hub cache's snapshot of its default revision (nothing is downloaded)."""
    if path.startswith("tiny:"):
        folder = tiny_checkpoint_dir(path.removeprefix("tiny:"))
        return folder if folder.is_dir() else None
    p = Path(path).expanduser()
    if p.is_dir():
        return p
    if path.count("/") == 1 and not path.startswith((".", "/", "~")):  # a hub id: its local snapshot, if cached
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

        try:
            return Path(snapshot_download(path, local_files_only=True))
        except (LocalEntryNotFoundError, HFValidationError, OSError):  # not cached, or not a hub id
            return None
    return None


def checkpoint_fingerprint(folder: Path, *, mtime: bool = True) -> str | None:
    """A fingerprint of a checkpoint folder's content (SHA-256 hex): the bytes of `config.json` and of
    every `*.index.json`, and each weight file's name and size, with `mtime` also its modification time
    (weights are never read); None when `folder` is not a local folder with a `config.json` (a hub id
    that vLLM resolves itself).

    With `mtime` (the warm-engine key) a checkpoint rebuilt in place is another engine; without it (the
    export's provenance hash) two copies of one checkpoint hash alike."""
    if not (folder / "config.json").is_file():
        return None
    h = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = f.relative_to(folder).as_posix()
        try:
            if rel == "config.json" or f.name.endswith(".index.json"):
                h.update(f"{rel}\0sha256 {file_sha256(f)}\n".encode())
            elif f.name.endswith(_WEIGHT_SUFFIXES):
                st = f.stat()
                h.update(f"{rel}\0{st.st_size}{f' {st.st_mtime_ns}' if mtime else ''}\n".encode())
        except OSError as err:  # unreadable, or gone meanwhile: part of the fingerprint all the same
            h.update(f"{rel}\0{type(err).__name__}\n".encode())
    return h.hexdigest()
