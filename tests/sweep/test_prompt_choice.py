"""A model's `prompt` choice on the sweep side: the requests a `prompt = "checkpoint_template"` model is sent carry the
prompt its checkpoint's chat template writes (a copy of the tiny checkpoint with another default system line), a
`family` model's the family's; and the answer fingerprint tells the two apart while the default keeps the fingerprint
recorded before the option existed (committed rows still resume). No engine starts."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers.specs import small_spec_dict

from engine.backends.chat_template import probe_requests
from engine.config import BudgetPoint, SweepSpec, parse_spec
from engine.demo.tiny import build_tiny_checkpoint
from engine.sweep.fingerprint import AnswerPrints, fingerprint
from engine.sweep.requests import RequestBuilder

CHECKPOINT = "sha256:" + "ab" * 32
RECORDED = "6c73d600a269657d684d92cd30e7c942aa891f73287c27a47e22c1a3f7ebeb71"
"""The fingerprint of `_model_side` for the small spec's 8-frame budget, recorded from the code before `prompt`
existed (the dataset's fields left out: they are the dataset's to change)."""


def _spec(out: Path, choice: str | None = None, path: str = "tiny:qwen2_5_vl", **over: Any) -> SweepSpec:
    d = small_spec_dict(out, **over)
    d["models"][0]["path"] = path
    if choice is not None:
        d["models"][0]["prompt"] = choice
    return parse_spec(d)


def _tuned(tmp_path: Path) -> Path:
    """The tiny Qwen2.5-VL checkpoint as if fine-tuned with another default system line."""
    folder = Path(shutil.copytree(build_tiny_checkpoint("qwen2_5_vl"), tmp_path / "tuned"))
    template = folder / "chat_template.jinja"
    template.write_text(template.read_text(encoding="utf-8").replace("You are a helpful assistant.",
                                                                     "You watch videos."), encoding="utf-8")
    return folder


def test_a_checkpoint_template_model_is_asked_in_its_checkpoints_template(tmp_path: Path) -> None:
    folder = _tuned(tmp_path)
    family = probe_requests("qwen2_5_vl")["two frames"]
    builder = RequestBuilder(_spec(tmp_path / "out", "checkpoint_template", str(folder)))
    asked = builder.written("tiny", family, True)
    assert asked.prompt == family.prompt.replace("You are a helpful assistant.", "You watch videos.")
    assert asked.prompt.startswith("<|im_start|>system\nYou watch videos.<|im_end|>\n<|im_start|>user\n"
                                   "<|vision_start|><|video_pad|><|vision_end|>Which colour is the square?")
    assert RequestBuilder(_spec(tmp_path / "out", None, str(folder))).written("tiny", family, True) is family


def test_a_system_message_the_spec_or_the_item_sets_is_kept_in_the_checkpoints_template(tmp_path: Path) -> None:
    folder = _tuned(tmp_path)
    family = probe_requests("qwen2_5_vl")["system message and answer prefix"]  # the item sets one
    builder = RequestBuilder(_spec(tmp_path / "out", "checkpoint_template", str(folder)))
    assert builder.written("tiny", family, False).prompt == family.prompt
    spec_set = RequestBuilder(_spec(tmp_path / "out", "checkpoint_template", str(folder),
                                    prompt={"system_prompt": "You are a helpful assistant."}))
    plain = probe_requests("qwen2_5_vl")["two frames"]  # the spec's system message happens to be the default
    assert spec_set.written("tiny", plain, True).prompt == plain.prompt


def _fields(spec: SweepSpec) -> dict[str, Any]:
    prints = AnswerPrints(spec, {"synthetic": "synthetic-v1"}, checkpoints={"tiny": CHECKPOINT},
                          templates={"qwen2_5_vl": "t" * 16})
    return prints.fields_for("tiny", "synthetic", BudgetPoint(frames=8), "pyav")


def _model_side(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if not k.startswith("dataset.")}


def test_the_default_prompt_keeps_the_recorded_fingerprint() -> None:
    for spec in (_spec(Path("out")), _spec(Path("out"), "family")):
        assert fingerprint(_model_side(_fields(spec))) == RECORDED
        assert _fields(spec)["template"] == "t" * 16


@pytest.mark.parametrize("path", ["tiny:qwen2_5_vl", "/models/tuned"])
def test_the_checkpoint_template_changes_the_answer_fingerprint(path: str) -> None:
    family, own = _fields(_spec(Path("out"), path=path)), _fields(_spec(Path("out"), "checkpoint_template", path))
    assert fingerprint(family) != fingerprint(own)
    assert {k for k in family if family[k] != own[k]} == {"template"}
    assert own["template"] == "checkpoint_template:" + "t" * 16
