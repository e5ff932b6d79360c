"""A budget's exact frame size (`exact_pixels`): frames shrunk or enlarged to that many pixels, aspect kept.

`max_pixels` only shrinks, so an iso-compute allocation whose cap is above a video's size sent fewer pixels
than its total (32 frames of a 640x360 video at max_pixels 303,125 send 7,372,800 px, not 9.7M) and dropped
out of the iso-compute set. Sizes here are hand-computed: scale = sqrt(P / (w h)), each side rounded to the
nearest even number.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import polars as pl
import pytest
from helpers.specs import small_spec_dict
from test_scheduler_media import FakeEngine

from engine.config import BudgetPoint, IsoComputeSpec, SpecError, parse_spec
from engine.config.grid import realised_pixels
from engine.frames.resize import size_for, target_size
from engine.metrics.grid import protocol_id
from engine.results import ResultsDir
from engine.sweep import Sweep


def test_exact_pixels_enlarges_and_shrinks_keeping_the_aspect() -> None:
    # 640x360 to 303,125 px: scale 1.14703, 734.1 x 412.9 -> 734 x 412 (302,408 px)
    assert target_size(640, 360, None, None, exact_pixels=303_125) == (734, 412)
    # 1920x1080 to 50,176 px: scale 0.155556, 298.7 x 168.0 -> 298 x 168
    assert target_size(1920, 1080, None, None, exact_pixels=50_176) == (298, 168)
    assert target_size(640, 360, None, None, exact_pixels=230_400) == (640, 360)  # already that size
    b = BudgetPoint(frames=32, exact_pixels=303_125)
    assert (b.budget_id, b.protocol_id) == ("f32-ex303125", "ex303125")
    assert size_for(640, 360, b) == (734, 412)


@pytest.mark.parametrize("other", [{"max_pixels": 1000}, {"short_side": 20}, {"min_pixels": 1000}])
def test_exact_pixels_takes_no_other_size_rule(tmp_path: Path, other: dict) -> None:
    d = small_spec_dict(tmp_path)
    d["budgets"] = [{"frames": 4, "exact_pixels": 2000, **other}]
    with pytest.raises(SpecError, match=r"budgets\.0.*exact_pixels sets the frame size"):
        parse_spec(d)
    d["budgets"] = [{"frames": 0, "exact_pixels": 2000}]
    with pytest.raises(SpecError, match="text-only budget"):
        parse_spec(d)


def test_iso_compute_allocations_send_their_pixels_on_a_small_video() -> None:
    """9.7M px over 32..256 frames of a 640x360 video: with exact sizes every allocation sends ~9.7M (within 0.3%);
    with max_pixels the 32-frame one sends 7.37M (its cap is above the video's 230,400 px)."""
    exact = IsoComputeSpec(total_pixels=9_700_000, frames=[32, 64, 128, 256], axis="exact_pixels").expand()
    assert [(b.frames, b.exact_pixels, b.max_pixels) for b in exact] == [
        (32, 303_125, None), (64, 151_562, None), (128, 75_781, None), (256, 37_890, None)]
    sent = [realised_pixels(b, 640, 360) for b in exact]
    assert sent[0] == 32 * 734 * 412 and sent[3] == 256 * 260 * 146
    assert all(abs(s - 9_700_000) / 9_700_000 < 0.003 for s in sent), sent
    capped = IsoComputeSpec(total_pixels=9_700_000, frames=[32], axis="max_pixels").expand()
    assert realised_pixels(capped[0], 640, 360) == 32 * 640 * 360 == 7_372_800


def test_a_rows_protocol_names_its_exact_size_and_old_rows_have_none() -> None:
    rows = pl.DataFrame({"max_pixels": [None, None], "short_side": [None, None], "min_pixels": [None, None],
                         "exact_pixels": [303_125, None], "policy": ["uniform", "random"], "seed": [0, 1],
                         "pipeline": ["raw", "raw"]}, schema_overrides={"exact_pixels": pl.Int64,
                                                                         "max_pixels": pl.Int64})
    assert rows.select(protocol_id().alias("p"))["p"].to_list() == ["ex303125", "random-seed1"]


def test_the_answer_fingerprint_names_an_exact_size_only_when_it_is_set(tmp_path: Path) -> None:
    """A budget without it keeps the fingerprint fields it had before the field existed (committed results
    resume); one with it records it."""
    from engine.sweep.fingerprint import _budget_fields

    spec = parse_spec(small_spec_dict(tmp_path))
    plain = _budget_fields(spec, BudgetPoint(frames=8, max_pixels=50_176), "pyav")
    assert "budget.exact_pixels" not in plain and plain["budget.max_pixels"] == 50_176
    assert _budget_fields(spec, BudgetPoint(frames=8, exact_pixels=9000), "pyav")["budget.exact_pixels"] == 9000


def test_a_sweep_sends_frames_at_their_exact_size_enlarged_and_shrunk(tmp_path: Path) -> None:
    d = small_spec_dict(tmp_path / "out")
    d["dataset"]["n_videos"] = 1
    d["budgets"] = [{"frames": 2, "exact_pixels": 20_000}, {"frames": 4, "exact_pixels": 1536}]
    engine = FakeEngine()
    asyncio.run(Sweep(parse_spec(d), backends={"tiny": engine}).run())
    # the 96x64 video (6,144 px): scale 1.8042 -> 173.2 x 115.5 -> 174 x 116; scale 0.5 -> 48 x 32
    assert sorted({f.shape for f in engine.frames if f is not None}) == [(2, 116, 174, 3), (4, 32, 48, 3)]
    rows = ResultsDir.open(tmp_path / "out").scan().collect()
    sizes = set(rows.select("budget_id", "width", "height", "exact_pixels", "pixels_total").iter_rows())
    assert sizes == {("f2-ex20000", 174, 116, 20000, 2 * 174 * 116), ("f4-ex1536", 48, 32, 1536, 4 * 48 * 32)}
