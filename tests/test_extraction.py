"""MCQ extraction rules (official, strict, lmms_eval) on vectors from the rules' own sources, the spec's
`prompt.extraction`, and generate-mode confidence: the probability of the *extracted* letter where it is said.

Vector sources:
- official: Video-MME's `extract_characters_regex` (quirks: the capital A of "Answer", the glued prefixes
  "Best answer:Best option:" that never match, so "Best answer: D" reads B);
- strict: the examples of `extract_letter_videomme_strict`'s docstring;
- lmms_eval: lmms-eval 0.7.x `extract_mcq_answer`'s docstring example and its tests of standard formats
  (test_mcq_extract.py: "B", "The correct answer is (B).", "Answer: A", "I pick C and stop", "The best
  option is B)", "A. because ...", "(A) because ...", "Option A is correct"); its priority ranking makes
  "Answer: C" C, "Best answer: D" D and "I think it is option B, not C" C (the standalone final letter).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from helpers.specs import small_spec_dict

from engine.backends.base import EngineRequest, EngineResult
from engine.config import BudgetPoint, SpecError, parse_spec
from engine.items import Item, Job
from engine.scoring import extract_letter, letter_logprobs, score_at_answer
from engine.sweep.rows import JobContext, scored_row

# response, official, strict, lmms_eval (letters A-D)
VECTORS = [
    ("Answer: C", "A", "C", "C"),
    ("Best answer: D", "B", "D", "D"),
    ("I think it is option B, not C", "B", "B", "C"),
    ("The best answer is C.", "C", "C", "C"),
    ("The correct answer is (B).", "B", "B", "B"),
    ("B", "B", "B", "B"),
    ("Answer: A", "A", "A", "A"),
    ("I pick C and stop", "C", "C", "C"),
    ("The best option is B)", "B", "B", "B"),
    ("Option A is correct", "A", "A", "A"),
    ("Answer: (C)", "A", "C", "C"),
    ("Final answer: D", "D", "D", "D"),
    ("(C) text", "C", "C", "C"),
    ("C. text", "C", "C", "C"),
    ("no letters here", "", "", ""),
    ("", "", "", ""),
    ("there is no letter in this rather long reply with many many words", "", "", ""),
]


@pytest.mark.parametrize(("response", "official", "strict", "lmms"), VECTORS)
def test_three_rules(response: str, official: str, strict: str, lmms: str) -> None:
    assert extract_letter(response, "ABCD", "official") == official
    assert extract_letter(response, "ABCD", "strict") == strict
    assert extract_letter(response, "ABCD", "lmms_eval") == lmms


def test_lmms_eval_rule_details() -> None:
    # two-option label with a justification (lmms-eval's own test, choices ["A", "B"])
    assert extract_letter("A. because it handles text better", "AB", "lmms_eval") == "A"
    assert extract_letter("(A) because it handles text better", "AB", "lmms_eval") == "A"
    # 0.7.x letters are case-sensitive: a lowercase answer is no candidate (fixed after 0.7 upstream)
    assert extract_letter("the answer is b", "ABCD", "lmms_eval") == ""
    # with no formatted candidate, the last occurrence anywhere, even inside a word
    assert extract_letter("CAT", "ABCD", "lmms_eval") == "A"
    with pytest.raises(ValueError, match="known: official, strict, lmms_eval"):
        extract_letter("A", "ABCD", "nope")  # type: ignore[arg-type]


def test_spec_extraction_field(tmp_path: Path) -> None:
    spec = parse_spec(small_spec_dict(tmp_path, prompt={"scoring": "generate", "extraction": "lmms_eval"}))
    assert spec.prompt.extraction == "lmms_eval"
    assert parse_spec(small_spec_dict(tmp_path)).prompt.extraction == "official"
    with pytest.raises(SpecError, match="prompt.extraction"):
        parse_spec(small_spec_dict(tmp_path, prompt={"extraction": "loose"}))


ITEM = Item(dataset="d", dataset_version="1", item_id="q1", video_id="v", video_path=None, question="Q?",
            options=("w", "x", "y", "z"), answer="C")


def _row(tmp_path: Path, text: str, positions: list, extraction: str = "official"):  # type: ignore[no-untyped-def]
    spec = parse_spec(small_spec_dict(tmp_path, prompt={"scoring": "generate", "extraction": extraction}))
    req = EngineRequest(request_id="r", prompt="p", letters=list("ABCD"), mode="generate")
    ctx = JobContext(job=Job("tiny", ITEM, BudgetPoint(frames=0)), model_family="qwen2_5_vl",
                     indices=np.zeros(0, dtype=np.int64), width=None, height=None, decoder=None, decode_s=None,
                     attempt=1, request=req)
    res = EngineResult("r", text=text, letter_logprobs={"I": -0.1}, token_letters=positions)

    def official(item: Item, response: str):  # type: ignore[no-untyped-def]
        from engine.datasets._base import default_score

        return default_score(item, response)

    return scored_row(spec, ctx, res, official)


def _lp(**p: float) -> dict[str, float]:
    return {k: math.log(v) for k, v in p.items()}


def test_generate_confidence_is_the_extracted_letters_at_its_position(tmp_path: Path) -> None:
    # "I think C": the first token is no letter; C is said at token 3, where C has .6 (D not returned: the
    # letters keep their probabilities, not renormalised over the three, which would overstate C as .75)
    positions = [("I", {}), (" think", _lp(A=0.05)), (" C", _lp(A=0.1, B=0.1, C=0.6))]
    row = _row(tmp_path, "I think C", positions)
    assert (row.pred, row.correct, row.pred_extracted, row.letters_returned) == ("C", True, "C", 3)
    assert row.confidence == pytest.approx(0.6)
    assert row.option_probs[:3] == pytest.approx([0.1, 0.1, 0.6]) and row.option_probs[3] is None
    # every letter returned: renormalised over the letters
    row = _row(tmp_path, "I think C", [*positions[:2], (" C", _lp(A=0.1, B=0.1, C=0.6, D=0.2))])
    assert row.confidence == pytest.approx(0.6) and row.letters_returned == 4
    row = _row(tmp_path, "I think C", [*positions[:2], (" C", _lp(A=0.05, B=0.05, C=0.3, D=0.1))])
    assert row.confidence == pytest.approx(0.6) and sum(row.option_probs) == pytest.approx(1.0)


def test_generate_confidence_follows_the_rule_and_is_null_without_a_letter(tmp_path: Path) -> None:
    positions = [("Answer", _lp(A=0.01)), (":", {}), (" C", _lp(C=0.5, D=0.5))]
    # official reads the "A" of "Answer": no token says A alone, so no answer position and no confidence
    row = _row(tmp_path, "Answer: C", positions)
    assert (row.pred, row.confidence, row.option_probs) == ("A", None, None)
    # lmms_eval reads C, said at token 3 where C and D split the mass
    row = _row(tmp_path, "Answer: C", positions, extraction="lmms_eval")
    assert (row.pred, row.correct, row.scoring) == ("C", True, "generate:lmms_eval")
    assert row.confidence == pytest.approx(0.5)
    # nothing extracted: no confidence
    row = _row(tmp_path, "no idea", [("no", {}), (" idea", {})])
    assert (row.pred, row.correct, row.confidence) == (None, False, None)


def test_generate_confidence_is_read_where_the_rule_read_the_letter(tmp_path: Path) -> None:
    """ "B or C? The answer is C.": C is spelled twice. The strict rule reads the answer phrase, so the
    answer position is the second C (.99), not the first one mentioned while weighing options (.5);
    the official rule reads the first letter of the text, B, at token 1."""
    text = "B or C? The answer is C."
    positions = [("B", _lp(B=0.6, C=0.4)), (" or", {}), (" C", _lp(B=0.5, C=0.5)), ("?", {}), (" The", {}),
                 (" answer", {}), (" is", {}), (" C", _lp(B=0.01, C=0.99)), (".", {})]
    row = _row(tmp_path, text, positions, extraction="strict")
    assert (row.pred, row.correct) == ("C", True)
    assert row.confidence == pytest.approx(0.99)
    row = _row(tmp_path, text, positions)
    assert (row.pred, row.confidence) == ("B", pytest.approx(0.6))
    # tokens that do not spell the text (a detokenizer's spacing): the first token spelling the letter
    row = _row(tmp_path, text, [(t.strip(), lp) for t, lp in positions], extraction="strict")
    assert (row.pred, row.confidence) == ("C", pytest.approx(0.5))


def test_letter_logprobs_pool_spellings() -> None:
    got = letter_logprobs([(" C", math.log(0.2)), ("C", math.log(0.1)), ("(B", math.log(0.3)), ("Cat", -0.1),
                           ("D", None)], "ABCD")
    assert set(got) == {"B", "C"}
    assert math.exp(got["C"]) == pytest.approx(0.3)
    at = score_at_answer(list("ABCD"), "C", [(" C", got)])
    assert at is not None and at.confidence == pytest.approx(0.3) and at.returned == 2  # B and C, not renormalised
    assert score_at_answer(list("ABCD"), None, [(" C", got)]) is None
