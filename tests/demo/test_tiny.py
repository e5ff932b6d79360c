"""The tiny checkpoint builder: real architecture files, single-token option letters, deterministic."""

import json
from pathlib import Path

import pytest

from engine.backends.model_ids import resolve_model_path
from engine.demo.tiny import build_tiny_checkpoint


def test_tiny_checkpoint_is_a_real_qwen25vl(tiny_qwen25: Path) -> None:
    from transformers import AutoProcessor, AutoTokenizer

    cfg = json.loads((tiny_qwen25 / "config.json").read_text())
    assert cfg["architectures"] == ["Qwen2_5_VLForConditionalGeneration"]
    assert (tiny_qwen25 / "model.safetensors").stat().st_size < 20_000_000
    tok = AutoTokenizer.from_pretrained(tiny_qwen25)
    assert all(len(tok.encode(x, add_special_tokens=False)) == 1 for x in "ABCDEFGH")
    assert tok.convert_tokens_to_ids("<|video_pad|>") == cfg["video_token_id"]
    proc = AutoProcessor.from_pretrained(tiny_qwen25)
    assert type(proc).__name__ == "Qwen2_5_VLProcessor"
    assert resolve_model_path("tiny:qwen2_5_vl") == tiny_qwen25  # built once, then reused


def test_same_seed_same_weights(tmp_path: Path, tiny_qwen25: Path) -> None:
    other = build_tiny_checkpoint("qwen2_5_vl", tmp_path / "again")
    assert (other / "model.safetensors").read_bytes() == (tiny_qwen25 / "model.safetensors").read_bytes()
    with pytest.raises(KeyError, match="known: llava_1_5, llava_next_video, qwen2_5_vl, qwen2_5_vl_seen, qwen3_vl"):
        build_tiny_checkpoint("nope")


@pytest.mark.parametrize("family,arch", [("qwen3_vl", "Qwen3VLForConditionalGeneration"),
                                         ("llava_next_video", "LlavaNextVideoForConditionalGeneration")])
def test_other_families_build(family: str, arch: str) -> None:
    from transformers import AutoProcessor

    path = build_tiny_checkpoint(family)
    assert json.loads((path / "config.json").read_text())["architectures"] == [arch]
    assert AutoProcessor.from_pretrained(path).tokenizer.encode("B", add_special_tokens=False).__len__() == 1


def test_full_shape_config_has_the_7b_architecture(tmp_path: Path, tiny_qwen25: Path) -> None:
    from transformers import AutoConfig, AutoTokenizer

    from engine.demo.tiny import build_full_shape_config

    out = build_full_shape_config(tmp_path / "7b")
    cfg = AutoConfig.from_pretrained(out)
    assert cfg.text_config.hidden_size == 3584 and cfg.text_config.num_hidden_layers == 28
    assert cfg.vision_config.depth == 32 and not (out / "model.safetensors").exists()
    tok = AutoTokenizer.from_pretrained(out)
    assert tok.convert_tokens_to_ids("<|video_pad|>") == cfg.video_token_id


def test_two_processes_asking_at_once_build_the_checkpoint_once(tmp_path: Path, monkeypatch) -> None:
    """Two callers at once (two test workers, a run and the demo): the second waits on the build lock and finds
    the folder built. Without the lock the second build replaced the first folder whole, possibly while an engine
    loaded from it. The builder here counts its calls (the real one takes ~9 s); the lock is the real one."""
    import threading
    import time

    from engine.demo import tiny

    calls: list[int] = []

    def slow(out: Path, seed: int) -> None:
        calls.append(seed)
        time.sleep(0.5)  # the other caller arrives while this one builds
        (out / "config.json").write_text("{}")

    monkeypatch.setattr(tiny, "BUILDERS", {"slow": slow})
    built: list[Path] = []
    threads = [threading.Thread(target=lambda: built.append(build_tiny_checkpoint("slow", tmp_path / "ck")))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [0] and built == [tmp_path / "ck"] * 2
    assert (tmp_path / "ck" / "config.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".ck.lock", "ck"]  # no half-built folder left
