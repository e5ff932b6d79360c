"""`framesweep fetch NAME --to DIR` through huggingface_hub, against a hub-style cache folder (tests have no
network: the hub's own offline mode reads the release from the cache), then `run --data DIR`'s spec reads it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers.dataset_files import videomme_fixture

from engine.config.datasets import VideoMMESpec
from engine.datasets import build_adapter
from engine.datasets.sources import layout_fields

ASSETS = Path(__file__).resolve().parents[1] / "assets"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _hub_cache(root: Path, staging: Path) -> Path:
    """lmms-lab/Video-MME as huggingface_hub caches it: refs/main -> a snapshot holding the release's files."""
    ann, media = videomme_fixture(staging)
    shutil.copy(ASSETS / "tiny.mp4", media / "fFjv93ACGo8.mp4")  # a real H.264 file
    repo = root / "datasets--lmms-lab--Video-MME"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    snap = repo / "snapshots" / COMMIT
    (snap / "videomme").mkdir(parents=True)
    shutil.copy(ann, snap / "videomme" / ann.name)
    with zipfile.ZipFile(snap / "videos_chunked_01.zip", "w") as z:
        for video in media.iterdir():
            z.write(video, f"data/{video.name}")
    (snap / "README.md").write_text("not part of what framesweep reads")
    return root


def _fetch(hub: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_CACHE": str(hub), "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "engine", "fetch", *args], check=False, capture_output=True,
                          text=True, timeout=300, env=env)


@pytest.mark.engine
def test_fetch_lays_out_the_release_for_run_data(tmp_path: Path) -> None:
    hub = _hub_cache(tmp_path / "hub", tmp_path / "staging")
    dest = tmp_path / "videomme"
    res = _fetch(hub, "videomme", "--to", str(dest))
    assert res.returncode == 0, res.stdout + res.stderr
    parquet = dest / "videomme" / "test-00000-of-00001.parquet"
    assert parquet.is_symlink() and parquet.resolve().is_relative_to(hub.resolve())  # one copy: the cache's
    assert (dest / "data" / "fFjv93ACGo8.mp4").read_bytes() == (ASSETS / "tiny.mp4").read_bytes()
    assert not (dest / "README.md").exists()
    assert f"annotations = {parquet}" in res.stdout and f"media_root = {dest / 'data'}" in res.stdout
    # the dataset table `framesweep run --dataset videomme --data DIR` builds reads the folder as laid out
    table = VideoMMESpec.model_validate({"name": "videomme", **layout_fields("videomme", dest)})
    items = list(build_adapter(table).items())
    assert len(items) == 6 and items[0].video_path == dest / "data" / "fFjv93ACGo8.mp4"
    again = _fetch(hub, "videomme", "--to", str(dest))  # a second fetch: nothing unpacked twice, links replaced
    assert again.returncode == 0, again.stderr


@pytest.mark.engine
def test_fetch_names_what_it_cannot_do(tmp_path: Path) -> None:
    missing = _fetch(tmp_path / "empty-hub", "videomme", "--to", str(tmp_path / "d"))
    assert missing.returncode == 1 and "videomme: could not fetch lmms-lab/Video-MME" in missing.stderr
    assert "Traceback" not in missing.stderr
    by_hand = _fetch(tmp_path / "empty-hub", "avsd", "--to", str(tmp_path / "d"))
    assert by_hand.returncode == 2 and "not fetched automatically" in by_hand.stderr
    unknown = _fetch(tmp_path / "empty-hub", "nope", "--to", str(tmp_path / "d"))
    assert unknown.returncode == 2 and "no known source for dataset 'nope'; known:" in unknown.stderr
