"""What the figures and the report write from user data: ids drawn exactly as written (never mathtext), protocols
in words, and the cascade figure's Pareto front over every point it draws."""

from __future__ import annotations

from pathlib import Path

from helpers.figure_checks import visible_texts
from helpers.metric_rows import frame, lazy, row, write_sweep
from typer.testing import CliRunner

from engine.cli import app
from engine.metrics.document import summary_document
from engine.metrics.summary import SummaryOptions, summary_tables
from engine.report import render_report
from engine.report.chains import cascade_figure
from engine.report.figures import chain_figures, checkpoint_figures
from engine.report.labels import pixels, protocol_label
from engine.report.style import paper_style

DOLLARS = ["a$b$c", "$x^2$", "$\\bad{$"]
"""Model ids of imported lmms-eval logs: mathtext would rewrite the first two and fail on the third."""


def _doc(rows: list) -> dict:
    opts = SummaryOptions(n_boot=0)
    return summary_document(summary_tables(lazy(rows), opts), opts, source="test")


def test_ids_with_dollar_signs_are_drawn_exactly_as_written(tmp_path: Path) -> None:
    rows = [r for m in DOLLARS for r in frame({"a": "0110", "b": "1100"}, model=m)]
    write_sweep(tmp_path / "sweep", rows)
    res = CliRunner().invoke(app, ["report", str(tmp_path / "sweep"), "-o", str(tmp_path / "r.html"), "--n-boot", "0"])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(app, ["figures", str(tmp_path / "sweep"), "--to", str(tmp_path / "figs"), "--format",
                                   "svg", "--n-boot", "0"])
    assert res.exit_code == 0, res.output
    for m in DOLLARS:  # svg.fonttype none: each text is written as a string, as drawn
        drawn = [p for p in (tmp_path / "figs").glob("accuracy--*.svg") if f">{m} on d, decoded size" in p.read_text()]
        assert len(drawn) == 1, m
    doc = _doc(rows)
    with paper_style():
        for idx, g in enumerate(doc["groups"]):
            fig = next(iter(chain_figures(g, idx))).figure
            (title,) = [t for t in visible_texts(fig) if t.get_text().startswith(g["model_id"])]
            assert title.get_text() == f"{g['model_id']} on d, decoded size: 2 items"
            assert not title.get_parse_math()
        trap = {"temporal_trap": [{"model_id": m, "base_id": "base", "frames": f, "video_gain": 0.01 * k,
                                   "image_gain": -0.02} for k, m in enumerate(DOLLARS) for f in (8, 16)]}
        (pf,) = [pf for pf in checkpoint_figures(trap) if pf.name == "temporal-trap"]
        legend = [t.get_text() for t in pf.figure.legends[0].get_texts()]
        assert legend == DOLLARS  # the label text is exactly the id
        pf.figure.savefig(tmp_path / "trap.png")  # drawn, not only laid out


def test_protocol_ids_read_as_words() -> None:
    assert protocol_label("px200704") == "max 448x448 px"  # 200704 = 448 * 448
    assert protocol_label("s448") == "short side 448"
    assert protocol_label("px230401-random-seed7") == "max 230,401 px, random sampling, seed 7"  # not a square
    assert protocol_label("ex50176-cached") == "exactly 224x224 px, frame cache"
    assert protocol_label("min50176-dense_head@0.25") == "min 224x224 px, dense_head@0.25 sampling"
    assert protocol_label("default") == "decoded size"
    assert protocol_label("px200704-mystery") == "px200704-mystery"  # no humane form for a part: the id as it is
    assert pixels(200704) == "448x448" and pixels(1000) == "1,000"


def test_figure_titles_and_report_headings_name_the_protocol_in_words() -> None:
    budgets = {"text": (0, None), "f4-px200704": (4, 200704), "f8-px200704": (8, 200704)}
    rows = [row("m", "d", i, b, f, mark, max_pixels=px) for i, marks in {"a": "011", "b": "110"}.items()
            for (b, (f, px)), mark in zip(budgets.items(), marks, strict=True)]
    doc = _doc(rows)
    (g,) = doc["groups"]
    assert g["protocol_id"] == "px200704"
    with paper_style():
        figs = list(chain_figures(g, 0))
        assert figs and all("px200704" not in t.get_text() for pf in figs for t in visible_texts(pf.figure))
        assert figs[0].name == "accuracy--m--d--px200704"  # file names keep the id
        titles = [pf.figure.axes[0].get_title(loc="left") for pf in figs]
        assert titles[0] == "m on d, max 448x448 px: 2 items"
    html = render_report(doc)
    assert "<h2>m on d: max 448x448 px (chain px200704, primary)</h2>" in html
    assert "protocol: max 448x448 px, uniform sampling" in html


def _cascade_group(curve: list[tuple[float, float, float]], fixed: dict[str, tuple[int, float]]) -> dict:
    """A chain group with a two-stage cascade: (tau, mean frames, accuracy) per threshold, fixed budgets."""
    return {"model_id": "m", "dataset": "d", "protocol_id": "default",
            "cascade": {"stages": ["f4", "f8"], "pareto_front": [],
                        "curve": [{"tau": t, "accuracy": a, "mean_frames": x, "mean_stages": 1.5, "n_items": 10,
                                   "mean_unique_frames": x} for t, x, a in curve]},
            "budget_frames": {"text": 0, **{b: f for b, (f, _) in fixed.items()}},
            "fixed_accuracy": {"text": 0.3, **{b: a for b, (_, a) in fixed.items()}}}


def _front(fig) -> list[tuple[float, float]]:
    (line,) = [ln for ln in fig.axes[0].get_lines() if ln.get_label().startswith("Pareto front")]
    assert line.get_marker() == "o"  # every point of the front is marked: a front of one point is drawn
    return [(round(float(x), 9), round(float(y), 9)) for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True)]


def test_the_cascade_front_is_over_every_point_drawn() -> None:
    """Hand-built: thresholds at (6 frames, 60%), (7, 70%), (8, 75%); fixed f4 (4, 65%) and f8 (8, 80%). The
    cascade's own front is all three thresholds, under f8; over every point the front is f4, tau 0.7, f8."""
    g = _cascade_group([(0.5, 6.0, 0.6), (0.7, 7.0, 0.7), (1.0, 8.0, 0.75)], {"f4": (4, 0.65), "f8": (8, 0.8)})
    with paper_style():
        fig = cascade_figure(g)
        assert fig is not None
        assert _front(fig) == [(4.0, 65.0), (7.0, 70.0), (8.0, 80.0)]
        legend = [t.get_text() for t in fig.legends[0].get_texts()]
        assert "Pareto front of all points" in legend
        # one fixed budget cheaper and better than every threshold: a front of one point, drawn as a ring
        one = cascade_figure(_cascade_group([(0.5, 6.0, 0.5), (1.0, 8.0, 0.6)], {"f2": (2, 0.9), "f8": (8, 0.6)}))
        assert one is not None and _front(one) == [(2.0, 90.0)]
