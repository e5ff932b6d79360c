"""The metrics documents of a fixed set of sweeps: the check that a refactor changes no metric value.

Each sweep is a results directory written from hand-made rows (`helpers.metric_rows`,
`helpers.benchmark_rows`, `helpers.checkpoint_rows`); together they reach every metric family: the
chains (fixed accuracy, oracle, transitions, flows, trajectories, categories, intervals), visual confusion,
text overwrite, terminal regressions with sampling recovery, open-task generation, the cascade, the letter
prior, low-level statistics, robustness across chains, iso-compute sets, the checkpoint flows and the
checkpoint study, and every benchmark's official scores (MME, POPE, MMStar, MMBench circular, Video-MME,
Video-MME v2 groups, MVBench, TempCompass, Video-MMMU). `documents` runs ``framesweep metrics --json`` (and
``framesweep checkpoints --json``) on them in this process and returns each document's text, the results
directory written as ``OUT``.

The documents of main are committed in ``tests/metrics/golden/`` and `tests/metrics/test_metrics_golden.py`
compares today's with them byte for byte. A change that adds a field on purpose writes them again::

    PYTHONPATH=. .venv/bin/python tests/helpers/golden_metrics.py --write
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

if __name__ == "__main__":  # run as a script: `helpers` is imported from tests/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.results.schema import ResultRow
from helpers.benchmark_rows import image_rows, mmbench_sized_rows, video_rows
from helpers.checkpoint_rows import checkpoint_rows, official_study_rows
from helpers.metric_rows import audit_rows, cascade_rows, frame, row, write_sweep

__all__ = ["DOCUMENTS", "GOLDEN", "SWEEPS", "documents", "write_golden"]

GOLDEN = Path(__file__).resolve().parents[1] / "metrics" / "golden"
"""Where the committed documents are (one ``<name>.json`` per entry of `DOCUMENTS`)."""


def _letter_rows() -> list[ResultRow]:
    """Dataset lp at (text, f4): predicted letters against the answers (a letter prior at text)."""
    answers = {"a": "A", "b": "B", "c": "A", "d": "C", "e": "D"}
    preds = {"a": ("A", "A"), "b": ("A", "B"), "c": ("A", "C"), "d": ("C", "A"), "e": ("A", None)}
    marks = {i: "".join("1" if p == answers[i] else "0" for p in ps) for i, ps in preds.items()}
    cells = {(i, b): {"pred": p, "answer": answers[i]} for i, ps in preds.items()
             for b, p in zip(("text", "f4"), ps, strict=True)}
    return frame(marks, dataset="lp", budgets={"text": 0, "f4": 4}, per_cell=cells)


def _robustness_rows() -> list[ResultRow]:
    """Dataset rob: chain default {text, f16, f32, f64} and chain px9 {text, f16, f32}."""
    text = {"p": "1", "q": "0", "r": "1", "s": "0"}
    a = {"p": "110", "q": "101", "r": "111", "s": "011"}
    b = {"p": "11", "q": "10", "r": "01", "s": "10"}
    rows = [row("m", "rob", i, "text", 0, mark) for i, mark in text.items()]
    for item, marks in a.items():
        rows += [row("m", "rob", item, f"f{n}", n, mk) for n, mk in zip((16, 32, 64), marks, strict=True)]
    for item, marks in b.items():
        rows += [row("m", "rob", item, f"f{n}-px9", n, mk, max_pixels=9) for n, mk in zip((16, 32), marks, strict=True)]
    return rows


def _iso_rows() -> list[ResultRow]:
    """Dataset iso: four budgets, three of them spending 800 pixels an item (an iso-compute set)."""
    budgets = {"f2-px400": (2, 400), "f4-px200": (4, 200), "f8-px100": (8, 100), "f8-px200": (8, 200)}
    items = {"i1": "1001", "i2": "1100", "i3": "0001", "i4": "0111"}
    return [row("m", "iso", item, b, frames, mark, max_pixels=px, pixels_total=frames * px)
            for item, marks in items.items() for (b, (frames, px)), mark in zip(budgets.items(), marks, strict=True)]


_LOW_MARKS = {"a": "111", "b": "111", "c": "101", "d": "011", "e": "010", "f": "110", "g": "010", "h": "100"}


def _low_level_rows() -> list[ResultRow]:
    """Dataset ll at (text, f4, f8), each item its own video (statistics in `_video_stats`)."""
    return frame(_LOW_MARKS, dataset="ll", budgets={"text": 0, "f4": 4, "f8": 8})


def _video_stats(out: Path) -> None:
    """Each ll video's motion (0.1 ... 0.8) and brightness (0.5 for all), committed beside the rows."""
    from engine.results.video_stats import VideoStatsLog

    log = VideoStatsLog(out)
    log.add({"dataset": "ll", "video_id": f"v-{item}", "motion_energy": (k + 1) / 10, "brightness": 0.5,
             "frames_used": 8} for k, item in enumerate(_LOW_MARKS))
    log.commit()


def _study_manifest() -> dict[str, object]:
    """A run's spec naming the checkpoint study (ft: 16 train frames, base its base)."""
    return {"sweep_id": "t", "spec": {"models": [
        {"id": "base", "family": "arch"},
        {"id": "ft", "family": "arch", "checkpoint": {"base": "base", "train_frames": 16, "size": "7B"}}]}}


SWEEPS: dict[str, Callable[[Path], None]] = {
    "audit": lambda out: write_sweep(out, [*audit_rows(), *cascade_rows(), *_letter_rows()]),
    "protocols": lambda out: (write_sweep(out, [*_robustness_rows(), *_iso_rows(), *_low_level_rows()]), _video_stats(out)),
    "benchmarks": lambda out: write_sweep(out, [*image_rows(), *video_rows(),
                                           *(ResultRow(**{**r.__dict__, "dataset": "mmbench-sized"})
                                                 for r in mmbench_sized_rows())]),
    "study": lambda out: write_sweep(out, official_study_rows(), _study_manifest()),
    "family": lambda out: write_sweep(out, checkpoint_rows()),
}
"""Sweep name -> a function writing its results directory."""

DOCUMENTS: dict[str, tuple[str, list[str]]] = {
    "audit": ("audit", ["metrics", "OUT", "--n-boot", "50"]),
    "audit-options": ("audit", ["metrics", "OUT", "--n-boot", "0", "--pair", "text:f8", "--cascade-stages", "f2,f4",
                                "--cascade-match", "f8"]),
    "protocols": ("protocols", ["metrics", "OUT", "--n-boot", "20"]),
    "protocols-px9": ("protocols", ["metrics", "OUT", "--n-boot", "0", "--protocol", "px9", "--iso-tolerance",
                                    "0.05"]),
    "benchmarks": ("benchmarks", ["metrics", "OUT", "--n-boot", "20"]),
    "study": ("study", ["metrics", "OUT", "--n-boot", "0", "--compare", "base:ft"]),
    "study-checkpoints": ("study", ["checkpoints", "OUT"]),
    "family": ("family", ["metrics", "OUT", "--n-boot", "0", "--compare", "base:ft1"]),
    "family-checkpoints": ("family", ["checkpoints", "OUT", "--models", "base,ft1,ft2"]),
}
"""Document name -> (its sweep, the command's arguments; OUT is the sweep's directory, --json is added)."""


def documents(root: Path) -> dict[str, str]:
    """Every document of `DOCUMENTS`, as ``--json`` writes it, its sweep written under `root` (the directory named
    ``OUT`` in the text)."""
    from typer.testing import CliRunner

    from engine.cli import app

    for name in dict.fromkeys(s for s, _ in DOCUMENTS.values()):
        SWEEPS[name](root / name)
    out: dict[str, str] = {}
    for name, (sweep, args) in DOCUMENTS.items():
        target = root / f"{name}.json"
        argv = [str(root / sweep) if a == "OUT" else a for a in args]
        res = CliRunner().invoke(app, [*argv, "--json", str(target)])
        if res.exit_code != 0:
            raise RuntimeError(f"{name}: framesweep {' '.join(args)} exited {res.exit_code}: {res.output}")
        text = target.read_text(encoding="utf-8")
        out[name] = text.replace(json.dumps(str(root / sweep))[1:-1], "OUT")
    return out


def write_golden(folder: Path = GOLDEN) -> list[Path]:
    """Write every document into `folder` (``<name>.json``); returns the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        docs = documents(Path(tmp))
    paths = []
    for name, text in docs.items():
        path = folder / f"{name}.json"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: {sys.argv[0]} --write   (writes the golden documents into {GOLDEN})")
    for p in write_golden():
        print(p)
