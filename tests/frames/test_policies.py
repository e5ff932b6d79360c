"""Sampling policies against hand-computed indices, and what plans record."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from engine.config import BudgetPoint
from engine.frames.plan import POLICIES, FramePlan, dyadic_order, get_policy, plan_budget, union_indices


def idx(policy: str, n_frames: int, budget: int, fps: float = 30.0, seed: int = 0) -> list[int]:
    return get_policy(policy)(n_frames, fps, budget, seed).tolist()


def test_registry_lists_every_policy_and_rejects_unknown_names() -> None:
    assert set(POLICIES) >= {"uniform", "uniform_floor", "segment_centre", "random", "dense_head", "fps", "nested"}
    with pytest.raises(KeyError, match="known: .*uniform"):
        get_policy("nope")
    with pytest.raises(KeyError, match="takes no parameter"):
        get_policy("uniform@3")
    with pytest.raises(KeyError, match="not a number"):
        get_policy("fps@fast")


def test_uniform_is_lmms_eval_linspace_rounded() -> None:
    assert idx("uniform", 10, 4) == [0, 3, 6, 9]
    assert idx("uniform", 100, 5) == [0, 25, 50, 74, 99]  # 24.75, 49.5 (half to even), 74.25
    assert idx("uniform", 3, 5) == [0, 0, 1, 2, 2]  # short video: repeats


def test_uniform_floor_is_lmms_evals_truncated_linspace() -> None:
    """lmms-eval's vllm wrapper: ``np.linspace(0, T - 1, N, dtype=int)``; it differs from `uniform` where a point's
    fraction is one half or more (100 frames at 5: 49.5 and 74.25 -> 49, 74; 64 frames at 3: 31.5 -> 31)."""
    assert idx("uniform_floor", 100, 5) == [0, 24, 49, 74, 99]  # 24.75 -> 24 (uniform: 25)
    assert idx("uniform_floor", 64, 3) == [0, 31, 63] != idx("uniform", 64, 3)
    assert idx("uniform_floor", 3, 5) == [0, 0, 1, 1, 2]  # short video: repeats
    for n_frames in (1, 2, 7, 64, 100, 1001):
        for budget in (1, 2, 3, 8, 16, 32):
            assert idx("uniform_floor", n_frames, budget) == np.linspace(0, n_frames - 1, budget, dtype=int).tolist()


def test_segment_centre() -> None:
    assert idx("segment_centre", 10, 4) == [1, 3, 6, 8]  # centres 1.25, 3.75, 6.25, 8.75
    assert idx("segment_centre", 100, 2) == [25, 75]


def test_random_is_seeded_sorted_and_distinct() -> None:
    a = idx("random", 100, 8, seed=3)
    assert a == sorted(np.random.default_rng(3).choice(100, size=8, replace=False).tolist())
    assert a == idx("random", 100, 8, seed=3)
    assert a != idx("random", 100, 8, seed=4)
    assert len(set(a)) == 8


def test_dense_head() -> None:
    assert idx("dense_head", 100, 4) == [0, 1, 2, 3]
    assert idx("dense_head@0.5", 100, 5) == [0, 12, 24, 37, 49]  # linspace(0, 49, 5) rounded
    with pytest.raises(ValueError):
        idx("dense_head@2", 100, 5)


def test_fixed_fps() -> None:
    assert idx("fps", 300, 64, fps=30) == list(range(0, 300, 30))  # 1 fps: 10 frames < budget
    assert idx("fps@2", 300, 64, fps=30) == list(range(0, 300, 15))
    # 20 frames at 2 fps exceed a budget of 8: 8 of them, spread as linspace(0, 19, 8) rounded
    assert idx("fps@2", 300, 8, fps=30) == [0, 45, 75, 120, 165, 210, 240, 285]
    # a rate above the video's own is every frame: the same plan as fps@30, and no array of
    # n_frames x rate / fps candidates (fps@3e9 would have asked for 3e10 of them)
    assert idx("fps@3e9", 3000, 16, fps=30) == idx("fps@30", 3000, 16, fps=30)
    assert idx("fps@1e7", 12, 64, fps=30) == list(range(12))


def test_nested_dyadic_order() -> None:
    assert dyadic_order(16)[:4].tolist() == [0, 8, 4, 12]
    assert dyadic_order(10)[:4].tolist() == [0, 5, 2, 7]  # floor(p * 10) for p = 0, 1/2, 1/4, 3/4
    for t in (7, 10, 100, 1800):
        assert sorted(dyadic_order(t).tolist()) == list(range(t))
    assert idx("nested", 16, 4) == [0, 4, 8, 12]
    assert idx("nested", 10, 4) == [0, 2, 5, 7]
    # at powers of two it is the segment-start grid floor(k T / N)
    assert idx("nested", 1000, 8) == [k * 1000 // 8 for k in range(8)]


@pytest.mark.parametrize("n_frames", [37, 100, 1800])
def test_nested_smaller_budgets_are_subsets_of_larger(n_frames: int) -> None:
    budgets = [1, 3, 16, 32, 50, 64, 128, 256]
    sets = [set(idx("nested", n_frames, min(b, n_frames))) for b in budgets]
    for small, large in pairwise(sets):
        assert small <= large
    assert all(len(s) == min(b, n_frames) for s, b in zip(sets, budgets))


def test_nested_with_largest_budget_is_uniform_at_the_top() -> None:
    assert idx("nested@8", 100, 8) == idx("uniform", 100, 8) == [0, 14, 28, 42, 57, 71, 85, 99]
    assert idx("nested@8", 100, 2) == [0, 57]  # uniform-8 positions 0 and 4
    top = set(idx("nested@256", 1800, 256))
    assert set(idx("nested@256", 1800, 64)) <= top
    with pytest.raises(ValueError, match="exceeds"):
        idx("nested@8", 100, 16)


def test_plan_records_repeats_and_caps_on_short_videos() -> None:
    rep = plan_budget(BudgetPoint(frames=8), 5, 24.0)
    assert rep.indices.tolist() == [0, 1, 1, 2, 2, 3, 3, 4]
    assert rep.repeated and rep.short and not rep.capped and rep.requested == 8 and rep.short_video == "repeat"
    cap = plan_budget(BudgetPoint(frames=8, policy="random"), 5, 24.0)
    assert cap.indices.tolist() == [0, 1, 2, 3, 4]
    assert cap.capped and cap.short and not cap.repeated and cap.short_video == "cap"
    full = plan_budget(BudgetPoint(frames=4, policy="nested"), 100, 24.0)
    assert not (full.repeated or full.capped or full.short)


def test_plan_text_only_and_union() -> None:
    text = plan_budget(BudgetPoint(frames=0), 100, 30.0)
    assert text.indices.size == 0 and not text.capped
    plans = [plan_budget(BudgetPoint(frames=n), 100, 30.0) for n in (2, 4)]
    assert union_indices(plans).tolist() == [0, 33, 66, 99]
    assert union_indices([text]).size == 0
    assert FramePlan(np.arange(3), 3, False).unique.tolist() == [0, 1, 2]  # the old constructor still works


def test_plan_uses_param_policies_through_the_budget() -> None:
    b = BudgetPoint(frames=8, policy="fps@2")
    assert b.budget_id == "f8-fps@2"
    assert plan_budget(b, 300, 30.0).indices.tolist() == [0, 45, 75, 120, 165, 210, 240, 285]
