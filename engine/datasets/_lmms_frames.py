"""lmms-eval tasks whose prompt depends on the frames sent, given framesweep's frames.

Two of lmms-eval's tasks write text at the frames the model is shown, each picking those frames itself:

- ``frame_num`` (Video-MME with subtitles, `videomme_doc_to_text_subtitle`): the subtitles on screen at
  ``np.linspace(0, total_frames - 1, frame_num, dtype=int)``, ``frame_num`` fixed by the task's YAML (32), whatever
  the model sees;
- ``insert_interleave_subtitles`` (LongVideoBench, `longvideobench_doc_to_text`): an ``<image>`` line per frame,
  the subtitles between them in time order, at the times ``compute_frame_timestamps(duration, max_num_frames)``.

The bridge builds each job's prompt with the task's own ``doc_to_text``, its frame choice replaced by the frames
the job sends (`FramePrompt.text`): ``frame_num`` is their count and its ``np.linspace`` their indices; the frame
times are their indices over the video's frame rate. So each budget's prompt describes the frames it sends (a
text-only job sends none: no subtitle). While the text is built, the one name in the task's module (its utils'
``np``, its ``compute_frame_timestamps``) is replaced, under a lock, and restored after. A task that names the key
but whose ``doc_to_text`` does not pick its frames through that name is refused (`frame_prompt`), never run with
a prompt about other frames.
"""

from __future__ import annotations

import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["FRAME_KEYS", "FramePrompt", "frame_prompt"]

FRAME_KEYS = ("frame_num", "insert_interleave_subtitles")
"""lmms_eval_specific_kwargs that tie a task's doc_to_text to the frames it shows."""
_NAME = {"frame_num": "np", "insert_interleave_subtitles": "compute_frame_timestamps"}
"""The name in the task's module through which each key's doc_to_text picks its frames."""
_LOCK = threading.Lock()


class _SentFrames:
    """numpy as a task's utils see it while one prompt is built: a `linspace` of the job's frame count is the job's
    frame indices (lmms-eval's ``np.linspace(0, total - 1, frame_num, dtype=int)``); everything else is numpy's."""

    def __init__(self, indices: list[int]) -> None:
        self._indices = indices

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    def linspace(self, start: Any, stop: Any, num: int = 50, *args: Any, **kwargs: Any) -> np.ndarray:
        if int(num) != len(self._indices):
            raise ValueError(f"the task's doc_to_text asked for {num} frames; the job sends {len(self._indices)}")
        return np.asarray(self._indices, dtype=kwargs.get("dtype") or float)


@contextmanager
def _replaced(fn: Callable[..., Any], name: str, value: Any) -> Iterator[None]:
    """`name` in `fn`'s module bound to `value` while the block runs (under the module-wide lock)."""
    scope = fn.__globals__
    with _LOCK:
        saved = scope[name]
        scope[name] = value
        try:
            yield
        finally:
            scope[name] = saved


@dataclass(frozen=True)
class FramePrompt:
    """How one task's prompt is built at the frames a job sends."""

    key: str
    """The lmms_eval_specific_kwargs key that ties the prompt to the frames (`FRAME_KEYS`)."""
    kwargs: dict[str, Any]
    """The task's lmms_eval_specific_kwargs (for the model it was loaded for)."""
    doc_to_text: types.FunctionType

    def text(self, doc: Any, indices: list[int], fps: float | None) -> str:
        """The task's doc_to_text of `doc` at the frames `indices` (of a video at `fps`; none for a text-only job)."""
        if self.key == "frame_num":
            with _replaced(self.doc_to_text, "np", _SentFrames(indices)):
                return str(self.doc_to_text(doc, {**self.kwargs, "frame_num": len(indices)}))
        times = [i / fps for i in indices] if fps else []

        def sent(duration: Any, max_num_frames: int = 16) -> list[float]:
            return list(times)

        with _replaced(self.doc_to_text, "compute_frame_timestamps", sent):
            return str(self.doc_to_text(doc, self.kwargs))


def frame_prompt(kwargs: dict[str, Any] | None, doc_to_text: Any) -> tuple[FramePrompt | None, str | None]:
    """The task's `FramePrompt` (None where its prompt does not depend on the frames), or why the bridge cannot
    give its doc_to_text framesweep's frames (then the prompt would describe other frames: the task is refused)."""
    kwargs = dict(kwargs or {})
    keys = [k for k in FRAME_KEYS if (k in kwargs if k == "frame_num" else bool(kwargs.get(k)))]
    if not keys:
        return None, None
    if len(keys) > 1:
        return None, f"its lmms_eval_specific_kwargs tie the prompt to the frames twice ({', '.join(keys)})"
    key, name = keys[0], _NAME[keys[0]]
    scope = getattr(doc_to_text, "__globals__", None)
    found = None if scope is None else scope.get(name)
    known = found is np if key == "frame_num" else callable(found)
    if not isinstance(doc_to_text, types.FunctionType) or not known:
        return None, (f"its prompt depends on the frames lmms-eval samples (lmms_eval_specific_kwargs: {key}) in a "
                      f"doc_to_text that does not pick them through its module's {name!r} as lmms-eval's own "
                      "tasks do: the bridge cannot give it framesweep's frames, and its prompt would describe "
                      "other frames")
    return FramePrompt(key, kwargs, doc_to_text), None
