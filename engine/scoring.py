"""Scoring: option-letter probabilities, official letter extraction, token-F1."""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "VIDEOMME_V2_PREFIXES",
    "LetterScore",
    "extract_letter_videomme",
    "extract_letter_videomme_strict",
    "normalize_answer",
    "score_letters",
    "token_f1",
]


@dataclass(frozen=True)
class LetterScore:
    """The option distribution read from the engine's first-token logprobs."""

    probs: list[float | None]
    """Probability per option letter, renormalised over the letters returned; None where not returned."""
    pred: str | None
    confidence: float | None


def score_letters(letters: list[str], logprobs: dict[str, float]) -> LetterScore:
    """Renormalise the returned letters' probabilities; prediction = argmax; confidence = its probability.

    A letter the engine did not return stays missing (None): it is never guessed.
    """
    present = [(x, logprobs[x]) for x in letters if x in logprobs and math.isfinite(logprobs[x])]
    if not present:
        return LetterScore([None] * len(letters), None, None)
    top = max(lp for _, lp in present)
    z = sum(math.exp(lp - top) for _, lp in present)
    p = {x: math.exp(lp - top) / z for x, lp in present}
    pred = max(present, key=lambda t: (t[1], -letters.index(t[0])))[0]
    return LetterScore([p.get(x) for x in letters], pred, p[pred])


_VIDEOMME_PREFIXES = [
    "The best answer is",
    "The correct answer is",
    "The answer is",
    "The answer",
    # The official list glues the next four into two strings (missing commas), so they never match.
    "The best option isThe correct option is",
    "Best answer:Best option:",
]


VIDEOMME_V2_PREFIXES = ["Final Answer:", "Answer:", "Option:", *_VIDEOMME_PREFIXES]
"""Video-MME v2 also strips these (first, so "Final" never leaves its capital F behind)."""


def extract_letter_videomme(response: str, letters: str = "ABCD", *, prefixes: Sequence[str] | None = None) -> str:
    """Video-MME's official `extract_characters_regex`, reproduced exactly (quirks included).

    `prefixes` replaces the list of removed answer prefixes (Video-MME v2 passes `VIDEOMME_V2_PREFIXES`).
    """
    s = response.strip()
    for prefix in _VIDEOMME_PREFIXES if prefixes is None else prefixes:
        s = s.replace(prefix, "")
    if len(s.split()) > 10 and not re.search(f"[{letters}]", s):
        return ""
    m = re.search(f"[{letters}]", s)
    return m[0] if m else ""


def extract_letter_videomme_strict(response: str, letters: str = "ABCD") -> str:
    """A corrected, stricter reading of an MCQ answer (not the official rule; reported beside it).

    In order: a letter named by an answer phrase ("The best option is B", "Answer: (C)", "Final
    answer: D"); else a letter standing alone at the start ("C", "(C) text", "C. text"); else the only
    option letter that stands as a word anywhere; else empty. Unlike the official rule, a capital
    inside a word ("Answer", "Based") or a leading article ("A man ...") followed by an explicit
    answer is never read as option A, and two different letters without an answer phrase are empty.
    """
    s = response.strip()
    named = re.search(rf"(?i:answer|option)(?:\s+(?i:is))?\s*:?\s*\(?([{letters}])\)?(?![A-Za-z])", s)
    if named:
        return named[1]
    head = re.match(rf"^[\s*_]*\(?([{letters}])(?:[).:,]|\s|$)", s)
    if head:
        return head[1]
    found = set(re.findall(rf"(?<![A-Za-z])\(?([{letters}])\)?(?![A-Za-z])", s))
    return found.pop() if len(found) == 1 else ""


_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD v1.1 `normalize_answer`: lowercase, drop ASCII punctuation, drop a/an/the, collapse spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(prediction: str, references: list[str] | tuple[str, ...], *, empty_match: bool = False) -> float:
    """SQuAD token-F1 of `prediction`, the max over `references` (0.0 when there are none).

    SQuAD v1.1 semantics by default: tokens after `normalize_answer`, multiset overlap,
    F1 = 2PR/(P+R), 0 when nothing is in common (so an empty side scores 0).
    `empty_match=True` adds SQuAD v2's rule: when either side normalises to nothing,
    the score is 1.0 if both do, else 0.0.
    """
    pred = normalize_answer(prediction).split()
    best = 0.0
    for ref in references:
        gold = normalize_answer(ref).split()
        if empty_match and (not pred or not gold):
            best = max(best, float(pred == gold))
            continue
        same = sum((Counter(pred) & Counter(gold)).values())
        if same == 0:
            continue
        p, r = same / len(pred), same / len(gold)
        best = max(best, 2 * p * r / (p + r))
    return best
