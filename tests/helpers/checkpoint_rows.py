"""Hand-built checkpoint studies: three checkpoints over two video and two image benchmarks (`checkpoint_rows`), and
a base and its checkpoint on a video benchmark, MMBench and MME (`official_study_rows`)."""

from __future__ import annotations

from engine.datasets.mme import COGNITION, PERCEPTION
from engine.results.schema import ResultRow
from helpers.metric_rows import frame, row

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


OFFICIAL_VIDEO = {"text": 0, "f8": 8, "f16": 16}


def _video(model: str, item: str, marks: str) -> list[ResultRow]:
    return [row(model, "vid", item, b, f, m, media_kind="video")
            for (b, f), m in zip(OFFICIAL_VIDEO.items(), marks, strict=True)]


def _image(model: str, dataset: str, version: str, item: str, mark: str, **extra: object) -> ResultRow:
    return row(model, dataset, item, "f16", 16, mark, dataset_version=version, frames_sent=1, frame_indices=[0],
               media_kind="image", **extra)


def _mmbench(model: str, marks: dict[int, str]) -> list[ResultRow]:
    return [_image(model, "mmb", "mmbench-dev.fs1", str(q + r * 1_000_000), m, group_id=str(q), group_size=2)
            for q, ms in marks.items() for r, m in enumerate(ms)]


def _mme(model: str, wrong: str | None = None) -> list[ResultRow]:
    out = []
    for category in (*PERCEPTION, *COGNITION):
        for k in (0, 1):
            mark = "0" if (category, k) == (wrong, 1) else "1"
            out.append(_image(model, "mme", "mme.fs1", f"{category}/x.jpg#{k}", mark, category=category,
                              group_id=f"{category}/x.jpg", group_size=2, task_kind="yesno"))
    return out


def official_study_rows() -> list[ResultRow]:
    """The official-score study of tests/metrics/test_checkpoint_official.py (values by hand there): base and ft on
    vid (video, no official rule), mmb (MMBench) and mme (MME)."""
    return [*_video("base", "a", "000"), *_video("base", "b", "001"), *_video("ft", "a", "011"),
            *_video("ft", "b", "011"), *_mmbench("base", {0: "11", 1: "00", 2: "00"}),
            *_mmbench("ft", {0: "10", 1: "10", 2: "10"}), *_mme("base"), *_mme("ft", wrong="code_reasoning")]
