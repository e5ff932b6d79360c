"""The demo package builds what it built before it was one package, byte for byte: each family's tiny checkpoint
has its recorded content fingerprint (the one the warm key, the answer fingerprint and the export's model hash
use) and the synthetic benchmark's videos and annotations their recorded SHA-256.

Recorded from the builders in their earlier modules (`engine.backends.tiny`, `engine.datasets.synthetic`) before
the move, and equal after it. A change here changes every committed row's answer fingerprint: a deliberate one
bumps `TINY_BUILD_VERSION` (or the synthetic `VERSION`) and records the new digests; a library upgrade
(transformers, torch, PyAV's libx264) that changes the bytes shows here first."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from engine.datasets.synthetic import SyntheticBenchmark, SyntheticDatasetSpec
from engine.demo.tiny import BUILDERS, build_tiny_checkpoint
from engine.runtime.checkpoint import checkpoint_fingerprint

FINGERPRINTS = {
    "llava_1_5": "8458fffe377dc153ea8cf9dbbcf95cc1fb556ce4a48b88b295f0a0670dbceed8",
    "llava_next_video": "cb3b85a90e57580eff4ababa53d1177c5a11bcf00f2ca31dc9e5e8031c1e53d5",
    "qwen2_5_vl": "51306280693a80ed4c113484f9171a1d923376eb44e4a41cbc053f81865c40ed",
    "qwen2_5_vl_seen": "fcd169f07ea6abfefd3ff0716ebae457a032b7b0ce317217397808a970c5e5b4",  # the committed weights
    "qwen3_vl": "546d2cbd64e203f85a5e61697d4c021f8bdafda0c7d3c91fc71787f7aebdbbf2",
}
SYNTHETIC = {  # n_videos=4, seconds=2.0, the rest the spec's defaults
    "annotations.jsonl": "f15fe16767e75556619a225a8550ac3474dfc053561e044d0c00c2a879a8794b",
    "syn0-0000.mp4": "2a2ff1383a5f34f8aa1bae2866fa38c35eb722d840e6d0edd8821d8c5facd639",
    "syn0-0001.mp4": "3ef579374b6e8ef1d879602517f1460f092fd408ded97caca02bdd6465aec9fb",
    "syn0-0002.mp4": "1344001fbbd46815c7b624aed94eaaa7b810aa78c2575b13239965aae90e5007",
    "syn0-0003.mp4": "a82439e85924a6f31d5da440a48895036101d7e565e126eed8fe6a44d9e83b41",
}


def test_every_family_has_a_recorded_fingerprint() -> None:
    assert sorted(BUILDERS.names()) == sorted(FINGERPRINTS)


@pytest.mark.parametrize("family", sorted(FINGERPRINTS))
def test_the_tiny_checkpoint_has_its_recorded_fingerprint(family: str) -> None:
    assert checkpoint_fingerprint(build_tiny_checkpoint(family)) == FINGERPRINTS[family]


def test_the_synthetic_videos_and_annotations_have_their_recorded_digests(tmp_path: Path) -> None:
    SyntheticBenchmark(SyntheticDatasetSpec(name="synthetic", root=tmp_path, n_videos=4, seconds=2.0)).ensure_videos()
    assert {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in tmp_path.iterdir()} == SYNTHETIC
