"""LLaVA-Video-178K-style JSON read as instructions only: no answers, no scoring."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from helpers.dataset_files import write_json

from engine.config.datasets import LlavaVideo178KSpec
from engine.datasets import build_adapter
from engine.datasets.errors import DatasetError
from engine.datasets.llava_video_178k import instruction_of


def sample(sid: str, video: str, *turns: tuple[str, str], **over: Any) -> dict[str, Any]:
    rec = {"id": sid, "conversations": [{"from": f, "value": v} for f, v in turns],
           "data_source": "0_30_s_academic_v0_1", "video": video}
    rec.update(over)
    return rec


CAP = [sample("v_abc", "academic_source/activitynet/v_abc.mp4",
              ("human", "<image>\nDescribe what happens in the video in detail."), ("gpt", "A man rides a bike.")),
       sample("v_def", "academic_source/activitynet/v_def.mp4",
              ("human", "<image>\nWhat is the person holding?"), ("gpt", "A cup."),
              ("human", "What colour is it?"), ("gpt", "Red."))]
QA = [sample("v_abc", "academic_source/activitynet/v_abc.mp4", ("human", "<image>\nHow many people appear?"),
             ("gpt", "Two.")),
      sample("v_abc", "academic_source/activitynet/v_abc.mp4", ("human", "<image>\nWhere does it happen?"),
             ("gpt", "A park."))]


def fixture(root: Path, qa: list[Any] | None = None, **over: Any) -> LlavaVideo178KSpec:
    write_json(root / "ann" / "0_30_s_academic_v0_1_cap_processed.json", CAP)
    write_json(root / "ann" / "0_30_s_academic_oe_v0_1_qa_processed.json", QA if qa is None else qa)
    (root / "media").mkdir(exist_ok=True)
    return LlavaVideo178KSpec.model_validate({"name": "llava_video_178k", "annotations": root / "ann",
                                              "media_root": root / "media", **over})


def test_instructions_ids_and_videos(tmp_path: Path) -> None:
    adapter = build_adapter(fixture(tmp_path))
    items = list(adapter.items())
    assert [it.item_id for it in items] == [
        "0_30_s_academic_oe_v0_1_qa_processed/v_abc", "0_30_s_academic_oe_v0_1_qa_processed/v_abc#1",
        "0_30_s_academic_v0_1_cap_processed/v_abc", "0_30_s_academic_v0_1_cap_processed/v_def"]
    first = items[0]
    assert (first.question, first.prompt) == ("How many people appear?", "How many people appear?")
    assert (first.kind, first.answer, first.references, first.options) == ("open", None, (), ())
    assert first.video_id == "academic_source/activitynet/v_abc.mp4"
    assert first.video_path == (tmp_path / "media" / "academic_source" / "activitynet" / "v_abc.mp4").resolve()
    assert first.extra["sample_id"] == "v_abc" and first.category == "0_30_s_academic_v0_1"
    assert items[3].question == "What is the person holding?"  # the first human turn only
    assert adapter.version and type(adapter).has_answers is False
    s = adapter.score(first, "32 frames")
    assert s.correct is None and math.isnan(s.score)


def test_joined_instruction() -> None:
    turns = [{"from": "human", "value": "<image>\nWhat is it?"}, {"from": "gpt", "value": "A cup."},
             {"from": "human", "value": "<image> What colour?"}]
    assert instruction_of(turns, "joined") == "What is it?\nWhat colour?"


def test_malformed_entries_are_located(tmp_path: Path) -> None:
    bad = [QA[0], {"id": "x", "video": "a.mp4"}, sample("y", "b.mp4", ("gpt", "only an answer")),
           sample("z", "../../outside.mp4", ("human", "Q?")), "not an object"]
    spec = fixture(tmp_path, qa=bad, strict=False)
    with pytest.raises(DatasetError) as err:  # the escaping path is fatal whatever strict says
        list(build_adapter(spec).items())
    text = str(err.value)
    assert "qa_processed.json: row 3" in text and "escapes its root" in text
    assert "row 1" in text and "conversations: expected a non-empty list" in text
    assert "row 2" in text and "no human turn with text" in text
    assert "row 4" in text and "expected an object" in text
    lenient = build_adapter(fixture(tmp_path, qa=bad[:3], strict=False))
    assert len(list(lenient.items())) == 3 and len(lenient.problems) == 2


def test_an_empty_video_path_is_a_bad_row_that_strict_false_skips(tmp_path: Path) -> None:
    """One sample with `"video": ""` failed the whole load (a fatal problem) even with strict = false; it is a
    row problem: named (strict), or skipped and counted while the rest loads."""
    qa = [QA[0], sample("v_empty", "", ("human", "<image>\nWhat happens?")), QA[1]]
    with pytest.raises(DatasetError) as err:
        list(build_adapter(fixture(tmp_path, qa=qa)).items())
    assert "qa_processed.json: row 1 (item 0_30_s_academic_oe_v0_1_qa_processed/v_empty): empty or invalid media " \
           "path ''" in str(err.value)
    lenient = build_adapter(fixture(tmp_path, qa=qa, strict=False))
    items = list(lenient.items())
    assert len(items) == 4 and len(lenient.problems) == 1 and "v_empty" not in " ".join(it.item_id for it in items)


def test_a_deeply_nested_json_is_one_sentence_naming_the_file(tmp_path: Path) -> None:
    """A JSON file nested past Python's recursion limit ended the load in a RecursionError traceback."""
    spec = fixture(tmp_path)
    deep = tmp_path / "ann" / "0_30_s_academic_oe_v0_1_qa_processed.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(DatasetError) as err:
        list(build_adapter(spec).items())
    assert f"{deep}: not readable JSON: arrays or objects nested too deeply" in str(err.value)
