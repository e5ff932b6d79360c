"""What a run builds on this machine before it reads its items, each shown as a phase of its own.

The tiny checkpoints its models name (`tiny:<family>`, built once into the framesweep cache) and the
synthetic benchmark's videos (written once) take seconds to make the first time. The pipeline would
make them while it reads the items (`reading items` would stand still meanwhile), so `run` and `demo`
make them first, under a phase that says so: `building the tiny qwen2_5_vl checkpoint`, `generating 4
synthetic video(s)`. Whatever is already there costs a look and shows no phase.
"""

from __future__ import annotations

from engine.backends.checkpoint import model_folder
from engine.backends.kinds import in_cluster
from engine.backends.tiny import build_tiny_checkpoint
from engine.cli.progress import RunProgress
from engine.config import SweepSpec
from engine.datasets.registry import build_adapter
from engine.datasets.synthetic import SyntheticBenchmark

__all__ = ["build_local_assets"]


def _unbuilt_tiny(spec: SweepSpec) -> list[str]:
    """The families of the spec's `tiny:<family>` engines whose checkpoint is not built yet."""
    paths = {m.path for m in spec.models if in_cluster(m) and m.path.startswith("tiny:")}
    return sorted(p.removeprefix("tiny:") for p in paths if model_folder(p) is None)


def _missing_videos(adapter: SyntheticBenchmark) -> int:
    return sum(not (adapter.root / f"{s.video_id}.mp4").exists() for s in adapter.scripts())


def build_local_assets(spec: SweepSpec, progress: RunProgress) -> None:
    """Build the tiny checkpoints and write the synthetic videos `spec` needs and this machine lacks, each under
    its own phase of `progress`; back to the run's own phases afterwards."""
    try:
        for family in _unbuilt_tiny(spec):
            progress.set_stage(f"building the tiny {family} checkpoint")
            build_tiny_checkpoint(family)
        for ds in spec.dataset_specs():
            adapter = build_adapter(ds)
            if isinstance(adapter, SyntheticBenchmark) and (n := _missing_videos(adapter)):
                progress.set_stage(f"generating {n} synthetic video(s)")
                adapter.ensure_videos()
    finally:
        progress.set_stage(None)
