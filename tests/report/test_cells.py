"""The one number format for people (`engine.report.cells`): every typed cell a metric gives, written as the
metrics wrote their strings before (the golden texts check the same on whole sweeps)."""

from __future__ import annotations

import pytest

from engine.metrics.sections import Count, Delta, Interval, Note, Number, Rate, Score, Table, joined, text
from engine.report.cells import cell_text, metric_score, points
from engine.report.html import blocks


@pytest.mark.parametrize(("value", "signed", "want"), [
    (0.6134, False, "61.3"), (0.6136, False, "61.4"), (1.0, False, "100.0"), (0.0, False, "0.0"),
    (0.02, True, "+2.0"), (-0.125, True, "-12.5"), (0.0, True, "+0.0"), (None, False, "n/a"),
    (float("nan"), True, "n/a")])
def test_points_are_a_fraction_times_100_to_one_place(value: float | None, signed: bool, want: str) -> None:
    assert points(value, signed) == want


@pytest.mark.parametrize(("cell", "want"), [
    (Rate(0.613), "61.3"), (Rate(None), "n/a"),
    (Rate(0.5, (0.25, 0.75)), "50.0 [25.0, 75.0]"), (Rate(None, (0.25, 0.75)), "n/a"),
    (Rate(0.5, (None, 0.75)), "50.0 [n/a, 75.0]"),
    (Interval(0.0, 1.0), "[0.0, 100.0]"), (Delta(0.02), "+2.0"), (Delta(-0.005), "-0.5"), (Delta(None), "n/a"),
    (Count(7), "7"), (Count(1234567.4, thousands=True), "1,234,567"), (Count(None), "n/a"),
    (Score(1234.5, "points"), "1234.5"), (Score(-12.25, "points", signed=True), "-12.2"),
    (Score(3.0, "count"), "3"), (Score(2.0, "count", signed=True), "+2"), (Score(0.25), "25.0"),
    (Score(0.1, signed=True), "+10.0"), (Score(None, "points"), "n/a"),
    (Number(0.8333), "0.83"), (Number(None), "n/a"), (Number(1234.5, significant=3), "1.23e+03"),
    (Number(0.012345, significant=3), "0.0123"),
    (text("oracle ", Rate(0.7), " (", Delta(0.1), " pts)"), "oracle 70.0 (+10.0 pts)"),
    (joined(" / ", (Rate(0.1), Rate(None), Count(3))), "10.0 / n/a / 3"), (joined(", ", ()), ""),
    ("as it is", "as it is"), (12, "12")])
def test_each_typed_cell_is_written_in_the_one_format(cell: object, want: str) -> None:
    assert cell_text(cell) == want


def test_a_benchmark_metric_is_written_in_its_registered_unit() -> None:
    assert metric_score("mme_perception", 1234.5) == "1234.5"
    assert metric_score("videomme_v2_n_groups", 4.0) == "4" and metric_score("mmbench_n_incomplete", 1.0, True) == "+1"
    assert metric_score("pope_f1_split_mean", 7 / 12) == "58.3" and metric_score("accuracy", None) == "n/a"


def test_the_report_writes_typed_cells_and_notes_escaped() -> None:
    html = blocks([Note(text("a < b: ", Rate(0.5))), Table("t", ["x"], [[Delta(0.01)], [text("<", Count(2))]])], {})
    assert html == ('<p class="note">a &lt; b: 50.0</p><table id="t"><tr><th>x</th></tr><tr><td>+1.0</td></tr>'
                    "<tr><td>&lt;2</td></tr></table>")
