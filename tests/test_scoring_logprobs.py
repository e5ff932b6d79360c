"""A log-probability that is no log-probability (positive, NaN, +inf, 1e308, not a number) is refused by the scorer,
naming the letter and the value, instead of overflowing (`score_letters(list("ABCD"), {"B": 800.0})` raised
OverflowError and ended the run) or passing as a confident `ok` row."""

from __future__ import annotations

import math

import pytest

from engine.scoring import (
    LOGPROB_TOLERANCE,
    AbsurdLogprob,
    checked_logprob,
    letter_logprobs,
    score_at_answer,
    score_letters,
)

ABSURD = [800.0, 710.0, 1e308, math.inf, math.nan, 0.01, "-0.5", {}, [], True, 10**400]


@pytest.mark.parametrize("value", ABSURD, ids=repr)
def test_an_absurd_letter_logprob_is_refused_naming_the_letter(value: object) -> None:
    with pytest.raises(AbsurdLogprob, match=r"option letter 'B': log-probability .* (is impossible|is not a number)"):
        score_letters(list("ABCD"), {"B": value})  # type: ignore[dict-item]


@pytest.mark.parametrize("value", [800.0, 1e308, math.nan])
def test_an_absurd_value_beside_every_other_letter_is_refused_too(value: float) -> None:
    """With every letter returned, 1e308 renormalised to a confidence of 1.0 and NaN was dropped: both silent."""
    with pytest.raises(AbsurdLogprob, match="option letter 'C'"):
        score_letters(list("ABCD"), {"A": -1.0, "B": -2.0, "C": value, "D": -3.0})


def test_valid_logprobs_score_as_before() -> None:
    """Hand-computed: B alone at -0.5 keeps exp(-0.5); a rounding above 0 within the tolerance is 0 (p = 1); -inf is
    a letter not returned."""
    one = score_letters(list("ABCD"), {"B": -0.5})
    assert (one.pred, one.returned) == ("B", 1) and one.confidence == pytest.approx(math.exp(-0.5))
    rounded = score_letters(list("AB"), {"A": LOGPROB_TOLERANCE / 2, "B": -math.inf})
    assert (rounded.pred, rounded.probs, rounded.returned) == ("A", [1.0, None], 1)
    assert checked_logprob(-0.0, "x") == 0.0 and checked_logprob(-math.inf, "x") == -math.inf


def test_generate_mode_letter_tokens_are_checked() -> None:
    """The answer position's letters (generate scoring) go through the same check."""
    with pytest.raises(AbsurdLogprob, match=r"token ' B' \(option letter 'B'\)"):
        letter_logprobs([(" B", 800.0), ("C", -1.0)], "ABCD")
    assert letter_logprobs([("Hello", 800.0), ("C", -1.0)], "ABCD") == {"C": -1.0}  # not a letter: not read
    with pytest.raises(AbsurdLogprob, match="option letter 'B'"):
        score_at_answer(list("ABCD"), "B", [("B", {"B": 5.0})])
