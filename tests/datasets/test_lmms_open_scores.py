"""The `lmms_eval` adapter on an open-ended video task: lmms-eval's own ``repcount`` (YAML and utils unmodified),
repetition counting scored by its first metric ``mae_norm``, which its YAML declares lower-is-better, over local
documents in the schema of lmms-lab-eval/repcount (``video``, ``video_id``, ``question``, ``count``,
``action_type``). The media files are placeholders: items are made without decoding (the task's doc_to_visual only
checks that the file exists).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.lmms import NEEDS_LMMS, empty_hf_home
from helpers.lmms_parity import Task, release

from engine.datasets import build_adapter
from engine.datasets.lmms_eval import LmmsEvalSpec

pytestmark = NEEDS_LMMS

DOCS = [{"video": "v1.mp4", "video_id": "v1", "question": "How many times does the white square flash?",
         "count": 3, "action_type": "flash"},
        {"video": "v2.mp4", "video_id": "v2", "question": "How many times does the white square flash?\nA. 1\nB. 2"
         "\nC. 3\nD. 4", "count": 2, "action_type": "flash"}]


@pytest.fixture
def adapter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    home = empty_hf_home(tmp_path / "hf", monkeypatch)
    (home / "repcount").mkdir()
    for doc in DOCS:
        (home / "repcount" / str(doc["video"])).write_bytes(b"placeholder")
    data = release(tmp_path / "releases", Task("repcount", DOCS, None, "test", "repcount", "mae_norm"))
    return build_adapter(LmmsEvalSpec(name="lmms_eval", task="repcount", dataset_path=data))


def test_an_open_tasks_items_are_open_even_when_the_question_lists_choices(adapter) -> None:  # type: ignore[no-untyped-def]
    """A count target is no letter: lines ``A. 1`` in the question are text, not options."""
    items = list(adapter.items())
    assert [(it.item_id, it.kind, it.options, it.answer) for it in items] == [("0", "open", (), "3"),
                                                                               ("1", "open", (), "2")]
    assert {it.dataset_version for it in items} == {"lmms_eval-0.7.3/repcount@0.0/mae_norm:-value"}


def test_a_lower_is_better_metric_is_negated_in_the_score_and_kept_in_the_detail(adapter) -> None:  # type: ignore[no-untyped-def]
    """framesweep's paired score metrics read higher as better: RepCount's normalised error is negated in the row's
    score (rule ``-value``); its `score_detail` keeps the task's own value, which its aggregation (mean) reads."""
    item = next(iter(adapter.items()))
    for response, own in (("5", 2 / 3.1), ("3", 0.0), ("B", 3.0), ("four", 1 / 3.1)):
        scored = adapter.score(item, response)
        assert scored.score == pytest.approx(-own) and scored.correct is None, response
        assert scored.detail is not None and json.loads(scored.detail) == pytest.approx(own)
    assert adapter.score(item, "6").score < adapter.score(item, "4").score  # further off, lower score
