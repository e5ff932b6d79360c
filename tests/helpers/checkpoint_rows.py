"""A hand-built checkpoint study: three checkpoints over two video and two image benchmarks."""

from __future__ import annotations

from engine.results.schema import ResultRow
from helpers.metric_rows import frame

MODELS = ["base", "ft1", "ft2"]
VID = {"text": 0, "f8": 8, "f16": 16}
# vid: b has no ft2 rows and d has an ft1 error at text, so the paired items are a, c at text and
# a, c, d at f8 and f16. vid2 has no text budget. img and img2 are image benchmarks (at most one frame).
CELLS: dict[str, tuple[dict[str, int], dict[str, dict[str, str]]]] = {
    "vid": (VID, {"base": {"a": "010", "b": "011", "c": "100", "d": "110"},
                  "ft1": {"a": "011", "b": "111", "c": "000", "d": "e10"},
                  "ft2": {"a": "111", "b": "...", "c": "101", "d": "111"}}),
    "vid2": ({"f8": 8, "f16": 16}, {"base": {"u": "01", "v": "10"}, "ft1": {"u": "11", "v": "11"},
                                    "ft2": {"u": "00", "v": "10"}}),
    "img": ({"img": 1}, {"base": {"p": "1", "q": "1", "r": "0"}, "ft1": {"p": "0", "q": "1", "r": "0"},
                         "ft2": {"p": "1", "q": "0", "r": "1"}}),
    "img2": ({"text": 0, "img": 1}, {"base": {"s": "01", "t": "11"}, "ft1": {"s": "00", "t": "01"},
                                     "ft2": {"s": "11", "t": "01"}}),
}
TASK = {"a": "x", "b": "y", "c": "x", "d": "x", "u": "x", "v": "y"}


def checkpoint_rows() -> list[ResultRow]:
    """The rows of CELLS (task types from TASK) and one model outside the study."""
    out = []
    for ds, (budgets, per_model) in CELLS.items():
        for model, traj in per_model.items():
            out += frame(traj, model=model, dataset=ds, budgets=budgets,
                         per_item={i: {"task_type": TASK[i]} for i in traj if i in TASK})
    return [*out, *frame({"a": "111"}, model="other", dataset="vid", budgets=VID)]
