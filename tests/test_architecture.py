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
    "engine": 0.5,  # the package root: installs compat's torchvision import hook, nothing else
    "engine.frames": 1,
    "engine.config": 2,
    "engine.items": 3,
    "engine.scoring": 3,
    "engine.datasets": 4,
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
    assert violations(graph) == ["engine.frames.plan (layer 1) imports engine.config (layer 2)"]
    assert _cycles(graph) == [["engine.config", "engine.frames.plan", "engine.config"]]
    pkg = tmp_path / "engine"
    (pkg / "sweep").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sweep" / "__init__.py").write_text("")
    (pkg / "sweep" / "x.py").write_text("def f():\n    from engine.cli import app\n")
    assert import_graph(pkg)["engine.sweep.x"] == {"engine.cli"}
