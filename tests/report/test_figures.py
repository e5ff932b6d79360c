"""Paper figures (`engine.report.figures`, `framesweep figures`): drawn from the documents, written as
readable files with stable names, labels that neither overlap nor leave the page, and no figure where a
section has no data."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from helpers.figure_checks import outside, overlaps, visible_texts
from helpers.metric_rows import CASCADE_TAUS, audit_rows, cascade_rows, frame, lazy, row, write_sweep
from matplotlib.collections import PolyCollection
from matplotlib.patches import Rectangle
from typer.testing import CliRunner

from engine.cli import app
from engine.metrics.document import summary_document
from engine.metrics.summary import SummaryOptions, load_rows, summary_tables
from engine.report import render_report
from engine.report.figures import chain_figures, checkpoint_figures, inline_svg, paper_figures, write_figures
from engine.report.style import COLUMN, DPI, paper_style


def _doc(rows: list, n_boot: int = 50) -> dict:
    opts = SummaryOptions(n_boot=n_boot, taus=CASCADE_TAUS)
    return summary_document(summary_tables(lazy(rows), opts), opts, source="test")


@pytest.fixture(scope="module")
def doc() -> dict:
    return _doc([*audit_rows(), *cascade_rows()])


def _group(doc: dict, model: str, dataset: str, protocol: str = "default") -> tuple[int, dict]:
    return next((i, g) for i, g in enumerate(doc["groups"])
                if (g["model_id"], g["dataset"], g["protocol_id"]) == (model, dataset, protocol))


def _kinds(doc: dict, idx: int, g: dict) -> dict:
    with paper_style():
        return {pf.name.split("--")[0]: pf.figure for pf in chain_figures(g, idx)}


def test_chain_figures_draw_the_documents_numbers(doc: dict) -> None:
    idx, g = _group(doc, "m", "d")
    figs = _kinds(doc, idx, g)
    assert set(figs) == {"accuracy", "transitions", "flows", "trajectories"}  # no confidences: no cascade
    ax = figs["accuracy"].axes[0]
    curve, oracle = ax.get_lines()[0], ax.get_lines()[1]
    assert list(curve.get_ydata()) == pytest.approx([100 * g["fixed_accuracy"][b] for b in g["grid"]])
    assert list(oracle.get_ydata()) == pytest.approx([100 * g["oracle_accuracy"]] * 2)
    band = next(c for c in ax.collections if isinstance(c, PolyCollection))  # the bootstrap band
    lo = [100 * g["confidence_intervals"]["fixed_accuracy"][b][0] for b in g["grid"]]
    assert np.min(band.get_paths()[0].vertices[:, 1]) == pytest.approx(min(lo))
    assert [t.get_text() for t in ax.get_xticklabels()] == ["text", "4", "8", "16"]
    assert ax.get_ylabel() == "accuracy (%)" and ax.get_xlabel() == "frames"
    assert figs["accuracy"].legends  # fixed budget, its CI, the oracle
    bars = [p for p in figs["transitions"].axes[0].patches if isinstance(p, Rectangle)]
    heights = sorted(round(p.get_height()) for p in bars)
    want = sorted([t["rescue"] for t in g["transitions"]] + [-t["harm"] for t in g["transitions"]])
    assert heights == want
    heat = figs["trajectories"].axes[0].collections[0].get_array()
    assert heat.size == len(g["trajectory_patterns"]) * len(g["grid"])


def test_the_cascade_only_where_confidences_stop_it(doc: dict) -> None:
    idx, g = _group(doc, "c", "d2")
    cascade = _kinds(doc, idx, g)["cascade"].axes[0]
    (front,) = [ln for ln in cascade.get_lines() if ln.get_label().startswith("Pareto front")]
    drawn = {(x, y) for ln in cascade.get_lines() if ln is not front
             for x, y in zip(ln.get_xdata(), ln.get_ydata(), strict=True)}
    on = list(zip(front.get_xdata(), front.get_ydata(), strict=True))  # of every point drawn, none dominated
    assert on and all(p in drawn and not any(x <= p[0] and y > p[1] for x, y in drawn) for p in on)
    # imported logs: no confidence on any row; the document still carries a curve (every threshold runs
    # every stage), which is no cascade at all
    imported = _doc(frame({"a": "0110", "b": "1100", "c": "1011"}, per_item={k: {"confidence": None} for k in "abc"}))
    (g2,) = imported["groups"]
    assert g2["cascade"]["curve"]  # what the metrics layer gives
    assert "cascade" not in _kinds(imported, 0, g2)
    assert 'id="fig-cascade-0"' not in render_report(imported)


def test_no_label_overlaps_none_cut_off(doc: dict) -> None:
    with paper_style():
        figs = list(paper_figures(doc))
        assert len(figs) > 10
        for pf in figs:
            assert overlaps(visible_texts(pf.figure), pf.figure) == [], pf.name
            assert outside(pf.figure) == [], pf.name
    # crowded ticks: 14 budgets with long labels on one column are turned, then thinned, never left touching
    budgets = {"text": 0, **{f"f{n}-px50176-random-seed7": n for n in range(1, 14)}}
    crowded = _doc(frame({"a": "01" * 7, "b": "10" * 7}, budgets=budgets), n_boot=0)
    with paper_style():
        for pf in paper_figures(crowded):
            assert overlaps(visible_texts(pf.figure), pf.figure) == [], pf.name
            assert outside(pf.figure) == [], pf.name


def test_the_overlap_check_sees_an_overlap() -> None:
    from engine.report.style import new_figure

    with paper_style():
        fig, ax = new_figure()
        ax.text(0.5, 0.5, "one label")
        ax.text(0.5, 0.5, "another label")
        ax.set_title("a title much too long to fit in one column of a two-column paper, so it runs off")
        assert overlaps(visible_texts(fig), fig) == [("one label", "another label")]
        assert outside(fig) == [ax.title.get_text()]


def test_declutter_lays_a_figure_out_once_when_nothing_touches_and_per_step_when_crowded() -> None:
    """Every layout is a full draw (half of a report's time went to them): one for all axes of a figure whose
    labels fit, was two per axis; a crowded axis one more per step (turned, then every other label hidden)."""
    from engine.report.style import declutter, new_figure

    def layouts(labels: list[str], n_axes: int) -> tuple[int, int]:
        with paper_style():
            fig, grid = new_figure(cols=n_axes)
            axes = list(np.atleast_1d(grid))
            for ax in axes:
                ax.plot(range(len(labels)), range(len(labels)))
                ax.set_xticks(range(len(labels)), labels)
            calls = []
            draw = fig.draw_without_rendering
            fig.draw_without_rendering = lambda: (calls.append(1), draw())[1]  # type: ignore[method-assign]
            declutter(fig)
            n = len(calls)
            assert overlaps([t for ax in axes for t in ax.get_xticklabels() if t.get_visible()], fig) == []
            return n, sum(t.get_visible() for t in axes[0].get_xticklabels())

    assert layouts([str(n) for n in range(6)], 2) == (1, 6)
    crowded = [f"f{n}-seed7" for n in range(14)]
    assert layouts(crowded, 1) == (3, 7)  # touch; turned, still touch; every other label: fit


def test_a_figure_is_saved_once_in_the_layout_its_labels_were_checked_in(doc: dict) -> None:
    """`declutter` keeps the layout it checked (the figure's layout engine is dropped): saving draws a figure once
    (it was two draws per file, each laying the figure out again with the file format's text metrics) and moves
    no axis."""
    idx, g = _group(doc, "m", "d")
    with paper_style():
        figures = list(chain_figures(g, idx))
        assert len(figures) >= 3
        for pf in figures:
            fig = pf.figure
            assert fig.get_layout_engine() is None, pf.name
            where = [ax.get_position().bounds for ax in fig.axes]
            draws: list[int] = []
            draw = fig.draw
            fig.draw = lambda renderer, draw=draw, draws=draws: (draws.append(1), draw(renderer))[1]  # type: ignore[method-assign]
            assert inline_svg(pf).startswith("<svg")
            assert len(draws) == 1, pf.name
            assert [ax.get_position().bounds for ax in fig.axes] == where, pf.name


def _pages(pdf: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page\b(?!s)", pdf))


def test_files_are_written_readable_and_named_stably(doc: dict, tmp_path: Path) -> None:
    from PIL import Image

    keep = {("m", "d"), ("c", "d2")}
    doc = {**doc, "groups": [g for g in doc["groups"] if (g["model_id"], g["dataset"]) in keep]}
    names = {}
    for fmt in ("png", "pdf", "svg"):
        paths = write_figures(doc, tmp_path / fmt, fmt)
        names[fmt] = sorted(p.stem for p in paths)
        assert sorted(p.name for p in (tmp_path / fmt).iterdir()) == sorted(p.name for p in paths)
    assert names["png"] == names["pdf"] == names["svg"]
    assert {"accuracy--m--d--default", "transitions--m--d--default", "flows--m--d--random-seed3",
            "cascade--c--d2--default", "robustness--m--d"} <= set(names["png"])
    for path in (tmp_path / "png").iterdir():
        with Image.open(path) as img:
            img.load()
            assert img.format == "PNG" and img.width == round(COLUMN * DPI)  # one column of a two-column paper
            assert 0.3 * DPI < img.height < 5 * DPI
            assert len(img.convert("RGB").getcolors(1 << 20) or []) > 3  # drawn, not blank
    for path in (tmp_path / "pdf").iterdir():
        data = path.read_bytes()
        assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF") and _pages(data) == 1
        box = re.search(rb"/MediaBox\s*\[\s*0\s+0\s+([\d.]+)\s+([\d.]+)", data)
        assert box is not None and float(box.group(1)) == pytest.approx(COLUMN * 72, abs=0.5)
    for path in (tmp_path / "svg").iterdir():
        assert ET.parse(path).getroot().tag.endswith("svg")
    again = write_figures(doc, tmp_path / "again", "svg")  # the same document, the same files
    assert [p.read_bytes() for p in sorted(again)] == [p.read_bytes() for p in sorted((tmp_path / "svg").iterdir())]


def test_names_of_models_with_slashes_stay_distinct() -> None:
    rows = [*frame({"a": "01", "b": "10"}, model="org/model-a", budgets={"text": 0, "f4": 4}),
            *frame({"a": "01", "b": "11"}, model="org_model-a", budgets={"text": 0, "f4": 4})]
    names = [pf.name for pf in paper_figures(_doc(rows, n_boot=0)) if pf.name.startswith("accuracy")]
    assert len(names) == 2 and len(set(names)) == 2 and all("/" not in n for n in names)


def test_sections_without_data_are_left_out() -> None:
    # free-text answers: no letter was predicted, so there is no letter prior to show
    free = _doc(frame({"a": "0110", "b": "1100"}, per_item={k: {"pred": None} for k in "ab"}), n_boot=0)
    assert free["groups"][0]["letter_prior"]["by_budget"]  # the metric has rows, all without a letter
    html = render_report(free)
    assert "table-letter-prior-0" not in html and 'id="fig-accuracy-0"' in html
    letters = render_report(_doc(frame({"a": "0110", "b": "1100"}), n_boot=0))
    assert "table-letter-prior-0" in letters
    # a checkpoint study whose checkpoints record no train frames has a trap figure, no train-frames figure
    study = {"temporal_trap": [{"model_id": "ft", "base_id": "base", "frames": f, "video_gain": g,
                                "image_gain": -0.1} for f, g in ((0, 0.0), (8, 0.05), (16, 0.1))],
             "train_frames": [{"architecture": None, "size": None, "train_frames": None, "train_frames_n": None,
                               "label": "ft", "video_gain": 0.1, "image_loss": 0.1}]}
    with paper_style():
        assert [pf.name for pf in checkpoint_figures(study)] == ["temporal-trap"]
        study["train_frames"] = [{"architecture": "qwen", "size": "7B", "train_frames": str(n), "train_frames_n": n,
                                  "label": f"ft{n}", "video_gain": 0.02 * k, "image_loss": 0.01 * k}
                                 for k, n in enumerate((8, 16, 32))]
        (trap, train) = checkpoint_figures(study)
        video, image = trap.figure.axes[0].get_lines()[:2]
        assert list(video.get_ydata()) == pytest.approx([0.0, 5.0, 10.0]) and list(image.get_ydata()) == [-10.0] * 2
        assert [t.get_text() for t in trap.figure.axes[0].get_xticklabels()] == ["text only", "8", "16"]
        assert [t.get_text() for t in train.figure.axes[0].get_xticklabels()] == ["8", "16", "32"]
        gains = train.figure.axes[0].get_lines()[0]  # video gain, joined over the fixed train-frame counts
        assert list(gains.get_ydata()) == pytest.approx([0.0, 2.0, 4.0])
    assert _doc([], n_boot=0)["groups"] == [] and list(paper_figures({"groups": []})) == []


def test_inline_svg_keeps_its_ids_to_itself(doc: dict) -> None:
    idx, g = _group(doc, "m", "d")
    with paper_style():
        a, b = list(chain_figures(g, idx))[:2]
        one, two = inline_svg(a), inline_svg(b)
    ids = re.findall(r'\bid="([^"]+)"', one + two)
    assert len(ids) == len(set(ids)) and all(i.startswith(("fig-accuracy-", "fig-transitions-")) for i in ids)
    assert one.startswith(f'<svg id="fig-accuracy-{idx}"') and "<?xml" not in one and "xlink" not in one


def test_figures_command(tmp_path: Path) -> None:
    write_sweep(tmp_path / "sweep", audit_rows())
    res = CliRunner().invoke(app, ["figures", str(tmp_path / "sweep"), "--to", str(tmp_path / "figs"), "--format",
                                   "png", "--n-boot", "20"])
    assert res.exit_code == 0, res.output
    written = sorted(p.name for p in (tmp_path / "figs").iterdir())
    assert "accuracy--m--d--default.png" in written and f"wrote {len(written)} figures" in res.output
    # from a saved metrics document: the same figures, without reading the results again
    res = CliRunner().invoke(app, ["metrics", str(tmp_path / "sweep"), "--n-boot", "20", "--json",
                                   str(tmp_path / "m.json")])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(app, ["figures", str(tmp_path / "m.json"), "--to", str(tmp_path / "from-json"),
                                   "--format", "png"])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in (tmp_path / "from-json").iterdir()) == written
    bad = CliRunner().invoke(app, ["figures", str(tmp_path / "sweep"), "--to", str(tmp_path / "x"), "--format",
                                   "jpg"])
    assert bad.exit_code == 2 and "--format 'jpg': use one of pdf, png, svg" in bad.output
    (tmp_path / "other.json").write_text(json.dumps({"schema": "something/1"}))
    bad = CliRunner().invoke(app, ["figures", str(tmp_path / "other.json"), "--to", str(tmp_path / "y")])
    assert bad.exit_code == 2 and "neither a metrics document" in bad.output and "Traceback" not in bad.output


def test_report_carries_the_run(tmp_path: Path) -> None:
    """The report's run section: spec, models and hashes, versions, dates (from the manifest and the rows)."""
    from engine.results.manifest import write_manifest

    write_sweep(tmp_path / "sweep", audit_rows())
    spec = {"sweep_id": "t", "models": [{"id": "m", "family": "qwen2_5_vl", "path": str(tmp_path / "nowhere")}],
            "budgets": [{"frames": 0}, {"frames": 4, "max_pixels": None}]}
    write_manifest(tmp_path / "sweep", {"sweep_id": "t", "framesweep_version": "0.1.0", "spec": spec,
                                         "history": [{"started_at": "2026-12-01T10:00:00+00:00",
                                                      "framesweep_version": "0.1.0", "policy": "grid"}]})
    out = tmp_path / "r.html"
    res = CliRunner().invoke(app, ["report", str(tmp_path / "sweep"), "-o", str(out), "--n-boot", "0"])
    assert res.exit_code == 0, res.output
    html = out.read_text()
    for table_id in ("table-run", "table-models", "table-runs", "table-versions"):
        assert f'id="{table_id}"' in html
    assert "2026-12-01T10:00:00+00:00" in html and "not found" in html  # the model's folder is missing
    assert "sweep_id = &quot;t&quot;" in html and "null" not in html.split("<pre>")[1].split("</pre>")[0]
    assert load_rows(tmp_path / "sweep").collect().height > 0


def test_iso_compute_figure_draws_each_allocation() -> None:
    iso = [row("m", "iso", i, b, f, mark, max_pixels=px, pixels_total=f * px)
           for i, marks in {"i1": "100", "i2": "110", "i3": "001", "i4": "011"}.items()
           for (b, f, px), mark in zip([("f2-px400", 2, 400), ("f4-px200", 4, 200), ("f8-px100", 8, 100)], marks,
                                       strict=True)]
    doc = _doc(iso, n_boot=0)
    (s,) = doc["iso_compute"]
    with paper_style():
        (pf,) = [pf for pf in paper_figures(doc) if pf.name.startswith("iso-compute")]
        assert pf.name == "iso-compute--m--iso--px800"
        ax = pf.figure.axes[0]
        assert [round(p.get_height(), 6) for p in ax.patches] == [round(100 * a["accuracy"], 6) for a in s["allocations"]]
        notes = [t.get_text() for t in ax.texts]
        assert notes == [f"{a['n_sole_best']} best\nonly here" for a in s["allocations"]]
        assert overlaps(visible_texts(pf.figure), pf.figure) == [] and outside(pf.figure) == []
