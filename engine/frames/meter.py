"""An instrument for benchmarks and tests: frame arrays deserialised in this process.

Ray (pickle protocol 5) rebuilds a contiguous numpy array through numpy's `_frombuffer`, looked up
by name when an object is loaded (zero-copy from the object store). `FrameMeter` swaps it for a
counting wrapper while it is open, so every such array this process receives from another one (an
actor's return value, an object fetched from the store) is seen as it is rebuilt. Every frame array
framesweep makes is contiguous (decoded, stacked or resized frames); a non-contiguous array would be
rebuilt by `_reconstruct` and filled afterwards, unseen here. A frame array is uint8 with three or
more dimensions (H, W, 3 or N, H, W, 3) holding at least one pixel; the empty frame stack and the index
and timestamp arrays of a video's facts are not.
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any, Self

import numpy as np

__all__ = ["FrameMeter"]

_lock = threading.Lock()


class FrameMeter:
    """Counts frame arrays (and their bytes) deserialised in this process while open (a context manager)."""

    def __init__(self) -> None:
        self.arrays = 0
        self.bytes = 0
        self._saved: list[tuple[Any, str, Any]] = []

    def _seen(self, arr: Any) -> Any:
        if isinstance(arr, np.ndarray) and arr.dtype == np.uint8 and arr.ndim >= 3 and arr.size:
            with _lock:
                self.arrays += 1
                self.bytes += int(arr.nbytes)
        return arr

    def __enter__(self) -> Self:
        from numpy._core import numeric

        # (numpy's private rebuild path for pickled arrays, which its stubs leave out)
        original = numeric._frombuffer  # type: ignore[attr-defined]
        self._saved.append((numeric, "_frombuffer", original))
        numeric._frombuffer = self._wrap(original)  # type: ignore[attr-defined]
        return self

    def _wrap(self, original: Any) -> Any:
        def counted(*args: Any, **kwargs: Any) -> Any:
            return self._seen(original(*args, **kwargs))

        return counted

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        for module, name, original in reversed(self._saved):
            setattr(module, name, original)
        self._saved.clear()
