"""Benchmark adapters, registered by name (the registry is `engine.datasets.registry`), each with its spec class.

An adapter turns a dataset spec into `Item`s (its annotations read whole, then yielded), with the benchmark's
prompt and answer, a version written into every result row, and the benchmark's
official scoring rule. A new adapter is one module that defines its spec class (a `[dataset]` table; what every
one shares is in `engine.datasets.spec`) and calls `register_adapter`; its benchmark (spec class, release,
official score, headline) is one `register_benchmark(Benchmark(...))` (`engine.datasets.benchmark`; the built-in
ones in `engine.datasets.builtin`, and their spec classes joined in `DatasetSpec`).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from engine.datasets import builtin as _builtin  # noqa: F401 - registers the built-in benchmarks
from engine.datasets.avsd import AVSDSpec
from engine.datasets.benchmark import BENCHMARKS, Benchmark, get_benchmark, register_benchmark, unregister_benchmark
from engine.datasets.llava_video_178k import LlavaVideo178KSpec
from engine.datasets.lmms_eval import LmmsEvalSpec
from engine.datasets.mlvu import MLVUSpec
from engine.datasets.mmbench import MMBenchSpec
from engine.datasets.mme import MMESpec
from engine.datasets.mmstar import MMStarSpec
from engine.datasets.mvbench import MVBenchSpec
from engine.datasets.pope import POPESpec
from engine.datasets.registry import (
    DatasetAdapter,
    build_adapter,
    get_adapter,
    load_items,
    register_adapter,
    registered_adapters,
)
from engine.datasets.synthetic import SyntheticDatasetSpec
from engine.datasets.tempcompass import TempCompassSpec
from engine.datasets.video_mmmu import VideoMMMUSpec
from engine.datasets.videomme import VideoMMESpec
from engine.datasets.videomme_v2 import VideoMMEv2Spec

__all__ = [
    "BENCHMARKS",
    "AVSDSpec",
    "Benchmark",
    "DatasetAdapter",
    "DatasetSpec",
    "LlavaVideo178KSpec",
    "LmmsEvalSpec",
    "MLVUSpec",
    "MMBenchSpec",
    "MMESpec",
    "MMStarSpec",
    "MVBenchSpec",
    "POPESpec",
    "SyntheticDatasetSpec",
    "TempCompassSpec",
    "VideoMMESpec",
    "VideoMMEv2Spec",
    "VideoMMMUSpec",
    "build_adapter",
    "get_adapter",
    "get_benchmark",
    "load_items",
    "register_adapter",
    "register_benchmark",
    "registered_adapters",
    "unregister_benchmark",
]

DatasetSpec = Annotated[
    SyntheticDatasetSpec | VideoMMESpec | VideoMMEv2Spec | MLVUSpec | AVSDSpec | MVBenchSpec | TempCompassSpec
    | MMStarSpec | POPESpec | MMESpec | MMBenchSpec | VideoMMMUSpec | LlavaVideo178KSpec | LmmsEvalSpec,
    Field(discriminator="name"),
]
"""The built-in adapters' spec classes, told apart by `name`: the `[dataset]` tables `engine.config.SweepSpec`
accepts (with those of benchmarks registered later: `register_benchmark`). `engine.datasets.builtin` registers
each of them, in this order."""
