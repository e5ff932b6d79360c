"""Parsing a predictor's free-text answer into one of the grid's frame budgets."""

from __future__ import annotations

import pytest

from engine.adaptive.predictions import PARSE_KINDS, parse_frame_count

GRID = [16, 32, 64, 128]
WITH_TEXT = [0, 16, 32, 64, 128]


@pytest.mark.parametrize(("raw", "expected"), [
    # numbers in digits
    ("32", (32, "exact")),
    ("  32\n", (32, "exact")),
    ("32 frames", (32, "exact")),
    ("32.", (32, "exact")),
    ("32frames", (32, "exact")),
    ("a 64-frame budget", (64, "exact")),
    ("I need 128 frames.", (128, "exact")),
    ("Frames: 16", (16, "exact")),
    ("32.0 frames", (32, "exact")),
    ("32 frames should do; 32 frames is enough", (32, "exact")),
    ("I need about 40 frames", (32, "snapped")),
    ("48", (32, "snapped")),  # a tie goes to the cheaper budget
    ("96 frames", (64, "snapped")),
    ("100", (128, "snapped")),
    ("5 frames", (16, "snapped")),
    ("1 frame", (16, "snapped")),
    ("10000 frames", (128, "snapped")),
    ("33.5", (32, "snapped")),
    ("32 or 33 frames", (32, "snapped")),  # different numbers, one budget
    # numbers followed by "frames" win over other numbers; numbers glued to words are no counts
    ("The clip is 120 seconds long, so 32 frames", (32, "exact")),
    ("A 1080p video: 16 frames", (16, "exact")),
    ("Qwen2.5 would want 64 uniformly sampled frames", (64, "exact")),
    ("1. I think 32 frames", (32, "exact")),
    ("16 frames, not 32", (16, "exact")),
    # option letters (A.. in the order of `allowed`); the letter wins over a number beside it
    ("B", (32, "letter")),
    ("b", (32, "letter")),
    ("(B)", (32, "letter")),
    ("[C]", (64, "letter")),
    ("B.", (32, "letter")),
    ("B. 32 frames", (32, "letter")),
    ("B) 32 frames", (32, "letter")),
    ("D: 128 frames", (128, "letter")),
    ("B. 64 frames", (32, "letter")),
    ("Answer: C", (64, "letter")),
    ("The answer is (A).", (16, "letter")),
    ("Option D", (128, "letter")),
    # numbers in words
    ("thirty-two", (32, "word")),
    ("Thirty two frames", (32, "word")),
    ("sixteen", (16, "word")),
    ("sixty four frames please", (64, "word")),
    ("one hundred and twenty-eight frames", (128, "word")),
    ("a hundred frames", (128, "word")),
    ("forty", (32, "word")),
    # zero without a text-only budget: the cheapest budget
    ("0", (16, "snapped")),
    ("none", (16, "snapped")),
    ("text only", (16, "snapped")),
    # nothing usable
    ("", (None, "unparsed: empty answer")),
    ("   ", (None, "unparsed: empty answer")),
    ("I don't know", (None, "unparsed: no frame count found")),
    ("many frames", (None, "unparsed: no frame count found")),
    ("4k", (None, "unparsed: no frame count found")),
    ("E", (None, "unparsed: letter E is not an option (A-D)")),
    ("(F) 32 frames", (None, "unparsed: letter F is not an option (A-D)")),
    ("32 or 64 frames", (None, "unparsed: ambiguous (32, 64)")),
    ("between 16 and 128 frames", (None, "unparsed: ambiguous (16, 128)")),
    ("sixteen or thirty-two frames", (None, "unparsed: ambiguous (16, 32)")),
    ("16 32", (None, "unparsed: ambiguous (16, 32)")),
])
def test_parse_on_a_visual_grid(raw: str, expected: tuple[int | None, str]) -> None:
    assert parse_frame_count(raw, GRID) == expected


@pytest.mark.parametrize(("raw", "expected"), [
    ("0", (0, "text_only")),
    ("0 frames", (0, "text_only")),
    ("zero", (0, "text_only")),
    ("None.", (0, "text_only")),
    ("no frames", (0, "text_only")),
    ("No video frames are needed", (0, "text_only")),
    ("text only", (0, "text_only")),
    ("Text-only.", (0, "text_only")),
    ("I can answer without the video", (0, "text_only")),
    ("no frames needed; 32 frames would not help", (32, "exact")),  # a number beats a phrase
    ("A", (0, "letter")),
    ("B", (16, "letter")),
    ("E. 128 frames", (128, "letter")),
    ("F", (None, "unparsed: letter F is not an option (A-E)")),
    ("5 frames", (16, "snapped")),  # a positive request never snaps to text-only
    ("0 or 16 frames", (None, "unparsed: ambiguous (0, 16)")),
])
def test_parse_with_a_text_only_budget(raw: str, expected: tuple[int | None, str]) -> None:
    assert parse_frame_count(raw, WITH_TEXT) == expected


def test_letters_follow_the_order_presented() -> None:
    assert parse_frame_count("A", [128, 64, 32]) == (128, "letter")
    assert parse_frame_count("C", [128, 64, 32]) == (32, "letter")
    assert parse_frame_count("40", [128, 64, 32]) == (32, "snapped")


def test_statuses_are_the_documented_kinds() -> None:
    answers = ["32", "40", "B", "sixteen", "none", "??"]
    kinds = [parse_frame_count(a, WITH_TEXT)[1].split(":")[0] for a in answers]
    assert kinds == ["exact", "snapped", "letter", "word", "text_only", "unparsed"]
    assert {*kinds, "choice"} == set(PARSE_KINDS)  # choice: an answer held to the options, never parsed


def test_none_answer_and_bad_grids() -> None:
    assert parse_frame_count(None, GRID) == (None, "unparsed: empty answer")
    with pytest.raises(ValueError, match="non-empty"):
        parse_frame_count("32", [])
    with pytest.raises(ValueError, match=">= 0"):
        parse_frame_count("32", [-1, 16])
