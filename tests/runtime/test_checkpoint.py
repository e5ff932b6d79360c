"""The checkpoint fingerprint: the content of every file that shapes an answer, weights included, cached by
stat so that a rerun reads no weight; two copies of one checkpoint alike; no engine needed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from engine.runtime import checkpoint
from engine.runtime.checkpoint import checkpoint_fingerprint, model_folder
from engine.runtime.paths import cache_dir

# every file of a checkpoint that shapes an answer, as a small stand-in (the fingerprint reads bytes only)
FILES = {
    "config.json": '{"hidden_size": 8}',
    "processor_config.json": '{"max_pixels": 12544}',
    "preprocessor_config.json": '{"patch_size": 14}',
    "video_preprocessor_config.json": '{"fps": 2}',
    "tokenizer.json": '{"model": {"vocab": {}}}',
    "tokenizer_config.json": '{"model_max_length": 4096}',
    "special_tokens_map.json": '{"eos_token": "</s>"}',
    "added_tokens.json": '{"<video>": 5}',
    "vocab.json": '{"a": 0}',
    "merges.txt": "a b\n",
    "chat_template.json": '{"chat_template": "{{ messages }}"}',
    "chat_template.jinja": "{{ messages }}",
    "generation_config.json": '{"temperature": 0.7}',
    "model.safetensors.index.json": '{"weight_map": {}}',
}
BIG = checkpoint._DIRECT_BYTES + 1  # a weight file large enough to go through the digest cache


def _checkpoint(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for name, text in FILES.items():
        (folder / name).write_text(text)
    (folder / "model-00001-of-00001.safetensors").write_bytes(b"\1" * BIG)
    (folder / "small.safetensors").write_bytes(b"\2" * 64)
    (folder / "README.md").write_text("# a model card")
    return folder


@pytest.mark.parametrize("name", [*FILES, "model-00001-of-00001.safetensors", "small.safetensors"])
def test_an_edit_to_any_answer_file_changes_the_fingerprint(tmp_path: Path, name: str) -> None:
    """Each file in turn, rewritten with other bytes of the same length and its old modification time: the
    content alone tells (a processor_config.json with another frame size served by the old engine was the bug)."""
    ckpt = _checkpoint(tmp_path / "ckpt")
    before = checkpoint_fingerprint(ckpt)
    f = ckpt / name
    st = f.stat()
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0xFF
    f.write_bytes(bytes(data))
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert f.stat().st_size == st.st_size and f.stat().st_mtime_ns == st.st_mtime_ns
    assert checkpoint_fingerprint(ckpt) != before


def test_two_copies_fingerprint_alike_and_documentation_does_not_count(tmp_path: Path) -> None:
    ckpt = _checkpoint(tmp_path / "ckpt")
    copy = tmp_path / "copy"
    shutil.copytree(ckpt, copy, copy_function=shutil.copyfile)  # new files: other mtimes and inodes
    for f in copy.iterdir():
        os.utime(f, ns=(10**18, 10**18))
    assert checkpoint_fingerprint(copy) == checkpoint_fingerprint(ckpt) is not None
    assert checkpoint_fingerprint(copy, mtime=False) == checkpoint_fingerprint(copy)  # the keyword has no effect
    # what no loader reads: documentation, licence files by their exact names, git's and the hub's bookkeeping
    for rel in LEFT_OUT:
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        (copy / rel).write_text("another text")
    assert checkpoint_fingerprint(copy) == checkpoint_fingerprint(ckpt)
    (copy / "extra_tokens.json").write_text("{}")  # any other file may shape an answer: it counts
    assert checkpoint_fingerprint(copy) != checkpoint_fingerprint(ckpt)
    assert checkpoint_fingerprint(tmp_path) is None  # no config.json: not a checkpoint folder


LEFT_OUT = ["README.md", "docs/usage.rst", "logo.png", "LICENSE", "Notice", "COPYING", ".gitattributes",
            ".git/objects/ab/cdef0123", ".cache/huggingface/download/config.json.metadata",
            ".cache/huggingface/download/model.safetensors.lock"]


@pytest.mark.parametrize("rel", ["LICENSE.py", "notice_utils.py", "license_tokenizer.md", "LICENSE.txt",
                                 "NOTICE.jinja", ".hidden/settings", ".hidden/helper.py",
                                 ".cache/huggingface/modeling_extra.py", ".git/generation_config.json",
                                 "copying/processor_config.json"])
def test_a_file_custom_code_can_load_counts_whatever_its_name_or_folder(tmp_path: Path, rel: str) -> None:
    """Files named like licences or notices, and files under hidden folders, were left out by their name, though
    `trust_remote_code` can load them (``LICENSE.py``, ``notice_utils.py``, ``.hidden/``): an edit to one changes
    the fingerprint now; only documentation suffixes, exact licence names and git's and the hub's bookkeeping are
    left out, and a loadable suffix (or a tokenizer's name) counts even there."""
    ckpt = _checkpoint(tmp_path / "ckpt")
    f = ckpt / rel
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text("VALUE = 1\n")
    before = checkpoint_fingerprint(ckpt)
    f.write_text("VALUE = 2\n")
    assert checkpoint_fingerprint(ckpt) != before


def test_a_weight_file_is_read_once_then_known_by_its_stat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second fingerprint of an unchanged checkpoint hashes no large file (a stat each); one written again
    (another mtime) is hashed again; the cache lives in the framesweep cache folder."""
    monkeypatch.setenv("FRAMESWEEP_CACHE", str(tmp_path / "cache"))
    ckpt = _checkpoint(tmp_path / "ckpt")
    hashed: list[str] = []
    real = checkpoint.file_sha256

    def counting(path: Path | str) -> str:
        if Path(path).stat().st_size > checkpoint._DIRECT_BYTES:
            hashed.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(checkpoint, "file_sha256", counting)  # counts the reads; the hashing is the real one
    first = checkpoint_fingerprint(ckpt)
    assert hashed == ["model-00001-of-00001.safetensors"]
    entries = json.loads((cache_dir() / "checkpoint-digests.json").read_text())
    assert list(entries) == [str((ckpt / "model-00001-of-00001.safetensors").resolve())]
    assert checkpoint_fingerprint(ckpt) == first and len(hashed) == 1  # a stat, no read
    weights = ckpt / "model-00001-of-00001.safetensors"
    st = weights.stat()
    weights.write_bytes(b"\3" * BIG)  # written again, the same size: another mtime
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert checkpoint_fingerprint(ckpt) != first and len(hashed) == 2
    (cache_dir() / "checkpoint-digests.json").write_text("not json")  # a broken cache: hashed again, no error
    assert checkpoint_fingerprint(ckpt) is not None and len(hashed) == 3


def test_model_folder_resolves_a_folder_and_a_tiny_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.runtime.paths import tiny_checkpoint_dir

    monkeypatch.setenv("FRAMESWEEP_CACHE", str(tmp_path / "cache"))
    assert model_folder("tiny:qwen2_5_vl") is None  # not built in this cache
    tiny_checkpoint_dir("qwen2_5_vl").mkdir(parents=True)
    assert model_folder("tiny:qwen2_5_vl") == tiny_checkpoint_dir("qwen2_5_vl")
    assert model_folder(str(tmp_path)) == tmp_path
    assert model_folder(str(tmp_path / "missing")) is None
