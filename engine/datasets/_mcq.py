"""Multiple-choice helpers shared by adapters: lettered options, text answers to letters, yes/no."""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.datasets.errors import RowError
from engine.items import option_letters

__all__ = ["MAX_OPTIONS", "answer_letter", "check_option_count", "lettered_options", "paren_block", "yes_no_answer"]

_LABEL = re.compile(r"^\s*\(?([A-Z])[.:)]\s?(.*)$", re.DOTALL)

MAX_OPTIONS = 26
"""Options are named by the letters A-Z: a question with more cannot be asked (a 27th would be '[')."""


def check_option_count(options: Sequence[object], field: str = "options", max_options: int = MAX_OPTIONS) -> None:
    """A row problem unless there are 2 to `max_options` options (at most the 26 letters that name them)."""
    if len(options) < 2:
        raise RowError(f"{field}: expected at least 2 options, got {len(options)}")
    if len(options) > max_options:
        more = " (the letters A-Z)" if max_options == MAX_OPTIONS else ""
        raise RowError(f"{field}: expected at most {max_options} options{more}, got {len(options)}")


def lettered_options(options: Sequence[str], field: str = "options", max_options: int = MAX_OPTIONS) -> tuple[str, ...]:
    """Option texts without their "A. " labels; labels, when present, must run A, B, C, ... in order."""
    check_option_count(options, field, max_options)
    texts = []
    for letter, opt in zip(option_letters(len(options)), options, strict=True):
        m = _LABEL.match(opt)
        if m is None:
            texts.append(opt.strip())
            continue
        if m[1] != letter:
            raise RowError(f"{field}: option {letter} is labelled {m[1]!r} ({opt[:40]!r})")
        texts.append(m[2].strip())
    return tuple(texts)


def answer_letter(answer: str, candidates: Sequence[str], field: str = "answer") -> str:
    """The letter of the candidate whose text is `answer` (MLVU and MVBench give the text)."""
    try:
        return option_letters(len(candidates))[list(candidates).index(answer)]
    except ValueError:
        raise RowError(f"{field} {answer[:60]!r} is not one of the candidates") from None


def paren_block(question: str, candidates: Sequence[str]) -> str:
    """``Question: q\\nOptions:\\n(A) c0\\n(B) c1`` (MLVU's and MVBench's `qa_template`, rstripped)."""
    lines = [f"Question: {question}", "Options:"]
    lines += [f"({letter}) {c}" for letter, c in zip(option_letters(len(candidates)), candidates, strict=True)]
    return "\n".join(lines).rstrip()


def yes_no_answer(answer: str, field: str = "answer") -> str:
    """A yes/no label, lowercased; anything else is a row problem."""
    a = answer.strip().lower()
    if a not in ("yes", "no"):
        raise RowError(f"{field}: expected yes or no, got {answer[:40]!r}")
    return a
