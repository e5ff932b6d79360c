"""Robustness compares two chains over the frame counts both have; the whole chains' figures beside.

Chain a (default) is {text, f16, f32, f64}, chain b (px9) {text, f16, f32}: their common frame counts
are 16 and 32, so by default both are compared over {text, 16, 32}. Trajectories, cheapest first:

    item  text   a: f16 f32 f64   b: f16 f32
    p      1        1   1   0        1   1
    q      0        1   0   1        1   0
    r      1        1   1   1        0   1
    s      0        0   1   1        1   0

Common budgets {text, 16, 32}: confused a {q}, b {q, r, s} (both {q}, jaccard 1 / 3); harmed (right at
the first visual budget, wrong at the last) a {q}, b {q, s} (both {q}); headroom a: best fixed 3/4
(f16, f32), oracle 1 -> 1/4; b: best 3/4 (f16), oracle 1 -> 1/4; confusion rates 1/4 and 3/4.
Whole chains: a confused {p, q} (p is wrong at f64), harmed {p} (right at f16, wrong at f64), so
confused both {q} with jaccard 1 / 4, harmed both {}; headroom a 1/4 (f64 is 3/4 too).
"""

from __future__ import annotations

import pytest
from helpers.metric_rows import collect_both, lazy, row

from engine.metrics.grid import matched
from engine.metrics.robustness import robustness

TEXT = {"p": "1", "q": "0", "r": "1", "s": "0"}
A = {"p": "110", "q": "101", "r": "111", "s": "011"}
B = {"p": "11", "q": "10", "r": "01", "s": "10"}


def _rows(b_frames: tuple[int, ...] = (16, 32)) -> list:
    rows = [row("m", "d", i, "text", 0, mark) for i, mark in TEXT.items()]
    for item, marks in A.items():
        rows += [row("m", "d", item, f"f{n}", n, mk) for n, mk in zip((16, 32, 64), marks, strict=True)]
    for item, marks in B.items():
        rows += [row("m", "d", item, f"f{n}-px9", n, mk, max_pixels=9) for n, mk in zip(b_frames, marks, strict=True)]
    return rows


def test_chains_of_different_lengths_are_compared_over_their_common_frame_counts() -> None:
    got = collect_both(robustness(matched(lazy(_rows())))).to_dicts()
    assert len(got) == 1
    r = got[0]
    assert (r["protocol_a"], r["protocol_b"], r["n_items"], r["frames_common"]) == ("default", "px9", 4, [16, 32])
    common = {k: r[k] for k in ("confused_a", "confused_b", "confused_both", "jaccard", "harmed_a", "harmed_b",
                                "harmed_both", "headroom_a", "headroom_b", "confusion_rate_a", "confusion_rate_b")}
    assert common == {"confused_a": 1, "confused_b": 3, "confused_both": 1, "jaccard": pytest.approx(1 / 3),
                      "harmed_a": 1, "harmed_b": 2, "harmed_both": 1, "headroom_a": pytest.approx(1 / 4),
                      "headroom_b": pytest.approx(1 / 4), "confusion_rate_a": 1 / 4, "confusion_rate_b": 3 / 4}
    whole = {k: r[f"{k}_whole"] for k in ("confused_a", "confused_b", "confused_both", "jaccard", "harmed_a",
                                          "harmed_b", "harmed_both", "headroom_a", "headroom_b", "confusion_rate_a",
                                          "confusion_rate_b")}
    assert whole == {"confused_a": 2, "confused_b": 3, "confused_both": 1, "jaccard": pytest.approx(1 / 4),
                     "harmed_a": 1, "harmed_b": 2, "harmed_both": 0, "headroom_a": pytest.approx(1 / 4),
                     "headroom_b": pytest.approx(1 / 4), "confusion_rate_a": 2 / 4, "confusion_rate_b": 3 / 4}


def test_chains_without_a_common_frame_count_have_only_whole_chain_figures() -> None:
    """b at 8 and 128 frames shares no frame count with a (16, 32, 64): the common figures are null (not
    zero, which would read as 'no item confused'); the whole chains are still compared."""
    got = collect_both(robustness(matched(lazy(_rows((8, 128)))))).to_dicts()[0]
    assert got["frames_common"] == [] and got["n_items"] == 4
    for k in ("confused_a", "confused_both", "jaccard", "harmed_b", "headroom_a", "confusion_rate_b"):
        assert got[k] is None, k
    assert (got["confused_a_whole"], got["harmed_a_whole"]) == (2, 1)


def test_the_report_shows_the_common_frame_figures_with_the_whole_chains_beside() -> None:
    from engine.metrics.document import summary_document
    from engine.metrics.summary import SummaryOptions, summary_tables
    from engine.report import render_report

    opts = SummaryOptions(n_boot=0, taus=(1.0,))
    html = render_report(summary_document(summary_tables(lazy(_rows()), opts), opts))
    start = html.index('<table id="table-robustness-0">')
    t = html[start:html.index("</table>", start)]
    assert "<th>common frames</th>" in t and "<th>whole chains: confused a / b / both; jaccard</th>" in t
    # common: confused 1 / 3 / 1, jaccard 0.33; whole: 2 / 3 / 1, jaccard 0.25
    assert "<td>16, 32</td><td>1 / 3 / 1</td><td>0.33</td>" in t and "<td>2 / 3 / 1; 0.25</td>" in t
    none = render_report(summary_document(summary_tables(lazy(_rows((8, 128))), opts), opts))
    start = none.index('<table id="table-robustness-0">')
    t = none[start:none.index("</table>", start)]
    assert "<td>none</td><td>n/a</td><td>n/a</td><td>n/a</td>" in t


def test_the_metrics_command_prints_the_common_frames_and_the_whole_chains(tmp_path) -> None:
    from helpers.metric_rows import write_sweep
    from typer.testing import CliRunner

    from engine.cli import app

    write_sweep(tmp_path / "sweep", _rows())
    res = CliRunner().invoke(app, ["metrics", str(tmp_path / "sweep"), "--n-boot", "0"], env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output
    assert "common frames" in res.output and "whole: confused a / b / both" in res.output
    line = next(x for x in res.output.splitlines() if "px9" in x and "16, 32" in x)
    assert "1 / 3 / 1" in line and "2 / 3 / 1" in line  # common, then whole
