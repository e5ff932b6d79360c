"""A model entry's checkpoint on disk: where it is (`model_folder`) and what it is (`checkpoint_fingerprint`).

One resolver and one fingerprint serve every reader: the warm-engine key, the answer fingerprint
recorded on result rows and in the manifest, and the export's model hash.

The fingerprint is the checkpoint's content: every file in the folder and its subfolders (hidden ones
included), by its path in the folder and the SHA-256 of its bytes (config, processor and preprocessor
configs, tokenizer files, chat template, generation config, custom code, the weights, and whatever else
custom code loaded with ``trust_remote_code`` may read). Left out is only what no loader reads, as code or
as config, and what changes from one copy of a checkpoint to another:

- documentation by its suffix (`_DOC_SUFFIXES`: ``*.md``, ``*.rst``, images, PDF) and licence files
  named exactly ``LICENSE``, ``LICENCE``, ``NOTICE`` or ``COPYING`` (any case, no suffix);
- version-control and download bookkeeping (`_BOOKKEEPING`): ``.gitattributes``, ``.gitignore``, the
  ``.git/`` folder, and ``.cache/huggingface/`` (the hub's per-download metadata and locks).

A file that a loader can read (`_LOADABLE`: ``*.py``, ``*.json``, ``*.safetensors``, ``*.bin``, ``*.txt``,
``*.jinja``, ..., and any name with ``tokenizer`` in it) is never left out, whatever its name or folder:
``LICENSE.py``, ``notice_utils.py``, ``README.md.json`` and ``.git/x.json`` all count. Two copies of one
checkpoint fingerprint alike; an edit to any counted file changes it.

Hashing the weights' bytes on every run would cost seconds per GB, so a file above `_DIRECT_BYTES` has its
digest kept in a small cache file (``checkpoint-digests.json`` in the framesweep cache folder) keyed by its
resolved path, size, modification and change times (ns) and inode: a rerun costs a `stat` per file, and a
file written again (another mtime, ctime or inode) is hashed again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any, Self

from engine.runtime.atomic import atomic_write, file_sha256
from engine.runtime.output import json_line
from engine.runtime.paths import cache_dir, tiny_checkpoint_dir

__all__ = ["checkpoint_fingerprint", "model_folder"]

log = logging.getLogger(__name__)

_DIRECT_BYTES = 1 << 20
"""Files up to this size are hashed on every call (cheaper than a cache entry); larger ones through the cache."""
_DOC_SUFFIXES = (".md", ".markdown", ".rst", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".pdf")
"""Documentation by suffix: no loader reads these (a model card edited upstream is the same checkpoint)."""
_LICENCE_NAMES = frozenset({"license", "licence", "notice", "copying"})
"""Licence files left out only under these exact names (lower-cased, no suffix): ``LICENSE.py`` counts."""
_BOOKKEEPING = (".git/", ".cache/huggingface/")
"""Folders (relative to the checkpoint) of version control and hub download metadata."""
_BOOKKEEPING_NAMES = frozenset({".gitattributes", ".gitignore"})
_LOADABLE = (".py", ".pyc", ".so", ".json", ".jsonl", ".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf",
             ".npz", ".npy", ".h5", ".msgpack", ".onnx", ".model", ".spm", ".vocab", ".tiktoken", ".txt", ".jinja",
             ".yaml", ".yml", ".toml", ".cfg", ".ini")
"""Suffixes of files that code, configs, weights or tokenizers are loaded from: never left out."""
_CACHE_LOCK = threading.Lock()


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
    """The fingerprint of a checkpoint folder's content (SHA-256 hex; see the module docstring), None when
    `folder` is not a local folder with a `config.json` (a hub id that vLLM resolves itself).

    `mtime` is accepted for callers written when the fingerprint read weight files' sizes and times instead
    of their bytes; it has no effect: the fingerprint is the content alone, so a checkpoint rebuilt in place
    with the same bytes is the same checkpoint, and one rebuilt with other bytes another."""
    del mtime
    folder = Path(folder)
    if not (folder / "config.json").is_file():
        return None
    h = hashlib.sha256()
    with _DigestCache() as cache:
        for f in _answer_files(folder):
            rel = f.relative_to(folder).as_posix()
            try:
                h.update(f"{rel}\0sha256 {cache.digest(f)}\n".encode())
            except OSError as err:  # unreadable, or gone meanwhile: part of the fingerprint all the same
                h.update(f"{rel}\0{type(err).__name__}\n".encode())
    return h.hexdigest()


def _answer_files(folder: Path) -> list[Path]:
    """The files of `folder` (and its subfolders, hidden ones included, symlinks followed as in a hub snapshot)
    that can shape an answer: all but those `_left_out` names."""
    out = [f for f in folder.rglob("*") if not _left_out(f.relative_to(folder).as_posix()) and f.is_file()]
    return sorted(out, key=lambda p: p.relative_to(folder).as_posix())


def _left_out(rel: str) -> bool:
    """Whether the file at `rel` (a POSIX path in the checkpoint) is documentation or bookkeeping that no
    loader reads (see the module docstring)."""
    name = rel.rsplit("/", 1)[-1].lower()
    if name.endswith(_LOADABLE) or "tokenizer" in name:
        return False
    return (name.endswith(_DOC_SUFFIXES) or name in _LICENCE_NAMES or name in _BOOKKEEPING_NAMES
            or rel.startswith(_BOOKKEEPING))


class _DigestCache:
    """SHA-256 of large files, kept by (resolved path, size, mtime_ns, ctime_ns, inode) in the framesweep cache
    folder (the change time too: a file written again with its old mtime restored is still hashed again).

    A lost or unreadable cache only costs hashing again; concurrent writers may drop each other's new entries
    (the last write wins), never write a wrong one (an entry is checked against the file's stat on use)."""

    def __init__(self) -> None:
        self.path = cache_dir() / "checkpoint-digests.json"
        self.entries: dict[str, list[Any]] = {}
        self.changed = False

    def __enter__(self) -> Self:
        try:
            data = json.loads(self.path.read_text())
            self.entries = data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            self.entries = {}
        return self

    def digest(self, f: Path) -> str:
        st = f.stat()
        if st.st_size <= _DIRECT_BYTES:
            return file_sha256(f)
        real = str(f.resolve())
        stamp = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
        entry = self.entries.get(real)
        if isinstance(entry, list) and len(entry) == len(stamp) + 1 and entry[:-1] == stamp:
            return str(entry[-1])
        digest = file_sha256(f)
        after = f.stat()
        if [after.st_size, after.st_mtime_ns, after.st_ctime_ns, after.st_ino] == stamp:  # not rewritten meanwhile
            self.entries[real] = [*stamp, digest]
            self.changed = True
        return digest

    def __exit__(self, *exc: object) -> None:
        if not self.changed:
            return
        with _CACHE_LOCK:
            live = {k: v for k, v in self.entries.items() if os.path.exists(k)}  # files gone: entries dropped
            try:
                atomic_write(self.path, json_line(live), durable=False)
            except OSError as err:  # a cache that cannot be written: hashed again next time
                log.debug("could not write %s: %s", self.path, err)
