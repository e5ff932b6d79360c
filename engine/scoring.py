"""Scoring: option-letter probabilities, official letter extraction, token-F1."""

from __future__ import annotations

import math
import numbers
import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "EXTRACTION_RULES",
    "LOGPROB_TOLERANCE",
    "VIDEOMME_V2_PREFIXES",
    "AbsurdLogprob",
    "ExtractionRule",
    "LetterScore",
    "checked_logprob",
    "extract_letter",
    "extract_letter_lmms_eval",
    "extract_letter_videomme",
    "extract_letter_videomme_strict",
    "letter_logprobs",
    "normalize_answer",
    "score_at_answer",
    "score_letters",
    "spelled_letter",
    "token_f1",
]


LOGPROB_TOLERANCE = 1e-4
"""How far above 0 a log-probability may lie and still be read as 0 (float rounding of a probability near 1)."""


class AbsurdLogprob(ValueError):
    """A log-probability no engine can mean: not a number, NaN, +inf, or above 0 beyond `LOGPROB_TOLERANCE`."""


def checked_logprob(value: object, what: str) -> float:
    """`value` read as a log-probability: a real number <= 0 (-inf is probability 0; up to `LOGPROB_TOLERANCE`
    above 0 is float rounding, read as 0).

    Args:
        value: What the engine or server gave.
        what: What it is the log-probability of, for the message (e.g. "option letter 'B'").

    Raises:
        AbsurdLogprob: Anything else (a string, NaN, +inf, 800.0, 1e308), naming `what` and the value.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise AbsurdLogprob(f"{what}: log-probability {repr(value)[:80]} is not a number")
    try:
        v = float(value)
    except OverflowError:  # an integer too large for a float
        v = math.inf
    if math.isnan(v) or v > LOGPROB_TOLERANCE:
        raise AbsurdLogprob(f"{what}: log-probability {repr(value)[:80]} is impossible (a log-probability is a "
                            "number <= 0)")
    return min(v, 0.0)


@dataclass(frozen=True)
class LetterScore:
    """The option distribution read from the engine's first-token logprobs."""

    probs: list[float | None]
    """Probability per option letter (see `score_letters`); None where the engine returned none."""
    pred: str | None
    confidence: float | None
    returned: int = 0
    """How many of the option letters had a (finite) log-probability."""


def score_letters(letters: list[str], logprobs: dict[str, float]) -> LetterScore:
    """The option distribution: prediction = the most probable returned letter; confidence = its probability.

    With every letter returned, their probabilities are renormalised over the letters (they sum to
    1). With only some returned, each keeps the probability the engine gave it, not renormalised:
    renormalising over the letters that happen to be there would overstate them (one letter returned
    would get 1.0), while the missing letters' unknown mass can only lower the true renormalised
    value, so the confidence is then a lower bound of it. A letter the engine did not return (or
    returned at -inf) stays missing (None): it is never guessed.

    Raises:
        AbsurdLogprob: A letter's log-probability is no log-probability (`checked_logprob`): the reply
            is unreadable, and its row an error.
    """
    checked = [(x, checked_logprob(logprobs[x], f"option letter {x!r}")) for x in letters if x in logprobs]
    present = [(x, lp) for x, lp in checked if math.isfinite(lp)]
    if not present:
        return LetterScore([None] * len(letters), None, None, 0)
    if len(present) == len(letters):
        top = max(lp for _, lp in present)
        z = sum(math.exp(lp - top) for _, lp in present)
        p = {x: math.exp(lp - top) / z for x, lp in present}
    else:
        p = {x: min(1.0, math.exp(lp)) for x, lp in present}
    pred = max(present, key=lambda t: (t[1], -letters.index(t[0])))[0]
    return LetterScore([p.get(x) for x in letters], pred, p[pred], len(present))


_TOKEN_WRAP = " \t\r\n()[]*_.:,;\"'`"


def spelled_letter(token: str, letters: Sequence[str]) -> str | None:
    """The option letter a generated token spells on its own ("C", " C", "(C", "C."), else None."""
    t = token.strip(_TOKEN_WRAP)
    return t if t in letters else None


def letter_logprobs(alternatives: Iterable[tuple[str, float | None]], letters: Sequence[str]) -> dict[str, float]:
    """Log-probabilities of the option letters among one position's returned tokens.

    Tokens spelling the same letter (" C", "C") are pooled (their probabilities add); letters
    not returned (or returned at -inf) are absent.

    Raises:
        AbsurdLogprob: A letter token's log-probability is no log-probability (`checked_logprob`).
    """
    out: dict[str, float] = {}
    for token, raw in alternatives:
        x = spelled_letter(token, letters)
        if x is None or raw is None:
            continue
        lp = checked_logprob(raw, f"token {token!r} (option letter {x!r})")
        if not math.isfinite(lp):
            continue
        out[x] = lp if x not in out else max(out[x], lp) + math.log1p(math.exp(-abs(out[x] - lp)))
    return out


def score_at_answer(letters: list[str], pred: str | None,
                    positions: Sequence[tuple[str, dict[str, float]]] | None,
                    text: str | None = None, read: Callable[[str], str | None] | None = None) -> LetterScore | None:
    """The option distribution at the answer position of a generated text (generate scoring).

    The answer position is the generated token that spells the extracted letter `pred` on its
    own (`spelled_letter`) where the extraction rule read it: given the text and the rule
    (`read`: text -> letter), among several tokens spelling `pred` it is the one whose letter,
    masked, changes what the rule reads ("B or C? The answer is C." read by an answer-phrase
    rule: the second "C"); otherwise, or when the tokens do not spell the text, the first such
    token. The letters returned there are scored as `score_letters` does (renormalised only when
    every letter is there) and the confidence is the probability of `pred` (not of the most
    probable letter), null when `pred` was not among them. None when no letter was extracted or no token
    spells it (e.g. the official rule read the "A" of "Answer").

    Args:
        letters: The item's option letters.
        pred: The extracted letter.
        positions: Per generated token: its text and the letters' log-probabilities there.
        text: The generated text (the tokens' texts joined).
        read: The extraction rule that gave `pred`.
    """
    if pred is None or not positions:
        return None
    spelling = [k for k, (token, _) in enumerate(positions) if spelled_letter(token, letters) == pred]
    if not spelling:
        return None
    k = _read_at(spelling, positions, pred, text, read)
    ls = score_letters(letters, positions[k][1])
    conf = ls.probs[letters.index(pred)] if pred in letters else None
    return LetterScore(ls.probs, pred, conf, ls.returned)


def _read_at(spelling: list[int], positions: Sequence[tuple[str, dict[str, float]]], pred: str,
             text: str | None, read: Callable[[str], str | None] | None) -> int:
    """Which of the tokens `spelling` (each spells `pred`) the rule `read` took its letter from."""
    tokens = [token for token, _ in positions]
    if len(spelling) == 1 or read is None or text is None or "".join(tokens) != text:
        return spelling[0]
    starts = [0]
    for token in tokens:
        starts.append(starts[-1] + len(token))
    for k in spelling:
        at = starts[k] + tokens[k].index(pred)
        if read(text[:at] + "#" + text[at + 1:]) != pred:
            return k
    return spelling[0]


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


# lmms-eval 0.7.x `extract_mcq_answer` (lmms_eval/tasks/_task_utils/mcq_extract.py): candidates in several
# formats, each with a priority; the highest priority wins, then the latest position in the text.
_LMMS_PHRASES = (
    "the answer is", "answer is", "the correct answer is", "correct answer is", "the best answer is",
    "best answer is", "the correct option is", "correct option is", "the best option is", "best option is",
    "the choice is", "choice is", "the correct choice is", "correct choice is", "i choose", "i select", "i pick",
    "my answer is", "my choice is", "옵션", "정답은", "답은", "답:", "答案是", "答案为", "选", "答えは",
)
_LMMS_FORMATS = (("({})", 6), ("{}.", 5), ("{}:", 4), ("{})", 3), ("{} ", 2))  # parentheses .. space
_LMMS_START, _LMMS_END, _LMMS_PHRASE, _LMMS_FALLBACK = 10, 9, 7, 0


def extract_letter_lmms_eval(response: str, letters: str = "ABCDEFGH") -> str:
    """lmms-eval 0.7.x's `extract_mcq_answer`, reproduced (so sweeps compare item by item with its logs).

    The response is stripped, then stripped of , . ! ? ; : ' " at both ends (one character kind
    after the other) and padded with a space on each side. Candidates, by priority: the text
    starts with a letter not followed by a letter (10); ends with one not preceded by a letter
    (9); the first occurrence of a letter anywhere after an answer phrase ("the answer is", "i
    pick", ...; case-insensitive phrase, case-sensitive letter) (7); the last "(X)" (6), "X." (5),
    "X:" (4), "X)" (3), "X " (2); only when there is none, the last occurrence of a letter
    anywhere, even inside a word (0). The highest priority wins, then the later position. So
    "Answer: C" gives C, "Best answer: D" gives D and "I think it is option B, not C" gives C.
    """
    if not response or not response.strip():
        return ""
    text = response.strip()
    for ch in ",.!?;:'\"":
        text = text.strip(ch)
    text = f" {text} "
    found: list[tuple[int, int, str]] = []  # (priority, position, letter)
    for fmt, priority in _LMMS_FORMATS:
        found += [(priority, text.rfind(fmt.format(x)), x) for x in letters if fmt.format(x) in text]
    low = text.lower()
    for phrase in _LMMS_PHRASES:
        at = low.find(phrase)
        if at >= 0:
            found += [(_LMMS_PHRASE, text.find(x, at + len(phrase)), x) for x in letters
                      if text.find(x, at + len(phrase)) >= 0]
    core = text.strip()
    found += [(_LMMS_START, 0, x) for x in letters if core.startswith(x) and (len(core) == 1 or not core[1].isalpha())]
    found += [(_LMMS_END, len(text) - 1, x) for x in letters
              if core.endswith(x) and (len(core) == 1 or not core[-2].isalpha())]
    if not found:
        found = [(_LMMS_FALLBACK, text.rfind(x), x) for x in letters if x in text]
    return max(found)[2] if found else ""


ExtractionRule = Literal["official", "strict", "lmms_eval"]
EXTRACTION_RULES: tuple[str, ...] = ("official", "strict", "lmms_eval")


def extract_letter(response: str, letters: str, rule: ExtractionRule = "official") -> str:
    """An option letter read from `response` by a named rule ("" when none is found).

    official: Video-MME's `extract_characters_regex` (quirks included; the default rule of
    benchmarks without their own); strict: `extract_letter_videomme_strict`; lmms_eval:
    `extract_letter_lmms_eval`.
    """
    if rule == "official":
        return extract_letter_videomme(response, letters)
    if rule == "strict":
        return extract_letter_videomme_strict(response, letters)
    if rule == "lmms_eval":
        return extract_letter_lmms_eval(response, letters)
    raise ValueError(f"unknown extraction rule {rule!r}; known: {', '.join(EXTRACTION_RULES)}")


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
