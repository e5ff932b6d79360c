"""Image benchmarks' media: a path under the media root, or embedded bytes written once to a cache.

Hugging Face parquet files embed images as ``{bytes, path}`` structs. framesweep's
decoders read files, so each distinct image is written once, named by its content
hash (questions over the same image then share one "video" and one decode).
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from PIL import Image

from engine.datasets._paths import resolve_under
from engine.datasets.errors import RowError
from engine.runtime.atomic import atomic_write
from engine.runtime.paths import cache_dir

__all__ = ["image_cache_dir", "image_file", "image_media"]

_MAGIC = ((b"\x89PNG", ".png"), (b"\xff\xd8\xff", ".jpg"), (b"GIF8", ".gif"), (b"BM", ".bmp"))


def image_cache_dir(configured: Path | None, dataset: str) -> Path:
    """Where a dataset's embedded images are written."""
    return Path(configured) if configured is not None else cache_dir() / "images" / dataset


def _suffix(data: bytes, name: str | None) -> str:
    """The file suffix of image bytes; a row problem when they are no image (e.g. base64 of some text), which
    would otherwise count as media found and fail as an error row on every run."""
    for magic, ext in _MAGIC:
        if data.startswith(magic):
            return ext
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return ".webp"
    try:  # a format without a magic number above (TIFF, ...): Pillow tells
        with Image.open(io.BytesIO(data)) as im:
            im.verify()
    except Exception:  # noqa: BLE001 - Pillow raises several types for bytes it cannot read
        raise RowError(f"image: the {len(data)} bytes are no image Pillow can read (they start "
                       f"{data[:12]!r})") from None
    suffix = Path(name).suffix.lower() if name else ""
    return suffix if suffix and len(suffix) <= 6 else ".img"


def _write_once(data: bytes, cache: Path, name: str | None) -> tuple[str, Path]:
    digest = hashlib.sha256(data).hexdigest()[:24]
    path = cache / f"{digest}{_suffix(data, name)}"
    if not path.exists():
        atomic_write(path, data)
    return digest, path


_PNG_MODES = frozenset({"1", "L", "LA", "I", "I;16", "P", "RGB", "RGBA"})


def image_file(image: Image.Image, cache: Path) -> tuple[str, Path]:
    """(media id, file) for a decoded image (a task's PIL image): written once to `cache` as PNG, losslessly, named
    by the hash of its PNG bytes. A mode PNG cannot hold (CMYK, YCbCr, ...) is stored as RGB, as models see it."""
    buffer = io.BytesIO()
    (image if image.mode in _PNG_MODES else image.convert("RGB")).save(buffer, format="PNG")
    return _write_once(buffer.getvalue(), cache, None)


def image_media(value: Any, *, media_root: Path | None, cache: Path, source: str | Path, row: int,
                item_id: str | None = None) -> tuple[str, Path]:
    """(media id, file) for an `image` cell: a path string, raw bytes, or a ``{bytes, path}`` struct.

    A path is resolved under `media_root` (escapes rejected); bytes are written to `cache`.
    """
    data: bytes | None = None
    name: str | None = None
    if isinstance(value, bytes | bytearray):
        data = bytes(value)
    elif isinstance(value, Mapping):
        data, name = value.get("bytes"), value.get("path")
    elif isinstance(value, str):
        name = value
    if data:
        return _write_once(data, cache, name)
    if not name:
        raise RowError("image: neither bytes nor a path")
    if media_root is None:
        raise RowError(f"image is the path {name!r} but the spec sets no media_root")
    path = resolve_under(media_root, name, source=source, row=row, item_id=item_id)
    return name, path
