"""Hand-made result rows of the benchmarks with an official score, in their released conventions (item ids,
``dataset_version``, group columns): the image benchmarks (MME, POPE, MMStar, MMBench) and the video ones
(Video-MME, Video-MME v2 groups, MVBench, TempCompass, Video-MMMU, MLVU without an official rule). The tests of
`engine.metrics.benchmark_scores` compute their values by hand (tests/metrics/test_benchmark_scores.py,
test_video_official_scores.py)."""

from __future__ import annotations

from engine.results.schema import ResultRow
from helpers.metric_rows import row


def image_row(dataset: str, version: str, item: str, mark: str, budget: str = "f16", **extra: object) -> ResultRow:
    return row("m", dataset, item, budget, 16, mark, dataset_version=version, frames_sent=1, frame_indices=[0],
               media_kind="image", **extra)


def yesno_row(dataset: str, version: str, item: str, gold: str, said: str, **extra: object) -> ResultRow:
    return image_row(dataset, version, item, "1" if gold == said else "0", task_kind="yesno", answer=gold, pred=said,
                **extra)


def mme_rows(dataset: str = "mme", version: str = "mme.fs1") -> list[ResultRow]:
    marks = {"celebrity/a.jpg": "11", "celebrity/b.jpg": "10", "OCR/c.jpg": "00", "code_reasoning/d.png": "11",
             "code_reasoning/e.png": "01"}
    out = []
    for image, two in marks.items():
        for k, mark in enumerate(two):
            # the first image's rows carry group_id; the rest fall back to the id's "#k" convention
            group = {"group_id": image} if image.startswith("celebrity/a") else {}
            out.append(yesno_row(dataset, version, f"{image}#{k}", "yes", "yes" if mark == "1" else "no",
                           category=image.split("/")[0], **group))
    return out


def pope_rows(dataset: str = "pope") -> list[ResultRow]:
    cells = [("adversarial", "yes", "yes"), ("adversarial", "yes", "no"), ("adversarial", "no", "yes"),
             ("adversarial", "no", "no"), ("random", "yes", "yes"), ("random", "no", "yes")]
    return [yesno_row(dataset, "pope.fs1", f"{split}/{i}", gold, said, category=split)
            for i, (split, gold, said) in enumerate(cells)]


def mmstar_rows(dataset: str = "mmstar") -> list[ResultRow]:
    return [image_row(dataset, "mmstar-val.fs1", str(i), m) for i, m in enumerate("110")]


def mmbench_rows(dataset: str = "mmbench") -> list[ResultRow]:
    marks = {0: "111", 1: "10", 2: "0e"}
    return [image_row(dataset, "mmbench-dev.fs1", str(q + r * 1_000_000), m, **({"group_id": str(q)} if q else {}))
            for q, ms in marks.items() for r, m in enumerate(ms)]


def image_rows() -> list[ResultRow]:
    return [*mme_rows(), *pope_rows(), *mmstar_rows(), *mmbench_rows()]


def mmbench_row(q: int, rotation: int, mark: str, k: int | None, budget: str = "f16", l2: str | None = None) -> ResultRow:
    return image_row("mmbench", "mmbench-dev.fs1", str(q + rotation * 1_000_000), mark, budget=budget, group_id=str(q),
                group_size=k, task_type=l2)


def mmbench_sized_rows() -> list[ResultRow]:
    """f16: q0 (3 options) 111; q1 (2) 10; q2 (2) 0 then an error row; q3 (4 options) rotations 0 and 1 right,
    2 and 3 never run. f32 (a budget still running): q0 111 only. l2-categories: q0, q1 "a"; q2, q3 "b"."""
    out = []
    for q, k, marks, l2 in ((0, 3, "111", "a"), (1, 2, "10", "a"), (2, 2, "0e", "b"), (3, 4, "11", "b")):
        out += [mmbench_row(q, r, m, k, l2=l2) for r, m in enumerate(marks)]
    return out + [mmbench_row(0, r, "1", 3, budget="f32", l2="a") for r in range(3)]


def video_row(dataset: str, version: str, item: str, mark: str, **extra: object) -> ResultRow:
    return row("m", dataset, item, "f16", 16, mark, dataset_version=version, media_kind="video", **extra)


def videomme_rows() -> list[ResultRow]:
    """q1 right, q2 wrong, q3 no answer read (empty: wrong), q4 right."""
    return [video_row("videomme", "videomme-v1.fs1", "q1", "1"), video_row("videomme", "videomme-v1.fs1", "q2", "0"),
            video_row("videomme", "videomme-v1.fs1", "q3", "0", pred=None),
            video_row("videomme", "videomme-v1.fs1", "q4", "1")]


V2_GROUPS = {  # video: (type, structure, marks in position order)
    "001": ("relevance", "[1,2,3,4]", "1011"),  # 3 right -> 900/16 = 56.25
    "002": ("logic", "[1,[2,3],4]", "1101"),  # leading run 2 -> 400/12
    "003": ("logic", "[[1,2],3,4]", "0111"),  # q1 wrong, but q2 (parallel to it) right: k = 1 -> 10
    "004": ("relevance", "[1,2,3,4]", "111"),  # 3 of its 4 answers: incomplete, no score
}


def v2_rows() -> list[ResultRow]:
    return [video_row("videomme_v2", "videomme-v2.fs1", f"{video}-{q}", mark, group_id=video, group_size=4,
                 group_type=gtype, group_structure=structure)
            for video, (gtype, structure, marks) in V2_GROUPS.items() for q, mark in enumerate(marks, 1)]


def video_marks(dataset: str, version: str, column: str, cells: dict[str, str]) -> list[ResultRow]:
    return [video_row(dataset, version, f"{value}/{i}", mark, **{column: value})
            for value, marks in cells.items() for i, mark in enumerate(marks)]


def video_rows() -> list[ResultRow]:
    return [
        *videomme_rows(), *v2_rows(),
        *video_marks("mvbench", "mvbench.fs1", "category", {"action_sequence": "11", "object_shuffle": "1000"}),
        *video_marks("tempcompass", "tempcompass.fs1", "task_type", {"multi-choice": "1", "yes_no": "100"}),
        *video_marks("video_mmmu", "video_mmmu.fs1", "task_type", {"Perception": "10", "Adaptation": "0"}),
        *video_marks("mlvu", "mlvu-dev.fs1", "task_type", {"plotQA": "10"}),
    ]
