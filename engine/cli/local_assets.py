"""What a run builds on this machine before it reads its items, each shown as a phase of its own.

The tiny checkpoints its models name (`tiny:<family>`, built once into the framesweep cache) and the
synthetic benchmark's videos (written once) take seconds to make the first time. The pipeline would
make them while it reads the items (`reading items` would stand still meanwhile), so `run` and `demo`
make them first, under a phase that says so: `building the tiny qwen2_5_vl checkpoint`, `generating 4
synthetic video(s)`. Whatever is already there costs a look and shows no phase.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from engine.backends.kinds import in_cluster
from engine.backends.model_ids import resolve_model_path
from engine.cli.progress import RunProgress
from engine.config import SweepSpec
from engine.datasets.registry import build_adapter
from engine.datasets.synthetic import SyntheticBenchmark
from engine.runtime.checkpoint import model_folder

__all__ = ["Step", "build_local_assets", "local_assets"]

Step = tuple[str, Callable[[], object]]
"""(the phase it is shown under, what builds it)."""


def _unbuilt_tiny(spec: SweepSpec) -> list[str]:
    """The families of the spec's `tiny:<family>` engines whose checkpoint is not built yet."""
    paths = {m.path for m in spec.models if in_cluster(m) and m.path.startswith("tiny:")}
    return sorted(p.removeprefix("tiny:") for p in paths if model_folder(p) is None)


def _missing_videos(adapter: SyntheticBenchmark) -> int:
    return sum(not (adapter.root / f"{s.video_id}.mp4").exists() for s in adapter.scripts())


def local_assets(spec: SweepSpec) -> list[Step]:
    """What `spec` needs built on this machine and lacks: its tiny checkpoints, then its synthetic videos."""
    steps: list[Step] = [(f"building the tiny {family} checkpoint", partial(resolve_model_path, f"tiny:{family}"))
                         for family in _unbuilt_tiny(spec)]
    for ds in spec.dataset_specs():
        adapter = build_adapter(ds)
        if isinstance(adapter, SyntheticBenchmark) and (n := _missing_videos(adapter)):
            steps.append((f"generating {n} synthetic video(s)", adapter.ensure_videos))
    return steps


def build_local_assets(steps: list[Step], progress: RunProgress) -> None:
    """Build each step under its own phase of `progress` (set the first before the display opens, so it is the
    first phase shown); back to the run's own phases afterwards."""
    try:
        for phase, build in steps:
            progress.set_stage(phase)
            build()
    finally:
        progress.set_stage(None)
