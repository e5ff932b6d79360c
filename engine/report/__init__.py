"""What a sweep shows a reader: the HTML report and the paper figures, both from the metrics document.

- `engine.report.page`: the self-contained HTML page (`render_report`, `write_report`), each registered
  metric's section rendered by `engine.report.html` (the HTML primitives), the run by `engine.report.run_info`
  and the checkpoint study by `engine.report.checkpoint_section`;
- `engine.report.figures`: every figure as a matplotlib figure, written as files (`write_figures`) and
  inlined in the page (`inline_svg`); drawn by `engine.report.chains` (one protocol chain) and
  `engine.report.studies` (across chains, checkpoints, the predictor);
- `engine.report.cells`: the one number format for people, every typed cell of a metric's tables and notes
  (`cell_text`, `points`), used by the page and the CLI;
- `engine.report.style`: the paper style (two-column sizes, fonts, colours) and the label checks.

Nothing here computes a metric: the figures and the page read the documents of `engine.metrics`.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {"FIGURE_FORMATS": "figures", "PaperFigure": "figures", "inline_svg": "figures", "paper_figures": "figures",
          "write_figures": "figures", "render_report": "page", "write_report": "page"}

__all__ = ["FIGURE_FORMATS", "PaperFigure", "inline_svg", "paper_figures", "render_report", "write_figures",
           "write_report"]


def __getattr__(name: str) -> Any:
    """The public names, imported on first use: `engine.report.cells` (what the CLI formats numbers with) must
    not pull matplotlib into every command."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
