"""What people read of the golden sweeps (`helpers.golden_metrics`): the check that the typed table cells are
formatted as the pre-formatted strings were.

For each document of `DOCUMENTS`: the command's terminal output (``<name>.terminal``, without ``--json``), and
its report sections (``<name>.report``): for a metrics document each chain's headline table and every registered
metric's report blocks, for a checkpoints document the report's checkpoint section; every paper figure a
placeholder (`_Placeholders`), so the text is the tables, notes and headings alone. The texts of main are
committed in ``tests/metrics/golden/text/``; `tests/metrics/test_metrics_golden.py` compares today's with them.
Write them again (after a change of wording on purpose)::

    PYTHONPATH=. .venv/bin/python tests/helpers/golden_text.py --write
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script: `helpers` is imported from tests/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helpers.golden_metrics import DOCUMENTS, GOLDEN, documents

__all__ = ["GOLDEN_TEXT", "texts", "write_golden_text"]

GOLDEN_TEXT = GOLDEN / "text"


class _Placeholders(Mapping[str, str]):
    """Every figure id "drawn" as a one-line placeholder (the figures are not what this checks)."""

    def __getitem__(self, key: str) -> str:
        return f"<figure {key}>"

    def __contains__(self, key: object) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _metrics_report(doc: dict[str, Any]) -> str:
    from engine.metrics.registry import registered_metrics
    from engine.report.html import blocks
    from engine.report.page import _headline

    figs = _Placeholders()
    out = []
    for idx, g in enumerate(doc["groups"]):
        out.append(_headline(g))
        out += [blocks(m.report(g, idx), figs) for m in registered_metrics("group") if m.report is not None]
    for metric in registered_metrics("dataset"):
        if metric.report is not None and doc.get(metric.name):
            out.append(blocks(metric.report(doc[metric.name], 0), figs))
    return "\n".join(out)


def texts(root: Path) -> dict[str, str]:
    """``<name>.terminal`` and ``<name>.report`` of every document of `DOCUMENTS` (its sweep written under `root`,
    named ``OUT`` in the text)."""
    from typer.testing import CliRunner

    from engine.cli import app
    from engine.report.checkpoint_section import checkpoint_section

    docs = documents(root)
    out: dict[str, str] = {}
    for name, (sweep, args) in DOCUMENTS.items():
        argv = [str(root / sweep) if a == "OUT" else a for a in args]
        res = CliRunner().invoke(app, argv, env={"COLUMNS": "200"})
        if res.exit_code != 0:
            raise RuntimeError(f"{name}: framesweep {' '.join(args)} exited {res.exit_code}: {res.output}")
        out[f"{name}.terminal"] = res.output.replace(str(root / sweep), "OUT")
        doc = json.loads(docs[name])
        out[f"{name}.report"] = (_metrics_report(doc) if args[0] == "metrics"
                                 else checkpoint_section(doc, _Placeholders())).replace("><", ">\n<")
    return out


def write_golden_text(folder: Path = GOLDEN_TEXT) -> list[Path]:
    """Write every text into `folder` (``<name>.terminal.txt``, ``<name>.report.txt``); returns the files."""
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        got = texts(Path(tmp))
    paths = []
    for name, text in got.items():
        path = folder / f"{name}.txt"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: {sys.argv[0]} --write   (writes the golden texts into {GOLDEN_TEXT})")
    for p in write_golden_text():
        print(p)
