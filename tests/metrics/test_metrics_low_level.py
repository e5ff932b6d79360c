"""Visual confusion, harm and text overwrite by quantile bins of each video's low-level statistics, and each
statistic's rank AUC for confusion, on hand-made rows with hand-computed values.

Chain {text, f4, f8} of model m on dataset d; each item its own video (v-<item>). Trajectories:

    item  text f4 f8   confused  harmed  overwritten   motion  brightness
    a      1    1  1      .        .        .           0.1      0.5
    b      1    1  1      .        .        .           0.2      0.5
    c      1    0  1      x        .        x           0.3      0.5
    d      0    1  1      .        .        .           0.4      0.5
    e      0    1  0      x        x        .           0.5      0.5
    f      1    1  0      x        x        x           0.6      0.5
    g      0    1  0      x        x        .           0.7      0.5
    h      1    0  0      x        .        x           0.8      0.5

Motion quartiles {a, b}, {c, d}, {e, f}, {g, h}: confusion 0, 1/2, 1, 1; harm 0, 0, 1, 1/2; overwrite 0, 1/2,
1/2, 1/2. Its AUC: of the 5 x 3 (confused, unconfused) pairs, the confused item moves more in all but (c, d):
14/15. Brightness is the same for every item: one bin (ties share the lower one) and AUC 1/2. No video has an
fps: that statistic is left out.
"""

from __future__ import annotations

import polars as pl
import pytest
from helpers.metric_rows import lazy, row

from engine.metrics.document import summary_document
from engine.metrics.grid import matched
from engine.metrics.low_level import item_flags, quantile_bins, stat_tables
from engine.metrics.summary import SummaryOptions, summary_tables
from engine.results.video_stats import VIDEO_STATS_SCHEMA, with_video_stats

MARKS = {"a": "111", "b": "111", "c": "101", "d": "011", "e": "010", "f": "110", "g": "010", "h": "100"}
MOTION = dict(zip(MARKS, (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8), strict=True))


def _rows(dataset: str = "d") -> list:
    out = []
    for item, marks in MARKS.items():
        out += [row("m", dataset, item, b, n, mk) for (b, n), mk in zip((("text", 0), ("f4", 4), ("f8", 8)), marks,
                                                                         strict=True)]
    return out


def _stats() -> pl.LazyFrame:
    return pl.DataFrame([{"dataset": "d", "video_id": f"v-{i}", "motion_energy": v, "brightness": 0.5,
                          "frames_used": 8} for i, v in MOTION.items()], schema=VIDEO_STATS_SCHEMA).lazy()


def _snapshot(rows: list) -> pl.LazyFrame:
    return with_video_stats(lazy(rows), _stats())


def test_quantile_bins_by_hand() -> None:
    import numpy as np

    assert quantile_bins(np.array([0.8, 0.1, 0.5, 0.3, 0.2, 0.7, 0.4, 0.6])).tolist() == [3, 0, 2, 1, 0, 3, 1, 2]
    assert quantile_bins(np.array([1.0, 1, 1, 1, 2, 3, 4, 5])).tolist() == [0, 0, 0, 0, 2, 2, 3, 3]  # ties: lower


def test_bins_rates_and_auc_per_statistic() -> None:
    rows = _rows()
    flags = item_flags(matched(lazy(rows)), _snapshot(rows)).collect()
    assert flags.select("item_id", "confused", "harmed", "overwritten").rows() == [
        ("a", False, False, False), ("b", False, False, False), ("c", True, False, True), ("d", False, False, False),
        ("e", True, True, False), ("f", True, True, True), ("g", True, True, False), ("h", True, False, True)]
    bins, auc = stat_tables(flags, n_boot=200, seed=3)
    motion = bins.filter(pl.col("statistic") == "motion_energy").sort("bin")
    assert motion.select("bin", "lo", "hi", "n_items", "confusion", "harm", "overwrite").rows() == [
        (1, 0.1, 0.2, 2, 0.0, 0.0, 0.0), (2, 0.3, 0.4, 2, 0.5, 0.0, 0.5), (3, 0.5, 0.6, 2, 1.0, 1.0, 0.5),
        (4, 0.7, 0.8, 2, 1.0, 0.5, 0.5)]
    assert motion.select("n_confused", "n_harmed", "n_overwritten").rows() == [(0, 0, 0), (1, 0, 1), (2, 2, 1),
                                                                              (2, 1, 1)]
    bright = bins.filter(pl.col("statistic") == "brightness")
    assert bright.select("bin", "n_items", "confusion", "harm", "overwrite").rows() == [(1, 8, 5 / 8, 3 / 8, 3 / 8)]
    got = {r["statistic"]: r for r in auc.to_dicts()}
    assert set(got) == {"motion_energy", "brightness"}  # no video has an fps, duration, ...: left out
    assert got["motion_energy"]["auc"] == pytest.approx(14 / 15) and got["motion_energy"]["n_confused"] == 5
    assert (got["brightness"]["auc"], got["brightness"]["auc_lo"], got["brightness"]["auc_hi"]) == (0.5, 0.5, 0.5)
    assert (motion["confusion_lo"][0], motion["confusion_hi"][0]) == (0.0, 0.0)  # nobody confused in bin 1
    for r in motion.to_dicts():
        for rate in ("confusion", "harm", "overwrite"):
            assert r[f"{rate}_lo"] <= r[rate] <= r[f"{rate}_hi"]
    assert got["motion_energy"]["auc_lo"] <= 14 / 15 <= got["motion_energy"]["auc_hi"] <= 1.0
    again = stat_tables(flags, n_boot=200, seed=3)
    assert again[0].equals(bins) and again[1].equals(auc)  # seeded: the same intervals


def test_the_metrics_document_and_report_carry_it() -> None:
    """Registered: groups[].low_level for the group with statistics, null for one without (dataset e has no
    video statistics); the report's table-low-level-N shows it."""
    from engine.report import render_report

    rows = _rows() + _rows("e")
    opts = SummaryOptions(n_boot=50, taus=(1.0,))
    doc = summary_document(summary_tables(_snapshot(rows), opts), opts)
    by = {g["dataset"]: g for g in doc["groups"]}
    assert by["e"]["low_level"] is None
    low = by["d"]["low_level"]
    assert (low["n_items"], low["n_with_stats"], low["n_bins"]) == (8, 8, 4)
    motion = next(s for s in low["statistics"] if s["statistic"] == "motion_energy")
    assert motion["auc"] == pytest.approx(14 / 15)
    assert [b["confusion"] for b in motion["bins"]] == [0.0, 0.5, 1.0, 1.0]
    assert [b["overwrite"] for b in motion["bins"]] == [0.0, 0.5, 0.5, 0.5]
    html = render_report(doc)
    assert 'id="table-low-level-' in html and "motion_energy" in html


def test_rows_without_statistics_leave_every_other_metric_unchanged() -> None:
    """The statistics are joined columns: the other metrics of the document are the same with or without them."""
    rows = _rows()
    opts = SummaryOptions(n_boot=20, taus=(1.0,))
    plain = summary_document(summary_tables(lazy(rows), opts), opts)
    joined = summary_document(summary_tables(_snapshot(rows), opts), opts)
    for g, h in zip(plain["groups"], joined["groups"], strict=True):
        assert g["low_level"] is None
        assert {k: v for k, v in g.items() if k != "low_level"} == {k: v for k, v in h.items() if k != "low_level"}
