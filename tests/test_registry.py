"""`Registry[T]`, the one registry type, and the engine's registries built on it.

Every extension point (families, adapters, benchmarks with their dataset specs, decoders, policies, metrics, tiny
builders, backends) refuses a second entry of a name naming both, and fails an unknown name
listing the known ones.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import pytest
from pydantic import Field

from engine.backends.families import Qwen25VL, get_family, register_family
from engine.backends.kinds import BACKENDS, BackendKind, register_backend
from engine.config import register_dataset_spec
from engine.datasets import get_benchmark
from engine.datasets.registry import get_adapter, register_adapter
from engine.demo.tiny import build_tiny_checkpoint, register_tiny_builder
from engine.frames.decode import get_decoder, register_decoder
from engine.frames.plan import get_policy, register_policy
from engine.metrics.registry import METRICS, register_metric
from engine.registry import Registry
from engine.strict import StrictModel


class Alpha:
    pass


class Beta:
    pass


def test_a_name_registered_twice_is_an_error_naming_both() -> None:
    reg: Registry[type] = Registry("thing")
    reg.register("a", Alpha)
    here = Alpha.__module__
    with pytest.raises(ValueError, match=f"thing 'a' registered twice: {here}:Alpha and {here}:Beta$"):
        reg.register("a", Beta)
    with pytest.raises(ValueError, match="registered twice"):
        reg.register("a", Alpha)  # the same entry again is a second registration too
    assert reg.get("a") is Alpha


def test_an_unknown_name_fails_listing_the_known_ones_sorted() -> None:
    reg: Registry[int] = Registry("thing")
    reg.register("b", 2)
    reg.register("a", 1)
    with pytest.raises(KeyError, match="unknown thing 'c'; known: a, b"):
        reg.get("c")
    with pytest.raises(KeyError, match="unknown thing 'c'"):
        reg["c"]


def test_names_iteration_and_unregister() -> None:
    reg: Registry[int] = Registry("thing", describe=str)
    for name, value in (("b", 2), ("a", 1), ("c", 3)):
        assert reg.register(name, value) == value
    assert list(reg) == ["b", "a", "c"] and reg.names() == ["a", "b", "c"]  # registration order; sorted
    assert reg.items() == [("b", 2), ("a", 1), ("c", 3)] and reg.values() == [2, 1, 3]
    assert "a" in reg and "z" not in reg and len(reg) == 3
    with pytest.raises(ValueError, match="thing 'a' registered twice: 1 and 5"):
        reg.register("a", 5)
    reg.unregister("a")
    reg.unregister("a")  # gone already: nothing
    assert reg.names() == ["b", "c"] and reg.register("a", 5) == 5


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], str]:
    """Write a module `name` with `source` where Python imports from; returns its name."""
    monkeypatch.syspath_prepend(str(tmp_path))
    written: list[str] = []

    def write(name: str, source: str) -> str:
        (tmp_path / f"{name}.py").write_text(source)
        written.append(name)
        return name

    yield write
    for name in written:
        sys.modules.pop(name, None)


def test_a_lazy_entry_is_imported_on_first_get_and_only_once(plugin_dir: Callable[[str, str], str],
                                                             tmp_path: Path) -> None:
    count = tmp_path / "imports.txt"
    module = plugin_dir("fs_lazy_plugin", f"from pathlib import Path\np = Path({str(count)!r})\n"
                                          "p.write_text(p.read_text() + 'x' if p.exists() else 'x')\n"
                                          "class Plugin:\n    pass\n")
    reg: Registry[type] = Registry("plugin")
    reg.register("p", f"{module}:Plugin")
    assert "p" in reg and reg.names() == ["p"] and not count.exists()  # registering imports nothing
    first = reg.get("p")
    assert first.__name__ == "Plugin" and first.__module__ == module and count.read_text() == "x"
    sys.modules.pop(module)  # were the registry to import again, the module would run again
    assert reg.get("p") is first and count.read_text() == "x"
    with pytest.raises(ValueError, match=f"plugin 'p' registered twice: {module}:Plugin and {Alpha.__module__}:Alpha$"):
        reg.register("p", Alpha)


def test_a_lazy_entry_whose_module_fails_names_it(plugin_dir: Callable[[str, str], str]) -> None:
    broken = plugin_dir("fs_broken_plugin", "raise RuntimeError('no such codec')\n")
    reg: Registry[type] = Registry("decoder")
    reg.register("broken", f"{broken}:Decoder")
    reg.register("missing", "fs_no_such_module:Decoder")
    plugin_dir("fs_plain_plugin", "X = 1\n")
    reg.register("no_attr", "fs_plain_plugin:Decoder")
    with pytest.raises(ImportError, match=r"decoder 'broken': cannot load fs_broken_plugin:Decoder "
                                          r"\(RuntimeError: no such codec\)") as err:
        reg.get("broken")
    assert isinstance(err.value.__cause__, RuntimeError)
    with pytest.raises(ImportError, match=r"decoder 'missing': cannot load fs_no_such_module:Decoder "
                                          r"\(ModuleNotFoundError: No module named 'fs_no_such_module'\)"):
        reg.get("missing")
    with pytest.raises(ImportError, match=r"decoder 'no_attr': cannot load fs_plain_plugin:Decoder \(AttributeError"):
        reg.get("no_attr")
    assert reg.names() == ["broken", "missing", "no_attr"]  # still there, still lazy: a later get tries again
    with pytest.raises(ValueError, match="a lazy entry is 'module:attr'"):
        reg.register("bad", "no_colon")


def test_a_lazy_module_may_register_its_entry_itself(plugin_dir: Callable[[str, str], str]) -> None:
    """A lazy entry naming a module whose decorator registers the same name (as decoders do) is one entry."""
    reg: Registry[type] = Registry("decoder")
    sys.modules["fs_test_registry_holder"] = type(sys)("fs_test_registry_holder")
    sys.modules["fs_test_registry_holder"].reg = reg  # type: ignore[attr-defined]
    try:
        module = plugin_dir("fs_self_registering", "from fs_test_registry_holder import reg\n"
                                                   "@reg.decorator('mine')\nclass Mine:\n    pass\n")
        reg.register("mine", f"{module}:Mine")
        assert reg.get("mine").__name__ == "Mine" and len(reg) == 1
    finally:
        sys.modules.pop("fs_test_registry_holder")


class _Synthetic2(StrictModel):
    name: Literal["synthetic"] = Field(description="Adapter name.")


def _noop(*args: object) -> None:
    return None


# each engine registry: (what registers a second entry under a built-in name, what looks up an unknown name)
REGISTRIES: dict[str, tuple[Callable[[], object], Callable[[], object], str]] = {
    "family": (lambda: register_family("qwen2_5_vl")(Qwen25VL), lambda: get_family("nope"), "model family"),
    "adapter": (lambda: register_adapter("synthetic")(_noop), lambda: get_adapter("nope"), "dataset"),
    "benchmark": (lambda: register_dataset_spec(_Synthetic2), lambda: get_benchmark("nope"), "benchmark"),
    "decoder": (lambda: register_decoder("pyav")(Alpha), lambda: get_decoder("nope"), "decoder"),
    "policy": (lambda: register_policy("uniform")(_noop), lambda: get_policy("nope"), "sampling policy"),
    "metric": (lambda: register_metric(METRICS.get("accuracy")), lambda: METRICS.get("nope"), "metric"),
    "tiny builder": (lambda: register_tiny_builder("qwen2_5_vl")(_noop), lambda: build_tiny_checkpoint("nope"),
                     "tiny checkpoint builder"),
    "backend": (lambda: register_backend("vllm", BackendKind(_noop)),  # type: ignore[arg-type]
                lambda: BACKENDS.get("nope"), "backend"),
}


@pytest.mark.parametrize("which", list(REGISTRIES))
def test_every_engine_registry_refuses_a_duplicate_and_lists_the_known(which: str) -> None:
    import engine.metrics  # noqa: F401 - registers the built-in metrics

    duplicate, unknown, kind = REGISTRIES[which]
    with pytest.raises(ValueError, match=f"^{kind} '[a-z0-9_]+' registered twice: .+ and .+"):
        duplicate()
    with pytest.raises(KeyError, match=f"unknown {kind} 'nope'; known: [a-z]"):
        unknown()


def test_engines_start_every_model_through_the_backend_registry(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    """`start_backends` builds, starts and reports each model by its backend's registered kind (here a
    stand-in for "openai"), and starts Ray only for a kind whose engines live in the cluster."""
    import asyncio

    from engine.backends.base import BackendBase
    from engine.config import parse_spec
    from engine.sweep import engines

    class Stub(BackendBase):
        name = "stub"

    built: list[tuple[str, bool]] = []
    started: list[tuple[str, BackendBase]] = []

    async def build(m, detached):  # type: ignore[no-untyped-def]
        built.append((m.id, detached))
        return Stub()

    async def report(model_id, backend):  # type: ignore[no-untyped-def]
        started.append((model_id, backend))

    monkeypatch.setattr(engines, "ensure_ray", lambda *a, **k: pytest.fail("Ray started for a served model"))
    original = BACKENDS.get("openai")
    BACKENDS.unregister("openai")
    register_backend("openai", BackendKind(build, started=report))
    try:
        spec = parse_spec({"sweep_id": "t", "store": {"out_dir": str(tmp_path)},
                           "dataset": {"name": "synthetic", "n_videos": 1}, "budgets": [{"frames": 0}],
                           "models": [{"id": m, "family": "qwen2_5_vl", "path": "served", "backend": "openai",
                                       "http": {"base_url": "http://127.0.0.1:9"}} for m in ("a", "b")]})
        backends = asyncio.run(engines.start_backends(spec, detached=True))
    finally:
        BACKENDS.unregister("openai")
        register_backend("openai", original)
    assert built == [("a", True), ("b", True)]
    assert [mid for mid, _ in started] == ["a", "b"] and all(isinstance(b, Stub) for b in backends.values())
    assert [backends[mid] for mid, _ in started] == [b for _, b in started]
