"""The checkpoint section's tables and figures label what the numbers cannot say: the frames = 0 row is text only,
with no trap verdict, and LLaVA-1.5's rows say its video was read at 4 frames at most (`helpers.trap_rows`)."""

from __future__ import annotations

import html
import re

from helpers.figure_checks import outside, overlaps, visible_texts
from helpers.trap_rows import CAPPED, short_chain_document

from engine.metrics.checkpoint_study import NO_VIDEO
from engine.report.checkpoint_section import checkpoint_section
from engine.report.figures import checkpoint_figures
from engine.report.style import paper_style


def _table(page: str, table_id: str) -> list[list[str]]:
    body = page[page.index(f'<table id="{table_id}">'):]
    body = body[:body.index("</table>")]
    return [[html.unescape(c) for c in re.findall(r"<t[dh]>(.*?)</t[dh]>", tr)] for tr in body.split("<tr>")[1:]]


def test_the_report_tables_say_it() -> None:
    page, note = checkpoint_section(short_chain_document(), {}), CAPPED
    trap = _table(page, "table-temporal-trap")
    assert trap[0][-2:] == ["trapped", "note"]
    assert trap[1:] == [["qwen-f16", "qwen", "text only", "1", "+100.0", "1", "+50.0", NO_VIDEO, ""],
                        ["qwen-f16", "qwen", "8", "1", "+100.0", "1", "+50.0", "yes", ""],
                        ["qwen-f16", "qwen", "16", "1", "+50.0", "1", "+50.0", "yes", ""],
                        ["llava-f16", "llava", "text only", "1", "+100.0", "1", "+50.0", NO_VIDEO, note],
                        ["llava-f16", "llava", "4", "1", "+50.0", "1", "+50.0", "yes", note]]
    train = _table(page, "table-train-frames")
    assert train[0] == ["architecture", "size", "train frames", "checkpoint", "base", "video frames", "video gain",
                        "image loss", "trapped", "note"]
    assert train[1:] == [["LLaVA-1.5", "7B", "16", "llava-f16", "llava", "4", "+50.0", "+50.0", "yes", note],
                         ["Qwen", "7B", "16", "qwen-f16", "qwen", "16", "+50.0", "+50.0", "yes", ""]]
    per_question = [r for r in _table(page, "table-temporal-trap-per-question")[1:] if r[0] != r[1]]  # not bases
    assert [r[2] for r in per_question] == ["text only", "8", "16", "text only", "4"]
    assert [r[-2:] for r in per_question] == [[NO_VIDEO, ""], ["yes", ""], ["yes", ""], [NO_VIDEO, note],
                                              ["yes", note]]
    assert "text only: the video benchmarks asked without their video, so no trap verdict" in page


def test_the_trap_figures_say_it() -> None:
    with paper_style():
        trap, train = checkpoint_figures(short_chain_document())
        ax = trap.figure.axes[0]
        assert [t.get_text() for t in ax.get_xticklabels()] == ["text only", "4", "8", "16"]
        assert ax.get_xlabel() == "frames at evaluation (text only: no video, no verdict)"
        legend = [t.get_text() for t in trap.figure.legends[0].get_texts()]
        assert legend == ["qwen-f16", "llava-f16 (video at 4 frames at most)"]
        legend = [t.get_text() for t in train.figure.legends[0].get_texts()]
        assert legend == ["LLaVA-1.5 7B (video at 4 frames at most)", "Qwen 7B"]
        for pf in (trap, train):
            assert overlaps(visible_texts(pf.figure), pf.figure) == [] and outside(pf.figure) == [], pf.name
