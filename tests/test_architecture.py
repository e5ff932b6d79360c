"""The layering of `engine/`: no import circles, no import against the layers (ARCHITECTURE.md).

Walks every module's imports (top-level and inside functions alike: an import hidden in a
function is still a dependency) and checks them against the layer table below.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "engine"

# Lower layers never import higher ones; a module imports its own package freely (but not in a circle).
LAYERS: dict[str, float] = {
    "engine.compat": 0,
    "engine.runtime": 0,
    "engine.registry": 0,  # the one registry type (`Registry[T]`) every extension point is an instance of
    "engine": 0.5,  # the package root: installs compat's torchvision import hook, nothing else
    "engine.frames": 1,
    "engine.strict": 1,  # StrictModel: the pydantic base of the spec's tables and of the adapters' spec classes
    "engine.items": 2,
    "engine.scoring": 2,
    "engine.datasets": 3,
    "engine.config": 4,
    "engine.backends": 5,
    "engine.results": 6,
    "engine.metrics": 7,
    "engine.sweep": 8,
    "engine.adaptive": 9,
    "engine.report": 10,
    "engine.export": 10,
    "engine.cli": 11,
    "engine.__main__": 12,  # `python -m engine`: runs the CLI, like the console script
}


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str, root: Path) -> bool:
    rel = Path(*name.split("."))
    return (root.parent / rel).with_suffix(".py").exists() or (root.parent / rel / "__init__.py").exists()


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """{module: engine modules it imports}; `from pkg import sub` counts as importing `pkg.sub`."""
    graph: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        name = _module_name(path, root)
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.split(".")[0] == "engine"}
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "engine":
                subs = {f"{node.module}.{a.name}" for a in node.names if _is_module(f"{node.module}.{a.name}", root)}
                deps |= subs or {node.module}
        graph[name] = deps - {name}
    return graph


def layer_of(module: str) -> tuple[str, float]:
    """The layer table's entry for a module: its longest listed prefix."""
    best = max((k for k in LAYERS if module == k or module.startswith(k + ".")), key=len)
    return best, LAYERS[best]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                found.append([*stack[stack.index(d):], d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return found


def violations(graph: dict[str, set[str]]) -> list[str]:
    """Imports against the layers: from a lower layer up, or across packages of one layer."""
    bad = []
    for src, deps in graph.items():
        src_pkg, src_rank = layer_of(src)
        for dep in deps:
            dep_pkg, dep_rank = layer_of(dep)
            if dep_pkg == src_pkg:
                continue
            if dep_rank >= src_rank:
                bad.append(f"{src} (layer {src_rank}) imports {dep} (layer {dep_rank})")
    return sorted(bad)


def test_every_module_has_a_layer() -> None:
    for m in import_graph():
        assert layer_of(m)[0], m


def test_no_import_circles() -> None:
    assert _cycles(import_graph()) == []


def test_no_import_against_the_layers() -> None:
    assert violations(import_graph()) == []


def test_the_checks_catch_what_they_should(tmp_path: Path) -> None:
    """The walker itself: an upward import and a circle are found (so the checks above can fail)."""
    graph = {"engine.frames.plan": {"engine.config"}, "engine.config": {"engine.frames.plan"}}
    assert violations(graph) == ["engine.frames.plan (layer 1) imports engine.config (layer 4)"]
    assert _cycles(graph) == [["engine.config", "engine.frames.plan", "engine.config"]]
    pkg = tmp_path / "engine"
    (pkg / "sweep").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sweep" / "__init__.py").write_text("")
    (pkg / "sweep" / "x.py").write_text("def f():\n    from engine.cli import app\n")
    assert import_graph(pkg)["engine.sweep.x"] == {"engine.cli"}


def test_each_dataset_spec_class_is_beside_its_adapter() -> None:
    """A built-in `[dataset]` table's spec class is defined in its adapter's module (one place per benchmark)."""
    from typing import get_args

    from engine.datasets import DatasetSpec, get_adapter

    classes = get_args(get_args(DatasetSpec)[0])
    names = [get_args(cls.model_fields["name"].annotation)[0] for cls in classes]
    for name, cls in zip(names, classes, strict=True):
        assert cls.__module__ == get_adapter(name).__module__ == f"engine.datasets.{name}", name


def test_each_built_in_dataset_table_is_a_registered_benchmark() -> None:
    """The spec's static `[dataset]` union and the benchmark registry hold the same spec classes, in one order:
    a built-in benchmark left out of either would be half there."""
    from typing import get_args

    from engine.datasets import BENCHMARKS, DatasetSpec

    assert list(get_args(get_args(DatasetSpec)[0])) == [b.spec for b in BENCHMARKS.values()]


NO_NUMBERS_FOR_PEOPLE = ("runtime", "metrics")
"""Packages that hold no number format for people: rates as points, ``n/a``, a number to so many places are the
presentation layer's (`engine.report.cells`); a metric gives typed cells (`engine.metrics.sections`)."""
_FORMATTERS = {"points", "pct", "_pts", "num", "score_text", "percent"}


def _people_numbers(path: Path, *, places: bool) -> list[str]:
    """Where `path` formats a number for people: a number formatter defined, ``n/a`` written, a fraction times
    100 in an f-string, or (with `places`) a number to so many places or grouped by thousands."""
    hits = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.FunctionDef) and node.name in _FORMATTERS:
            hits.append(f"{path.name}:{node.lineno} defines {node.name}()")
        elif isinstance(node, ast.Constant) and node.value == "n/a":
            hits.append(f"{path.name}:{node.lineno} writes 'n/a'")
        elif isinstance(node, ast.FormattedValue):
            times_100 = any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult)
                            and 100 in (getattr(n.left, "value", None), getattr(n.right, "value", None))
                            for n in ast.walk(node.value))
            spec = ast.unparse(node.format_spec) if node.format_spec is not None else ""
            if times_100 or (places and any(mark in spec for mark in (".", ",", "%"))):
                hits.append(f"{path.name}:{node.lineno} formats a number ({ast.unparse(node)[:40]})")
    return hits


def test_numbers_for_people_are_formatted_in_the_presentation_layer() -> None:
    hits = [h for pkg in NO_NUMBERS_FOR_PEOPLE for p in sorted((ROOT / pkg).rglob("*.py"))
            for h in _people_numbers(p, places=pkg == "metrics")]
    assert hits == []


def test_the_number_check_finds_a_formatter(tmp_path: Path) -> None:
    """The check itself: the old `runtime.output.points` and a metric's pre-formatted cell are found."""
    (tmp_path / "output.py").write_text('def points(v):\n    return "n/a" if v is None else f"{100 * v:.1f}"\n')
    (tmp_path / "flows.py").write_text('row = [f"{net:+.1f}", f"{cost:,.0f}"]\n')
    assert len(_people_numbers(tmp_path / "output.py", places=False)) == 3
    assert len(_people_numbers(tmp_path / "flows.py", places=True)) == 2
    assert _people_numbers(tmp_path / "flows.py", places=False) == []
