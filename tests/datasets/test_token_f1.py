"""Token-F1 with SQuAD v1.1 normalisation, max over references, and SQuAD v2's empty rule."""

from __future__ import annotations

import pytest

from engine.scoring import normalize_answer, token_f1


def test_normalize() -> None:
    assert normalize_answer("The  Cat's, an APPLE!") == "cats apple"
    assert normalize_answer("a") == ""
    assert normalize_answer("theatre anthem") == "theatre anthem"  # articles only as whole words


def test_f1_by_hand() -> None:
    # pred [cat, sat], gold [cat, sat, on, mat]: P 1, R 1/2 -> 2/3
    assert token_f1("The cat sat.", ["a cat sat on the mat"]) == pytest.approx(2 / 3)
    # multiset overlap: pred [a a b] -> [b] after dropping "a"; use other words
    assert token_f1("dog dog cat", ["dog cat cat"]) == pytest.approx(2 / 3)  # common {dog, cat}: P 2/3, R 2/3
    assert token_f1("nothing shared", ["entirely different"]) == 0.0


def test_max_over_references_and_empty() -> None:
    assert token_f1("red car", ["blue car", "red car"]) == 1.0
    assert token_f1("red car", []) == 0.0
    assert token_f1("", [""]) == 0.0                      # SQuAD v1.1: nothing in common
    assert token_f1("", [""], empty_match=True) == 1.0    # SQuAD v2: both empty
    assert token_f1("the", ["a"], empty_match=True) == 1.0
    assert token_f1("", ["car"], empty_match=True) == 0.0
    assert token_f1("car", ["", "car"], empty_match=True) == 1.0
