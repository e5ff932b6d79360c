"""Media uuids: vLLM keys its multimodal caches (processor, encoder outputs, prefix blocks) by them, so
two different frame sets must never share one, even across sweeps that share a warm engine."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from engine.frames.view import media_fingerprint, media_uuid

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def test_the_same_name_of_another_file_is_another_uuid(tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "v.mp4", tmp_path / "b" / "v.mp4"
    for p in (a, b):
        p.parent.mkdir()
        shutil.copy(ASSETS / "tiny.mp4", p)
    idx = np.array([0, 4, 8])
    fa, fb = (media_fingerprint(p, "pyav", "raw", idx, (64, 48)) for p in (a, b))
    assert fa != fb  # same dataset/video id and budget, another file: apart
    assert media_uuid("syn/v", "f8", content=fa) != media_uuid("syn/v", "f8", content=fb)
    # the same file, frames and size: the same uuid (runs of one sweep share their cache entries)
    assert media_fingerprint(a, "pyav", "raw", idx.copy(), (64, 48)) == fa
    # other frames, size or decoder of the same file: apart
    assert media_fingerprint(a, "pyav", "raw", np.array([0, 4, 9]), (64, 48)) != fa
    assert media_fingerprint(a, "pyav", "raw", idx, (96, 72)) != fa
    assert media_fingerprint(a, "decord", "raw", idx, (64, 48)) != fa
    # the file rewritten in place (a dataset regenerated): apart
    st = a.stat()
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert media_fingerprint(a, "pyav", "raw", idx, (64, 48)) != fa


def test_the_uuid_keeps_its_namespace_name_and_clip() -> None:
    u = media_uuid("syn/v", "f8", namespace="cascade-r1", clip=(1.0, 2.0), content="abc123")
    assert u == "cascade-r1/syn/v~abc123:f8@1-2"
    assert media_uuid("mme/x", "f8", image=True, content="abc123") == "mme/x~abc123:image"
    assert media_uuid("syn/v", "f8") == "syn/v:f8"
