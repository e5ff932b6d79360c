"""The package's bytecode, written once at the suite's start: where PYTHONDONTWRITEBYTECODE is set, no import writes
it, and each of the ~300 processes a run starts would compile what it imports from source again. A read-only
checkout keeps it under a pycache prefix in the temp folder (PYTHONPYCACHEPREFIX, which the processes inherit)."""

from __future__ import annotations

import compileall
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

READ_ONLY_PREFIX = Path(tempfile.gettempdir()) / f"framesweep-pycache-{os.getuid()}"


def compile_package(package: Path, read_only_prefix: Path = READ_ONLY_PREFIX) -> None:
    """Write `package`'s bytecode where it is missing or stale: beside the sources, or under `read_only_prefix`
    (from now on, for this process and those it starts) where the checkout cannot be written."""
    if sys.pycache_prefix is None and not os.access(package, os.W_OK):
        sys.pycache_prefix = str(read_only_prefix)
        os.environ["PYTHONPYCACHEPREFIX"] = sys.pycache_prefix
    compileall.compile_dir(package, quiet=1)


def stale_bytecode(package: Path) -> list[str]:
    """`package`'s modules whose bytecode, where this interpreter looks for it, is missing or older than the source."""
    stale = []
    for path in sorted(package.rglob("*.py")):
        cached = Path(importlib.util.cache_from_source(str(path)))
        # a pyc's header: magic (4), flags (4), the source's mtime (4), the source's size (4)
        header = cached.read_bytes()[:16] if cached.is_file() else b""
        if (len(header) < 16 or int.from_bytes(header[8:12], "little") != int(path.stat().st_mtime) & 0xFFFFFFFF
                or header[:4] != importlib.util.MAGIC_NUMBER):
            stale.append(str(path.relative_to(package.parent)))
    return stale
