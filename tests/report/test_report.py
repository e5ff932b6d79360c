"""The HTML report: self-contained, and its figures render in a real (headless Chromium) browser."""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from helpers.checkpoint_rows import checkpoint_rows
from helpers.metric_rows import CASCADE_TAUS, audit_rows, cascade_rows, row, write_sweep
from helpers.predictor_rows import all_predictions, predictor_rows
from typer.testing import CliRunner

from engine.adaptive.predictions import write_predictions
from engine.cli import app
from engine.metrics.checkpoint_study import NO_VIDEO
from engine.metrics.document import summary_document
from engine.metrics.summary import SummaryOptions, load_rows, summary_tables
from engine.report import render_report

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def report_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    write_sweep(out / "sweep", [*audit_rows(), *cascade_rows()])
    opts = SummaryOptions(n_boot=20, taus=CASCADE_TAUS)
    doc = summary_document(summary_tables(load_rows(out / "sweep"), opts), opts, source="sweep")
    path = out / "report.html"
    path.write_text(render_report(doc, "test <report>"), encoding="utf-8")
    return path


class _Svgs(HTMLParser):
    """Counts, per svg id, its descendant elements by tag and class."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.counts: dict[str, dict[str, int]] = {}
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"] or "")
        if tag == "svg":
            self.stack.append(a.get("id") or "")
            self.counts.setdefault(self.stack[-1], {})
        elif self.stack:
            key = f"{tag}.{a['class']}" if a.get("class") else tag
            c = self.counts[self.stack[-1]]
            c[key] = c.get(key, 0) + 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg" and self.stack:
            self.stack.pop()


def _parse(text: str) -> _Svgs:
    p = _Svgs()
    p.feed(text)
    return p


CHAIN_FIGURES = ("accuracy", "transitions", "flow", "trajectories")


def _check_figures(svgs: _Svgs) -> None:
    """Groups in order: 0 = (c, d2) the confident cascade, 1 = (m, d) the hand-built sweep, ...

    The matplotlib figures' contents are checked on the figures themselves (tests/report/test_figures.py); here,
    that each is in the page where it belongs, drawn (paths inside), and the registered heatmap as before."""
    def fig(kind: str, idx: int) -> dict[str, int]:
        return svgs.counts[f"fig-{kind}-{idx}"]

    for idx in (0, 1):
        for kind in CHAIN_FIGURES:
            assert fig(kind, idx).get("path", 0) > 5, (kind, idx)
    assert fig("cascade", 0).get("path", 0) > 5  # confident cascade over f2 < f4 < f8
    assert "fig-cascade-1" not in svgs.ids  # (m, d) has no confidences: its cascade is left out
    assert not any(i.startswith("fig-heatmap-") for i in svgs.ids)  # the trajectories are the paper figure
    assert "table-task_type-1" in svgs.ids


def _internal_references_only(text: str) -> None:
    """Every href and url() of the page points at an element of the page itself; every id is unique."""
    import re

    ids = re.findall(r'\bid="([^"]+)"', text)
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1][:5]
    refs = re.findall(r'href="([^"]*)"', text) + re.findall(r"url\(([^)]*)\)", text)
    assert refs  # the figures reuse their markers and clip paths
    assert all(r.startswith("#") and r[1:] in set(ids) for r in refs), [r for r in refs if r[1:] not in set(ids)][:5]


def test_report_is_self_contained(report_html: Path) -> None:
    text = report_html.read_text()
    assert text.startswith("<!DOCTYPE html>") and "test &lt;report&gt;" in text
    for banned in ("<script", "src=", "@import", "<image", "<?xml", "<!DOCTYPE svg"):
        assert banned not in text
    _internal_references_only(text)
    assert text.replace("http://www.w3.org/2000/svg", "").count("http") == 0
    _check_figures(_parse(text))


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "/usr/bin/chromium"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no chromium binary on PATH (apt-get install chromium) for the browser rendering check")


@pytest.mark.engine  # starts a headless browser
@pytest.mark.needs("chromium")
def test_report_renders_in_headless_chromium(report_html: Path, tmp_path: Path) -> None:
    browser = _chromium()
    flags = [*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([browser, *flags, "--dump-dom", report_html.as_uri()], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    _check_figures(_parse(dom))
    shot = tmp_path / "shot.png"
    subprocess.run([browser, *flags, "--window-size=1000,1400", f"--screenshot={shot}", report_html.as_uri()],
                   capture_output=True, timeout=120, check=True)
    from PIL import Image

    colors = Image.open(shot).convert("RGB").getcolors(maxcolors=1 << 20) or []
    seen = {rgb for _, rgb in colors}
    assert (0x2E, 0x7D, 0x32) in seen and (0xC6, 0x28, 0x28) in seen  # the green and red of the figures


def test_report_command(tmp_path: Path) -> None:
    write_sweep(tmp_path / "sweep", audit_rows())
    out = tmp_path / "r.html"
    res = CliRunner().invoke(app, ["report", str(tmp_path / "sweep"), "-o", str(out), "--n-boot", "0"])
    assert res.exit_code == 0, res.output
    assert 'id="fig-accuracy-0"' in out.read_text()


# --- the predictor and checkpoint sections ---------------------------------------------------------

ADAPTIVE_IDS = {"table-predictor-0", "fig-predictor-0", "table-predictor-confusion-0", "table-temporal-trap",
                "fig-trap", "table-checkpoints"}


class _Tables(HTMLParser):
    """The text of every cell of every table with an id, row by row."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._current: list[list[str]] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self._current = self.tables.setdefault(dict(attrs).get("id") or "", [])
        elif tag == "tr" and self._current is not None:
            self._current.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._current:
            self._current[-1].append("".join(self._cell))
            self._cell = None
        elif tag == "table":
            self._current = None


@pytest.fixture(scope="module")
def adaptive_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`framesweep report` on a sweep with predictions beside it and three checkpoints."""
    out = tmp_path_factory.mktemp("adaptive")
    write_sweep(out / "sweep", [*predictor_rows(), *checkpoint_rows()])
    write_predictions(out / "sweep", all_predictions())
    path = out / "report.html"
    res = CliRunner().invoke(app, ["report", str(out / "sweep"), "-o", str(path), "--n-boot", "0",
                                   "--checkpoint-models", "base,ft1,ft2"])
    assert res.exit_code == 0, res.output
    return path


def _check_adaptive(text: str) -> None:
    svgs = _parse(text)
    assert svgs.ids >= ADAPTIVE_IDS
    assert svgs.counts["fig-predictor-0"].get("path", 0) > 5
    assert svgs.counts["fig-trap"].get("path", 0) > 5  # the paper figure (its numbers: tests/report/test_figures.py)
    assert "fig-train-frames" not in svgs.ids  # these checkpoints record no train frames


def test_adaptive_sections(adaptive_html: Path) -> None:
    text = adaptive_html.read_text()
    for banned in ("<script", "src=", "@import"):
        assert banned not in text
    _internal_references_only(text)
    _check_adaptive(text)
    p = _Tables()
    p.feed(text)
    assert p.tables["table-predictor-0"] == [
        ["strategy", "accuracy", "mean frames", "predictor minus it (pts)", "frames saved (%)"],
        ["predictor", "40.0", "8.8", "", ""],
        ["fixed text", "40.0", "0.0", "0.0", "n/a"],
        ["fixed f4", "40.0", "4.0", "0.0", "-120.0"],
        ["fixed f8", "60.0", "8.0", "-20.0", "-10.0"],
        ["fixed f16", "40.0", "16.0", "0.0", "45.0"],
        ["oracle (cheapest right budget)", "80.0", "2.4", "-40.0", ""],
    ]
    assert p.tables["table-predictor-confusion-0"] == [
        ["predicted", "text", "f4", "f8", "f16", "none"],
        ["text", "0", "0", "1", "0", "0"],
        ["f4", "0", "1", "0", "0", "0"],
        ["f8", "1", "0", "0", "0", "0"],
        ["f16", "1", "0", "0", "0", "1"],
    ]
    # official scores (no official rule for these datasets: accuracy over each model's own ok rows), deltas by
    # hand: ft1 vid text 1/3 - 1/2, f8 0, f16 2/4 - 1/4; vid2 f8 and f16 +1/2; img 1/3 - 2/3, img2 1/2 - 1;
    # ft2 vid text +1/2, f8 2/3 - 3/4, f16 1 - 1/4; vid2 f8 0, f16 -1/2; img and img2 0
    assert p.tables["table-temporal-trap"] == [
        ["checkpoint", "base", "frames", "video datasets", "video gain", "image datasets", "image loss", "trapped",
         "note"],
        # text only: no video was sent, so no verdict (ft2's video +50 with image loss 0 would read "not trapped")
        ["ft1", "base", "text only", "1", "-16.7", "2", "+41.7", NO_VIDEO, ""],  # image loss (1/3 + 1/2) / 2 = 5/12
        ["ft1", "base", "8", "2", "+25.0", "2", "+41.7", "yes", ""],  # (0 + 1/2) / 2
        ["ft1", "base", "16", "2", "+37.5", "2", "+41.7", "yes", ""],  # (1/4 + 1/2) / 2
        ["ft2", "base", "text only", "1", "+50.0", "2", "+0.0", NO_VIDEO, ""],
        ["ft2", "base", "8", "2", "-4.2", "2", "+0.0", "", ""],  # (-1/12 + 0) / 2
        ["ft2", "base", "16", "2", "+12.5", "2", "+0.0", "", ""],  # (3/4 - 1/2) / 2
    ]
    trap = p.tables["table-temporal-trap-per-question"]  # the per-question view, as before (and its note)
    assert trap[0] == ["checkpoint", "base", "frames", "video datasets", "video acc", "video gain", "image datasets",
                       "image acc", "image loss", "trapped", "note"]
    assert trap[6] == ["ft1", "base", "16", "2", "66.7", "41.7", "2", "41.7", "41.7", "yes", ""]
    assert len(trap) == 10
    rows = p.tables["table-checkpoints"]
    assert len(rows) == 17 and ["ft1", "vid", "video", "f16", "3", "33.3", "33.3", "1", "0", "33.3", "33.3"] in rows
    assert "agreement with the cheapest sufficient budget 25.0% of 4 solvable items" in text
    assert "video benchmarks: vid, vid2; image benchmarks: img, img2;" in text  # not the predictor's dataset d


def test_sections_only_with_their_data(report_html: Path) -> None:
    ids = _parse(report_html.read_text()).ids
    assert not ids & ADAPTIVE_IDS


@pytest.mark.engine  # starts a headless browser
@pytest.mark.needs("chromium")
def test_adaptive_sections_render_in_headless_chromium(adaptive_html: Path, tmp_path: Path) -> None:
    browser = _chromium()
    flags = [*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([browser, *flags, "--dump-dom", adaptive_html.as_uri()], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert _parse(dom).ids >= ADAPTIVE_IDS  # the browser's DOM holds every adaptive figure and table
    _check_adaptive(dom)


def test_online_cascade_section() -> None:
    from engine.report import render_report

    session = {"tau": 0.5, "stages": ["f16", "f32"], "n_items": 4, "accuracy": 0.75, "mean_frames_processed": 20.0,
               "mean_frames_decoded": 18.0, "wall_s": 3.0, "decode_passes": 2, "fixed_budget": "f32",
               "fixed_accuracy": 0.5, "fixed_mean_frames": 32.0, "fixed_wall_s": 4.5,
               "offline": {"n_items": 4, "accuracy": 0.75, "mean_frames": 20.0, "mean_unique_frames": 18.0},
               "decision_agreement": 1.0}
    html = render_report({"groups": [], "cascade_online": [session]})
    table = html[html.index('<table id="cascade-online">'):]
    table = table[: table.index("</table>")]
    assert table.count("<tr>") == 4  # header + cascade, fixed, offline simulation
    assert "<td>cascade f16 \u2192 f32 @ 0.5</td><td>75.0</td><td>20.0</td><td>18.0</td><td>3.0</td>" in table
    assert "<td>fixed f32</td><td>50.0</td><td>32.0</td><td>32.0</td><td>4.5</td>" in table
    assert "offline simulation (100.0 same stops)" in table
    assert "cascade-online" not in render_report({"groups": []})


def test_chains_robustness_and_iso_compute_sections(report_html: Path) -> None:
    text = report_html.read_text()
    # (m, d) has a default chain and the random-seed3 chain of its alternate policy; the primary leads
    assert text.index("m on d: decoded size (chain default, primary)") < text.index(
        "m on d: random sampling, seed 3 (chain random-seed3)<")
    assert "table-robustness-1" in _parse(text).ids  # (c, d2) = 0 has one chain: no robustness table
    assert "table-robustness-0" not in _parse(text).ids
    iso = [row("m", "iso", i, b, f, mark, max_pixels=px, pixels_total=f * px)
           for i, marks in {"i1": "100", "i2": "110", "i3": "001"}.items()
           for (b, f, px), mark in zip([("f2-px400", 2, 400), ("f4-px200", 4, 200), ("f8-px100", 8, 100)], marks,
                                       strict=True)]
    from helpers.metric_rows import lazy

    opts = SummaryOptions(n_boot=0)
    html = render_report(summary_document(summary_tables(lazy(iso), opts), opts))
    p = _Tables()
    p.feed(html)
    assert p.tables["table-iso-0-0"][1:] == [["f2-px400", "px400", "2", "800", "66.7", "2", "1"],
                                             ["f4-px200", "px200", "4", "800", "33.3", "1", "0"],
                                             ["f8-px100", "px100", "8", "800", "33.3", "1", "1"]]
    assert "best single f2-px400 66.7, oracle over the set 100.0" in html


def test_a_metrics_1_document_is_refused_not_misread() -> None:
    with pytest.raises(ValueError, match="schema 'framesweep.metrics/1': this report reads 'framesweep.metrics/2'"):
        render_report({"schema": "framesweep.metrics/1", "groups": [{"model_id": "m", "dataset": "d"}]})
