"""Benchmark adapters, registered by name (the registry is `engine.datasets.registry`).

An adapter turns a dataset spec into `Item`s (its annotations read whole, then yielded), with the benchmark's
prompt and answer, a version written into every result row, and the benchmark's
official scoring rule. A new adapter is one module that calls `register_adapter`,
imported below.
"""

from __future__ import annotations

from engine.datasets.registry import (
    DatasetAdapter,
    build_adapter,
    get_adapter,
    load_items,
    register_adapter,
    registered_adapters,
)

__all__ = ["DatasetAdapter", "build_adapter", "get_adapter", "load_items", "register_adapter", "registered_adapters"]

# Each adapter module registers itself on import.
from engine.datasets import avsd as _avsd  # noqa: F401
from engine.datasets import llava_video_178k as _llava_video_178k  # noqa: F401
from engine.datasets import mlvu as _mlvu  # noqa: F401
from engine.datasets import mmbench as _mmbench  # noqa: F401
from engine.datasets import mme as _mme  # noqa: F401
from engine.datasets import mmstar as _mmstar  # noqa: F401
from engine.datasets import mvbench as _mvbench  # noqa: F401
from engine.datasets import pope as _pope  # noqa: F401
from engine.datasets import synthetic as _synthetic  # noqa: F401
from engine.datasets import tempcompass as _tempcompass  # noqa: F401
from engine.datasets import video_mmmu as _video_mmmu  # noqa: F401
from engine.datasets import videomme as _videomme  # noqa: F401
from engine.datasets import videomme_v2 as _videomme_v2  # noqa: F401
