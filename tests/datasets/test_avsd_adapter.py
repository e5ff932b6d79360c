"""AVSD (DSTC7): next answer from the dialog history, undisclosed test answers, token-F1."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.dataset_files import touch, write_json

from engine.config.datasets import AVSDSpec
from engine.datasets import build_adapter
from engine.datasets.errors import DatasetError


def _dialog(vid: str, last: str) -> dict[str, object]:
    return {"image_id": vid, "summary": "a man cooks", "caption": "A man is cooking in a kitchen.",
            "dialog": [{"question": "is there a man ?", "answer": "yes , one man"},
                       {"question": "what is he doing ?", "answer": "he is cooking"},
                       {"question": "does he talk ?", "answer": last}]}


def _spec(tmp_path: Path, data: object, refs: object | None = None, **over: object) -> AVSDSpec:
    ann = write_json(tmp_path / "test_set4DSTC7-AVSD.json", data)
    ref_path = write_json(tmp_path / "refs.json", refs) if refs is not None else None
    touch(tmp_path / "Charades" / "3MSZA.mp4")
    return AVSDSpec.model_validate({"name": "avsd", "annotations": ann, "references": ref_path,
                                    "media_root": tmp_path / "Charades", **over})


def test_last_turn_item_and_prompt(tmp_path: Path) -> None:
    items = list(build_adapter(_spec(tmp_path, {"dialogs": [_dialog("3MSZA", "no , he is silent")]})).items())
    (it,) = items
    assert (it.item_id, it.video_id, it.kind, it.references) == ("3MSZA/2", "3MSZA", "dialog", ("no , he is silent",))
    assert it.video_path == (tmp_path / "Charades" / "3MSZA.mp4").resolve()
    assert it.prompt == (
        "Answer the last question about the video in one sentence, given the dialog so far.\n"
        "Q: is there a man ?\nA: yes , one man\nQ: what is he doing ?\nA: he is cooking\nQ: does he talk ?\nA:"
    )


def test_all_turns_and_caption(tmp_path: Path) -> None:
    spec = _spec(tmp_path, {"dialogs": [_dialog("3MSZA", "no")]}, turns="all", use_caption=True)
    items = list(build_adapter(spec).items())
    assert [it.item_id for it in items] == ["3MSZA/0", "3MSZA/1", "3MSZA/2"]
    assert items[0].prompt.split("\n")[1:] == ["Caption: A man is cooking in a kitchen.", "Q: is there a man ?", "A:"]


def test_undisclosed_uses_references_and_scores_f1(tmp_path: Path) -> None:
    test = {"dialogs": [_dialog("3MSZA", "__UNDISCLOSED__")]}
    refs = {"dialogs": [_dialog("3MSZA", ["no he does not talk", "he is silent"])]}
    adapter = build_adapter(_spec(tmp_path, test, refs))
    (it,) = list(adapter.items())
    assert it.references == ("no he does not talk", "he is silent")
    s = adapter.score(it, "He is silent.")
    assert (s.correct, s.score) == (None, 1.0)
    # pred {he, talks, lot}; vs "no he does not talk": common {he}, P 1/3, R 1/5 -> F1 1/4;
    # vs "he is silent": P 1/3, R 1/3 -> F1 1/3. The max over references wins.
    assert adapter.score(it, "he talks a lot").score == pytest.approx(1 / 3)


def test_bad_inputs(tmp_path: Path) -> None:
    data = {"dialogs": [
        _dialog("3MSZA", "__UNDISCLOSED__"),
        {"image_id": "X1", "dialog": []},
        {"image_id": "X2", "dialog": [{"question": "q ?"}]},
        _dialog("../escape", "yes"),
    ]}
    with pytest.raises(DatasetError) as err:
        list(build_adapter(_spec(tmp_path, data)).items())
    msg = str(err.value)
    assert "row 0: dialog[2]: answer is __UNDISCLOSED__ and the references file has none for '3MSZA'" in msg
    assert "row 1: field 'dialog': expected a non-empty list" in msg
    assert "row 2: dialog[0]: missing field 'answer'" in msg
    assert "row 3 (item ../escape): media path '../escape.mp4' escapes its root" in msg
    with pytest.raises(DatasetError, match='expected an object with a "dialogs" list'):
        list(build_adapter(_spec(tmp_path, [1, 2])).items())
