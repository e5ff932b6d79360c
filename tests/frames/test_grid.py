"""Iso-compute allocations spend the same pixels; grids expand to budget points."""

from __future__ import annotations

import pytest

from engine.config import GridSpec
from engine.config.grid import iso_compute, realised_pixels


def test_iso_compute_points_have_equal_frames_times_pixels() -> None:
    points = iso_compute(9_830_400, [32, 64, 128, 256])
    assert [(p.frames, p.max_pixels) for p in points] == [(32, 307_200), (64, 153_600), (128, 76_800), (256, 38_400)]
    assert {p.frames * p.max_pixels for p in points} == {9_830_400}  # type: ignore[operator]
    assert len({p.budget_id for p in points}) == 4


def test_iso_compute_rounds_down_by_less_than_a_pixel_per_frame() -> None:
    for p in iso_compute(9_700_000, [32, 48, 64, 96, 128]):
        assert 0 <= 9_700_000 - p.frames * p.max_pixels < p.frames  # type: ignore[operator]


@pytest.mark.parametrize("width,height", [(1920, 1080), (1280, 720), (640, 360)])
def test_realised_pixels_stay_close_to_the_budget(width: int, height: int) -> None:
    budget = 9_830_400
    for p in iso_compute(budget, [32, 64, 128]):
        got = realised_pixels(p, width, height)
        native = p.frames * width * height
        assert got <= min(budget, native)
        assert got >= 0.95 * min(budget, native)  # aspect kept, sides rounded to even numbers


def test_iso_compute_on_the_short_side_axis() -> None:
    points = iso_compute(9_830_400, [32, 128], axis="short_side", aspect=16 / 9)
    assert [p.short_side for p in points] == [414, 206]  # sqrt(307200 / (16/9)) = 415.7, sqrt(76800 / (16/9)) = 207.8: even, down
    for p in points:
        assert realised_pixels(p, 1920, 1080) <= 9_830_400
        assert realised_pixels(p, 1920, 1080) >= 0.97 * 9_830_400


def test_iso_compute_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        iso_compute(0)
    with pytest.raises(ValueError):
        iso_compute(100, [64])


def test_expand_grid() -> None:
    grid = GridSpec(frames=[0, 16, 32], max_pixels=[None, 200_704], policies=["uniform", "nested"]).expand()
    ids = [b.budget_id for b in grid]
    assert ids[0] == "text" and ids.count("text") == 1
    assert "f16-px200704-nested" in ids and "f32" in ids
    assert len(ids) == 1 + 2 * 2 * 2


def test_spec_grids_expand_into_budgets_at_load(tmp_path) -> None:
    from helpers.specs import small_spec_dict

    from engine.config import SpecError, parse_spec

    d = small_spec_dict(tmp_path)
    d["budgets"] = [{"frames": 4}]
    d["grids"] = [{"frames": [0, 4, 8], "max_pixels": [None, 50176], "policies": ["uniform", "random"]}]
    spec = parse_spec(d)
    ids = [b.budget_id for b in spec.budgets]
    assert ids[0] == "f4" and ids.count("f4") == 1  # given by hand and by the grid: one budget
    assert set(ids) == {"text", "f4", "f4-random", "f4-px50176", "f4-px50176-random",
                        "f8", "f8-random", "f8-px50176", "f8-px50176-random"}
    assert [b.budget_id for b in GridSpec(frames=[0, 4], policies=["random"]).expand()] == ["text", "f4-random"]
    d["budgets"], d["grids"] = [], []
    with pytest.raises(SpecError, match="no budgets"):
        parse_spec(d)


def test_min_pixels_enlarges_small_frames_and_names_its_protocol(tmp_path) -> None:
    from helpers.specs import small_spec_dict

    from engine.config import BudgetPoint, SpecError, parse_spec
    from engine.frames.resize import size_for, target_size

    assert target_size(96, 64, None, None, 100_000) == (388, 260)  # 96x64 enlarged to >= 100,000 px, aspect kept
    assert target_size(96, 64, None, None, 1_000) == (96, 64)  # already large enough: unchanged
    assert target_size(1920, 1080, None, 224, 100_000) == (422, 238)  # shrunk by short_side, then held at the floor
    assert target_size(1920, 1080, 50_176, None, None) == (298, 168)  # max_pixels never enlarges, as before
    b = BudgetPoint(frames=8, min_pixels=3136)
    assert (b.budget_id, b.protocol_id) == ("f8-min3136", "min3136")
    assert size_for(40, 30, b) == (66, 50)
    d = small_spec_dict(tmp_path)
    d["budgets"] = [{"frames": 4, "max_pixels": 1000, "min_pixels": 2000}]
    with pytest.raises(SpecError, match="min_pixels .2000. is above max_pixels .1000."):
        parse_spec(d)
