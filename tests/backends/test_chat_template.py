"""A family's prompt beside its checkpoint's own chat template (`engine.backends.chat_template`), on the tiny
checkpoints the project builds: each family writes what its checkpoint's template renders; a checkpoint whose template
was edited (another system line, other role markers) is refused naming the family, the folder and both strings; a
checkpoint without a template is only warned about; `prompt = "checkpoint_template"` asks in the checkpoint's template.
No engine starts: the templates are rendered by the checkpoints' own tokenizers."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from engine.backends.chat_template import (
    ChatTemplateError,
    ChatTemplateMismatch,
    check_family_prompt,
    check_prompt,
    checkpoint_template,
    probe_requests,
)
from engine.demo.tiny import BUILDERS, build_tiny_checkpoint


def _copy(family: str, tmp_path: Path) -> Path:
    """A copy of `family`'s tiny checkpoint, to edit."""
    return Path(shutil.copytree(build_tiny_checkpoint(family), tmp_path / f"ckpt-{family}"))


def _edit_template(folder: Path, old: str, new: str) -> None:
    path = folder / "chat_template.jinja"
    text = path.read_text(encoding="utf-8")
    assert old in text, f"the tiny template no longer holds {old!r}"
    path.write_text(text.replace(old, new), encoding="utf-8")


@pytest.mark.parametrize("build", BUILDERS.names())
def test_each_family_writes_what_its_tiny_checkpoints_template_renders(build: str) -> None:
    family = "qwen2_5_vl" if build == "qwen2_5_vl_seen" else build  # the trained one is a Qwen2.5-VL
    assert check_family_prompt(build_tiny_checkpoint(build), family) is True


def test_the_probes_cover_media_text_only_and_a_system_message_with_an_answer_prefix() -> None:
    probes = probe_requests("qwen2_5_vl")
    assert set(probes) == {"two frames", "text only", "system message and answer prefix"}
    assert "<|video_pad|>" in probes["two frames"].prompt and "<|video_pad|>" not in probes["text only"].prompt
    prefixed = probes["system message and answer prefix"]
    assert prefixed.prompt.endswith("The answer is (") and "Answer with a letter." in prefixed.prompt


def test_another_system_line_is_a_mismatch_naming_the_family_the_folder_and_both_strings(tmp_path: Path) -> None:
    folder = _copy("qwen2_5_vl", tmp_path)
    _edit_template(folder, "You are a helpful assistant.", "You are a video expert.")
    with pytest.raises(ChatTemplateMismatch) as err:
        check_family_prompt(folder, "qwen2_5_vl", "model tuned: ")
    msg = str(err.value)
    assert msg.startswith("model tuned: family qwen2_5_vl ") and str(folder) in msg
    assert repr(probe_requests("qwen2_5_vl")["two frames"].prompt) in msg  # the family's string, whole
    assert "<|im_start|>system\\nYou are a video expert.<|im_end|>" in msg  # the checkpoint's
    assert "probe with two frames" in msg and 'prompt = "checkpoint_template"' in msg


def test_other_role_markers_are_a_mismatch_for_a_llava_family(tmp_path: Path) -> None:
    folder = _copy("llava_next_video", tmp_path)
    _edit_template(folder, "USER: ", "Human: ")
    with pytest.raises(ChatTemplateMismatch, match=r"family llava_next_video .*'Human: <video>\\n"):
        check_family_prompt(folder, "llava_next_video")


def test_a_template_in_tokenizer_config_is_the_one_checked(tmp_path: Path) -> None:
    """A checkpoint whose template lives in `tokenizer_config.json` (older releases) is read from there."""
    folder = _copy("qwen3_vl", tmp_path)
    template = (folder / "chat_template.jinja").read_text(encoding="utf-8")
    (folder / "chat_template.jinja").unlink()
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["chat_template"] = template.replace("<|im_start|>assistant\n", "<|im_start|>model\n")
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(ChatTemplateMismatch, match=r"<\|im_start\|>model\\n"):
        check_family_prompt(folder, "qwen3_vl")


def test_a_checkpoint_without_a_template_is_warned_about_and_passes(tmp_path: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    folder = _copy("qwen2_5_vl", tmp_path)
    (folder / "chat_template.jinja").unlink()
    with caplog.at_level(logging.WARNING, logger="engine.backends.chat_template"):
        assert check_family_prompt(folder, "qwen2_5_vl") is False
        check_prompt(folder, "qwen2_5_vl", "family")
    assert [r.levelno for r in caplog.records] == [logging.WARNING] * 2
    assert "ships no chat template" in caplog.text and str(folder) in caplog.text


def test_checkpoint_template_skips_the_comparison_and_needs_a_template(tmp_path: Path) -> None:
    folder = _copy("qwen2_5_vl", tmp_path)
    _edit_template(folder, "You are a helpful assistant.", "You are a video expert.")
    check_prompt(folder, "qwen2_5_vl", "checkpoint_template")  # the edited template is the one asked: no error
    with pytest.raises(ChatTemplateMismatch):
        check_prompt(folder, "qwen2_5_vl", "family")
    (folder / "chat_template.jinja").unlink()
    with pytest.raises(ChatTemplateError, match=r"checkpoint .*has no chat template that loads here"):
        check_prompt(folder, "qwen2_5_vl", "checkpoint_template", "model tuned: ")


def test_an_edited_template_is_read_again(tmp_path: Path) -> None:
    """The loaded template is cached by its files' stamps: an edit after a check is seen by the next check."""
    folder = _copy("qwen2_5_vl", tmp_path)
    assert check_family_prompt(folder, "qwen2_5_vl")
    _edit_template(folder, "You are a helpful assistant.", "You are helpful.")
    with pytest.raises(ChatTemplateMismatch):
        check_family_prompt(folder, "qwen2_5_vl")


def test_a_checkpoint_not_on_this_machine_is_not_checked(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="engine.backends.chat_template"):
        check_prompt("no-such-org/no-such-model", "qwen2_5_vl", "family")
    assert "is not on this machine" in caplog.text


def test_the_checkpoint_template_writes_its_own_default_system_line_and_keeps_a_set_one(tmp_path: Path) -> None:
    folder = _copy("qwen2_5_vl", tmp_path)
    _edit_template(folder, "You are a helpful assistant.", "You are a video expert.")
    template, probes = checkpoint_template(folder), probe_requests("qwen2_5_vl")
    plain = template.apply(probes["two frames"], "You are a helpful assistant.")
    assert plain.prompt == probes["two frames"].prompt.replace("a helpful assistant.", "a video expert.")
    assert plain.messages == probes["two frames"].messages and plain.video is not None  # the media unchanged
    prefixed = template.apply(probes["system message and answer prefix"])  # a system message set: kept
    assert prefixed.prompt == probes["system message and answer prefix"].prompt
    assert prefixed.prompt.startswith("<|im_start|>system\nAnswer with a letter.<|im_end|>\n")


def test_a_template_that_cannot_render_the_familys_messages_is_refused_naming_its_error(tmp_path: Path) -> None:
    """A template that refuses a system message (as some do, with `raise_exception`) fails the check, and fails a
    `checkpoint_template` model at its engine start rather than at its first request."""
    folder = _copy("llava_1_5", tmp_path)
    _edit_template(folder, "{% if message['role'] == 'system' %}{{ message['content'] }} ",
                   "{% if message['role'] == 'system' %}{{ raise_exception('System role not supported') }}")
    with pytest.raises(ChatTemplateMismatch, match=r"^model m: family llava_1_5 writes a prompt for messages that the "
                       r"chat template of checkpoint .*System role not supported.*family 'Answer with a letter\."):
        check_prompt(folder, "llava_1_5", "family", "model m: ")
    with pytest.raises(ChatTemplateError, match=r"^model m: prompt = \"checkpoint_template\" with family llava_1_5: "
                       r".*System role not supported"):
        check_prompt(folder, "llava_1_5", "checkpoint_template", "model m: ")


def test_a_checkpoint_whose_tokenizer_does_not_load_is_warned_about_and_passes(tmp_path: Path,
                                                                              caplog: pytest.LogCaptureFixture) -> None:
    """A tokenizer that does not load (here a truncated `tokenizer.json`): nothing renders the template, so the check
    warns and the engine start goes on (vLLM then says what it makes of the folder)."""
    folder = _copy("qwen2_5_vl", tmp_path)
    (folder / "tokenizer.json").write_text("{not json", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="engine.backends.chat_template"):
        check_prompt(folder, "qwen2_5_vl", "family")
    assert f"the tokenizer of checkpoint {folder.resolve()} does not load here" in caplog.text
    assert "ships no chat template" in caplog.text
