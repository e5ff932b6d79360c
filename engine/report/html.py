"""Building blocks of the HTML report: escaped text, tables, and the
rendering of the registered metrics' sections (`engine.metrics.sections` blocks), so a metric's
section looks like the rest.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

from engine.metrics.sections import Block, Heading, Note, Table
from engine.report.cells import cell_text

__all__ = ["BLUE", "CSS", "GREEN", "GREY", "ORANGE", "PALETTE", "RED", "blocks", "e", "table"]

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


def table(table_id: str, head: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
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
