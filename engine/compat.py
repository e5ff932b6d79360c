"""Make the CPU build of vLLM importable beside PyPI's CUDA torchvision.

The CPU vLLM wheel pins a CPU torch, but pip takes torchvision from PyPI, whose
compiled ops are CUDA builds that cannot load. torchvision then fails at import
with ``operator torchvision::nms does not exist`` (transformers imports it for
image utilities; only its pure-Python transforms are used here). When, and only
when, torchvision's compiled library fails to load, we declare the schemas of
the ops that torchvision looks up at import time, so the import succeeds.

The fix must run in every process that may import torchvision (the driver, Ray
workers, vLLM's engine-core subprocess), before torchvision is imported. An
import hook does that lazily; `write_pth()` (run by tools/setup.sh) writes a
``.pth`` file into the environment so every interpreter of it installs the hook.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import logging
import sys
import sysconfig
from pathlib import Path
from typing import Any

__all__ = ["install_import_hook", "patch_torchvision_ops", "write_pth"]

log = logging.getLogger(__name__)

_PTH_NAME = "framesweep_compat.pth"
_state: dict[str, Any] = {"patched": None, "lib": None}

_SCHEMAS = {
    "nms": "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms": "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
}


def _torchvision_lib() -> Path | None:
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        for cand in sorted(Path(loc).glob("_C*.so")):
            return cand
    return None


def patch_torchvision_ops() -> bool:
    """Declare torchvision's op schemas if its compiled library cannot load. Returns True if patched."""
    if _state["patched"] is not None:
        return bool(_state["patched"])
    _state["patched"] = False
    lib_path = _torchvision_lib()
    if lib_path is None:
        return False
    import torch

    try:
        torch.ops.load_library(str(lib_path))
        return False  # a matching build: nothing to do
    except (OSError, RuntimeError) as err:
        log.debug("torchvision ops unavailable (%s); declaring their schemas", err)
    lib = torch.library.Library("torchvision", "DEF")
    for schema in _SCHEMAS.values():
        lib.define(schema)
    _state["lib"] = lib  # keep the registration alive
    _state["patched"] = True
    return True


class _TorchvisionHook(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "torchvision":
            sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _TorchvisionHook)]
            patch_torchvision_ops()
        # the normal finders import it


def install_import_hook() -> None:
    """Patch torchvision lazily, right before its first import in this process."""
    if "torchvision" in sys.modules:
        return
    if not any(isinstance(f, _TorchvisionHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _TorchvisionHook())


def write_pth(site_packages: Path | None = None) -> Path:
    """Write the .pth file that installs the hook in every interpreter of this environment."""
    target = Path(site_packages or sysconfig.get_paths()["purelib"]) / _PTH_NAME
    target.write_text("import engine.compat as _fs_compat; _fs_compat.install_import_hook()\n")
    return target

