"""No dead code in the package: every function, method and class of `engine/` is named somewhere in the package,
the benchmarks or the tools (tests do not count: a function only they call is kept alive by nothing but its test).
The few that are kept all the same are listed below, each with its reason."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCTION = ("engine", "benchmarks", "tools")
REGISTERING = {"property", "staticmethod", "classmethod", "cached_property", "functools.cached_property"}
"""Decorators that do not use what they decorate (any other one registers it: a CLI command, a metric, a family)."""

KEPT = {
    "handleError": "logging.Handler's hook, called by the logging module",
    "write_pth": "called by tools/setup.sh",
    "realised_pixels": "a documented helper: the pixels a budget point sends for a given video size",
    "register_dataset_spec": "the extension point for a user's own dataset table",
    "unregister_dataset_spec": "the extension point's undo (a plugin registered for a while)",
    "register_backend": "the extension point for a user's own backend kind (`ModelSpec.backend` checks the registry)",
    "get_benchmark": "public datasets API: a registered benchmark's source, official score and headline by name",
    "own_rows": "the results package's reader of a directory's own rows, beside `ResultsDir`",
    "trajectory_table": "public metrics API: per-item answer trajectories (the registered metric reads the wide form)",
    "trajectory_wide": "public metrics API: chosen budgets as columns",
    "_replicates": "the pooled bootstrap's replicates, checked against resampling the rows by hand",
    "free_bytes": "what the frame buffer pool holds for reuse (its bounds are checked through it)",
    "reviving": "how many replicas are being revived (the pool's state, as its tests observe it)",
    "healthy": "how many decode actors are in rotation (the pool's state, as its tests observe it)",
}


def _names(tree: ast.AST) -> Counter[str]:
    """Every name a module uses: loaded names, attributes, keyword arguments, names imported under another name;
    the names listed in `__all__` and plain imports (re-exports) do not count."""
    used: Counter[str] = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id != "__all__":
            used[node.id] += 1
        elif isinstance(node, ast.Attribute):
            used[node.attr] += 1
        elif isinstance(node, ast.keyword) and node.arg:
            used[node.arg] += 1
        elif isinstance(node, ast.alias) and node.asname and node.asname != node.name:
            used[node.name.rsplit(".", 1)[-1]] += 1
    return used


def _decorator(d: ast.expr) -> str:
    return ast.unparse(d.func if isinstance(d, ast.Call) else d)


def unused(package: Path, production: list[Path]) -> dict[str, str]:
    """{name: where} of the functions, methods and classes in `package` that no file of `production` names."""
    used: Counter[str] = Counter()
    for path in production:
        used += _names(ast.parse(path.read_text(), str(path)))
    found = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                    and not node.name.startswith("__")
                    and all(_decorator(d) in REGISTERING or _decorator(d).endswith(".setter")
                            for d in node.decorator_list)
                    and not used[node.name]):
                found[node.name] = f"{path.relative_to(package.parent)}:{node.lineno}"
    return found


def test_every_function_of_the_package_is_used_by_the_package() -> None:
    production = [p for d in PRODUCTION for p in (ROOT / d).rglob("*.py")]
    dead = {name: where for name, where in unused(ROOT / "engine", production).items() if name not in KEPT}
    assert dead == {}, "used by no code outside the tests (remove, or keep in KEPT with the reason)"


def test_every_kept_name_is_still_unused_and_exists() -> None:
    """The list stays honest: a name that code now uses, or that is gone, leaves it."""
    production = [p for d in PRODUCTION for p in (ROOT / d).rglob("*.py")]
    assert sorted(unused(ROOT / "engine", production).keys() & KEPT.keys()) == sorted(KEPT)


def test_the_check_sees_a_function_only_a_test_calls(tmp_path: Path) -> None:
    pkg = tmp_path / "engine"
    pkg.mkdir()
    (pkg / "m.py").write_text("import functools\n\ndef used(): ...\n\ndef only_tested(): ...\n\n"
                              "@functools.cache\ndef registered(): ...\n\nclass C:\n    @property\n"
                              "    def shown(self): ...\n\n__all__ = ['only_tested']\n")
    (pkg / "main.py").write_text("from engine.m import only_tested\n\nused()\n")
    assert set(unused(pkg, [pkg / "m.py", pkg / "main.py"])) == {"only_tested", "C", "shown"}
