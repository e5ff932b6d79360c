"""Before a run reads its items it builds what this machine lacks, each a phase of its own: the tiny checkpoints
and the synthetic videos (it said `reading items 0/?` for seconds meanwhile)."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.specs import small_spec_dict
from rich.console import Console

from engine.cli.local_assets import build_local_assets, local_assets
from engine.cli.progress import RunProgress
from engine.config import parse_spec
from engine.demo.tiny import BUILDERS, register_tiny_builder


@pytest.fixture
def stub_family(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[Path]]:
    """A tiny builder registered for the test (the registry's own extension point), writing a config.json only: a
    real tiny build takes seconds to tens of seconds; what is tested is the phase it runs under."""
    monkeypatch.setenv("FRAMESWEEP_CACHE", str(tmp_path / "cache"))
    built: list[Path] = []

    def build(out: Path, seed: int) -> None:
        (out / "config.json").write_text(json.dumps({"model_type": "qwen2_5_vl"}))
        built.append(out)

    register_tiny_builder("stagefam")(build)
    yield built
    BUILDERS.unregister("stagefam")


def _phases(spec_dict: dict) -> list[str]:
    """The plain lines of a run's start, as `run` opens its display: the first step's phase set before."""
    out = io.StringIO()
    steps = local_assets(parse_spec(spec_dict))
    progress = RunProgress("s", ["tiny"], every_s=3600, console=Console(file=out, width=200))
    progress.set_stage(steps[0][0] if steps else None)
    with progress:
        build_local_assets(steps, progress)
    return [re.sub(r"^\[\d+:\d\d:\d\d\] s: ", "", line) for line in out.getvalue().splitlines()]


def test_a_run_says_what_it_builds_before_it_reads_items(tmp_path: Path, stub_family: list[Path]) -> None:
    d = small_spec_dict(tmp_path / "out")
    d["models"][0]["path"] = "tiny:stagefam"
    d["dataset"] = {**d["dataset"], "n_videos": 2, "seconds": 1.0, "root": str(tmp_path / "videos")}
    assert _phases(d) == ["building the tiny stagefam checkpoint", "generating 2 synthetic video(s)",
                          "reading items and committed rows"]
    assert len(stub_family) == 1 and len(list((tmp_path / "videos").glob("*.mp4"))) == 2
    assert _phases(d) == ["reading items and committed rows"]  # built: nothing to say, nothing rebuilt
    assert len(stub_family) == 1
