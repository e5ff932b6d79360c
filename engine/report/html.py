"""Drawing primitives of the HTML report: escaped text, inline SVG shapes, tables, and the
rendering of the registered metrics' sections (`engine.metrics.sections` blocks), so a metric's
section looks like the rest.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

from engine.metrics.sections import Block, Heading, Note, Table
from engine.report.cells import cell_text

__all__ = ["BLUE", "CSS", "GREEN", "GREY", "ORANGE", "PALETTE", "RED", "Scale", "blocks", "e", "line", "rect",
           "svg", "table", "text"]

GREEN, RED, GREY, BLUE, ORANGE = "#2e7d32", "#c62828", "#9e9e9e", "#1565c0", "#ef6c00"
PALETTE = (BLUE, ORANGE, GREEN, "#6a1b9a", "#00838f", "#ad1457")
CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px}h2{font-size:18px;margin-top:36px;border-bottom:1px solid #ccc}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}svg{display:block;margin:8px 0}
svg text{font-size:11px;fill:#333}.note{color:#666;font-size:12px}
"""


def e(value: object) -> str:
    return html.escape(str(value), quote=True)


def svg(fig_id: str, width: int, height: int, body: list[str], label: str) -> str:
    return (f'<svg id="{e(fig_id)}" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{e(label)}">' + "".join(body) + "</svg>")


def text(x: float, y: float, s: object, anchor: str = "middle", extra: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {extra}>{e(s)}</text>'


def rect(x: float, y: float, w: float, h: float, fill: str, tip: str = "", extra: str = "") -> str:
    title = f"<title>{e(tip)}</title>" if tip else ""
    return (f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{max(h, 0):.1f}" fill="{fill}" '
            f"{extra}>{title}</rect>")


def line(x1: float, y1: float, x2: float, y2: float, stroke: str, extra: str = "") -> str:
    return f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}" {extra}/>'


class Scale:
    """Linear map from a data interval onto a pixel interval."""

    def __init__(self, lo: float, hi: float, start: float, end: float) -> None:
        self.lo, self.span, self.start, self.end = lo, max(hi - lo, 1e-9), start, end

    def __call__(self, v: float) -> float:
        return self.start + (self.end - self.start) * (v - self.lo) / self.span


def table(table_id: str, head: list[str], rows: list[list[object]]) -> str:
    """A table; each cell written by `engine.report.cells.cell_text` (a typed cell in the one number format)."""
    cells = "".join("<tr>" + "".join(f"<td>{e(cell_text(v))}</td>" for v in r) + "</tr>" for r in rows)
    return (f'<table id="{e(table_id)}"><tr>' + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>"
            + cells + "</table>")


def _block(b: Block, figures: Mapping[str, str]) -> str:
    if isinstance(b, Heading):
        return f"<h3>{e(b.text)}</h3>"
    if isinstance(b, Note):
        return f'<p class="note">{e(cell_text(b.text))}</p>'
    if isinstance(b, Table):
        return table(b.id, b.head, b.rows)
    if b.id not in figures:
        return ""  # a figure with nothing to draw: its section is left out
    title = f"<h3>{e(b.title)}</h3>" if b.title else ""
    return title + figures[b.id] + blocks(b.then, figures)


def blocks(section: Sequence[Block], figures: Mapping[str, str]) -> str:
    """A metric's section as HTML; `figures` holds each drawn paper figure's HTML by its html id."""
    return "".join(_block(b, figures) for b in section)
