"""Start-up imports without repeated garbage collection: `heavy_imports()`.

Importing torch and vLLM creates about a million long-lived objects (modules, classes, functions,
dataclass fields). Python's cyclic collector runs a full collection every time the heap has grown by a
quarter, and each one scans every object made so far: nine of them during vLLM's import, about a sixth
of its CPU time, to find a few hundred cycles. vLLM then calls `gc.collect()` itself while it loads a
model, and each call scans the whole heap again (about 1.5 CPU-s of an engine start on 2 cores).

Inside `heavy_imports()` the collector is paused; at the end every object alive is frozen (`gc.freeze`,
the permanent generation): later collections skip them. They live as long as the process anyway; the
few cycles an import leaves behind are kept instead of being freed (kilobytes). The collector runs
as before for everything made afterwards.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["heavy_imports"]


@contextlib.contextmanager
def heavy_imports() -> Iterator[None]:
    """Pause the cyclic collector for the imports inside; freeze what they made at the end."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
