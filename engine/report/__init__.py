"""What a sweep shows a reader: the HTML report and the paper figures, both from the metrics document.

- `engine.report.page`: the self-contained HTML page (`render_report`, `write_report`), each registered
  metric's section rendered by `engine.report.html` (the HTML primitives), the run by `engine.report.run_info`
  and the checkpoint study by `engine.report.checkpoint_section`;
- `engine.report.figures`: every figure as a matplotlib figure, written as files (`write_figures`) and
  inlined in the page (`inline_svg`); drawn by `engine.report.chains` (one protocol chain) and
  `engine.report.studies` (across chains, checkpoints, the predictor);
- `engine.report.style`: the paper style (two-column sizes, fonts, colours) and the label checks.

Nothing here computes a metric: the figures and the page read the documents of `engine.metrics`.
"""

from __future__ import annotations

from engine.report.figures import FIGURE_FORMATS, PaperFigure, inline_svg, paper_figures, write_figures
from engine.report.page import render_report, write_report

__all__ = ["FIGURE_FORMATS", "PaperFigure", "inline_svg", "paper_figures", "render_report", "write_figures",
           "write_report"]
