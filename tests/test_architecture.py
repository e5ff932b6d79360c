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
    "engine.demo": 1.5,  # tiny checkpoints, the synthetic videos: for the demo and the tests, reached at DEMO_EDGES only
    "engine.items": 2,
    "engine.scoring": 2,
    "engine.datasets": 3,
    "engine.config": 4,
    "engine.backends": 5,
    "engine.results": 5,  # beside the backends, neither importing the other: reading results starts no engine
    "engine.metrics": 6,
    "engine.sweep": 7,
    "engine.adaptive": 8,
    "engine.provenance": 9,  # the record the export writes and the report shows, below both
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


DEMO_EDGES = {
    "engine.backends.model_ids": "a `tiny:<family>` model id resolved to its checkpoint, built on first use",
    "engine.datasets.synthetic": "the `synthetic` benchmark's adapter and spec class, registered with the others",
}
"""The only modules of the engine outside `engine.demo` that import it: nothing a real sweep needs does."""


def demo_violations(graph: dict[str, set[str]]) -> list[str]:
    """Imports of the demo package from outside its edges, and imports of the CLI from inside it."""
    def demo(m: str) -> bool:
        return m == "engine.demo" or m.startswith("engine.demo.")

    bad = [f"{src} imports {dep} (only {', '.join(sorted(DEMO_EDGES))} may)" for src, deps in sorted(graph.items())
           if not demo(src) and src not in DEMO_EDGES for dep in sorted(deps) if demo(dep)]
    return bad + [f"{src} (the demo package) imports the CLI ({dep})" for src, deps in sorted(graph.items())
                  if demo(src) for dep in sorted(deps) if dep == "engine.cli" or dep.startswith("engine.cli.")]


def test_only_the_named_edges_import_the_demo_package() -> None:
    """The tiny checkpoints and the synthetic videos are reached from the engine at two edges alone, each named
    with its reason, and the demo package imports no CLI (issue 38: before, the CLI, the sweep's fingerprint and
    the backends' registry each imported the tiny builders)."""
    graph = import_graph()
    assert demo_violations(graph) == []
    assert all(any(d.startswith("engine.demo") for d in graph[edge]) for edge in DEMO_EDGES)  # no stale edge


def test_the_demo_check_catches_a_violation() -> None:
    """A module of a real sweep importing the demo package, and the demo package importing the CLI, are found."""
    graph = {"engine.sweep.fingerprint": {"engine.demo.tiny"}, "engine.demo.tiny": {"engine.cli.progress"},
             "engine.backends.model_ids": {"engine.demo.tiny"}}
    assert demo_violations(graph) == [
        "engine.sweep.fingerprint imports engine.demo.tiny (only engine.backends.model_ids, engine.datasets.synthetic"
        " may)", "engine.demo.tiny (the demo package) imports the CLI (engine.cli.progress)"]


def test_every_module_has_a_layer() -> None:
    for m in import_graph():
        assert layer_of(m)[0], m


def test_no_import_circles() -> None:
    assert _cycles(import_graph()) == []


def test_no_import_against_the_layers() -> None:
    assert violations(import_graph()) == []


def _reached(graph: dict[str, set[str]], start: list[str]) -> set[str]:
    """Every module that `start` imports, directly or through others."""
    seen: set[str] = set()
    todo = list(start)
    while todo:
        for dep in graph.get(todo.pop(), ()):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def test_reading_a_results_directory_never_imports_the_generation_package() -> None:
    """No module of `engine.results`, nor anything it imports on the way, imports `engine.backends`: the
    provenance record imported the checkpoint fingerprint from the backends (and with it the tiny checkpoints'
    builders); the fingerprint is now in `engine.runtime`, the record beside the export."""
    graph = import_graph()
    results = [m for m in graph if layer_of(m)[0] == "engine.results"]
    assert results and sorted(m for m in _reached(graph, results) if layer_of(m)[0] == "engine.backends") == []


SHARD_READERS = {"scan_results", "scan_shards", "scan_table", "checked_shards", "shard_listing", "live_shards",
                 "shard_problem"}
"""The results package's own shard readers: a command reads a results directory through `ResultsDir` only."""
READER_USES = {("engine.adaptive.predictions", "scan_table")}
"""`scan_predictions` reads a predictions folder given on its own (``--predictions DIR``), results/ or not."""


def _imported_names(root: Path = ROOT) -> set[tuple[str, str, str]]:
    """(module, module imported from, name) for every `from engine... import name` in `root`."""
    found = set()
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("engine."):
                found |= {(_module_name(path, root), node.module or "", a.name) for a in node.names}
    return found


def test_a_results_directory_is_read_through_resultsdir_only() -> None:
    """Outside `engine.results` no module imports a shard reader (one listing, footer check or scan of its own):
    every command reads through `ResultsDir`, which checks each footer once; the old public `scan_results` is gone
    from the code, the benchmarks and the tests."""
    bad = sorted((m, name) for m, src, name in _imported_names() if src.startswith("engine.results")
                 and not m.startswith("engine.results") and name in SHARD_READERS and (m, name) not in READER_USES)
    assert bad == []
    here = Path(__file__).resolve().parents[1]
    users = [str(p.relative_to(here)) for folder in ("engine", "benchmarks", "tests") for p in (here / folder).rglob("*.py")
             if p != Path(__file__).resolve() and "scan_results" in p.read_text()]
    assert users == []


def _shard_name_literals(root: Path = ROOT) -> set[str]:
    """Modules holding a string literal (or f-string part) that starts a shard's name, ``part-``."""
    found = set()
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("part-"):
                found.add(_module_name(path, root))
    return found


def test_every_tables_shards_are_named_in_one_place() -> None:
    """Result rows, video statistics and predictions are named by `engine.results.tables` (and listed by the one
    glob of `engine.results.shards`); before, three writers named their shards three ways."""
    assert _shard_name_literals() == {"engine.results.tables", "engine.results.shards"}


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
    (pkg / "sweep" / "y.py").write_text("from engine.results.shards import live_shards\nNAME = f'part-{1}.parquet'\n")
    assert ("engine.sweep.y", "engine.results.shards", "live_shards") in _imported_names(pkg)
    assert _shard_name_literals(pkg) == {"engine.sweep.y"}


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
