"""Scoring: option-letter probabilities, official letter extraction, token-F1."""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from dataclasses import dataclass

__all__ = ["LetterScore", "extract_letter_videomme", "score_letters", "token_f1"]


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


def extract_letter_videomme(response: str, letters: str = "ABCD") -> str:
    """Video-MME's official `extract_characters_regex`, reproduced exactly (quirks included)."""
    s = response.strip()
    for prefix in _VIDEOMME_PREFIXES:
        s = s.replace(prefix, "")
    if len(s.split()) > 10 and not re.search(f"[{letters}]", s):
        return ""
    m = re.search(f"[{letters}]", s)
    return m[0] if m else ""


def _normalize(text: str) -> str:
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def token_f1(prediction: str, references: list[str] | tuple[str, ...]) -> float:
    """SQuAD v1.1 token-F1, max over references (0 when nothing is in common)."""
    pred = _normalize(prediction).split()
    best = 0.0
    for ref in references:
        gold = _normalize(ref).split()
        common = Counter(pred) & Counter(gold)
        same = sum(common.values())
        if same == 0:
            continue
        p, r = same / len(pred), same / len(gold)
        best = max(best, 2 * p * r / (p + r))
    return best
