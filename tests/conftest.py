"""Shared fixtures and hooks: an isolated framesweep cache, the tiny checkpoint, the warm engine, the fast tier's guard
(the helpers tests import are in `tests/helpers/`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.specs import small_spec_dict, write_toml


@pytest.fixture(scope="session", autouse=True)
def fs_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every test builds into its own cache (no state from the user's home)."""
    root = Path(os.environ.get("FRAMESWEEP_TEST_CACHE") or tmp_path_factory.mktemp("fscache"))
    os.environ["FRAMESWEEP_CACHE"] = str(root)
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    return root


@pytest.fixture(scope="session")
def tiny_qwen25(fs_cache: Path) -> Path:
    """The tiny random Qwen2.5-VL checkpoint (built once per session)."""
    from engine.backends.tiny import build_tiny_checkpoint

    return build_tiny_checkpoint("qwen2_5_vl")


# ---------------------------------------------------------------------------------------------------
# One warm engine for the suite.
#
# Tests that only need *an* engine of the small spec (not a fresh one) ask for `warm_engine`: the
# first of them runs `framesweep engines up` on the small spec in a cache folder of its own (its
# recorded local cluster), and every one of them runs with FRAMESWEEP_CACHE pointing there, so their
# sweeps join that cluster and reuse the engine exactly as a user's runs do. The tests that prove cold
# start, crash and fault behaviour never ask for it and keep starting their own engines.
#
# The tests that use it run first (`pytest_collection_modifyitems`), and the engine and its cluster
# stop right after the last test that uses it, so it never holds memory beside the later modules'
# engines. Each such test checks afterwards that the warm engine did answer it (its cache was reset
# by the reuse): a settings drift that quietly starts a new engine fails here.
# ---------------------------------------------------------------------------------------------------

WARM_FIXTURE = "warm_engine_cache"  # in the fixture closure of every test that uses the warm engine


@pytest.fixture(scope="session")
def warm_engine_cache(fs_cache: Path, tiny_qwen25: Path, tmp_path_factory: pytest.TempPathFactory):
    """The cache folder whose recorded local cluster runs the small spec's engine (started once)."""
    import subprocess
    import sys

    cache = tmp_path_factory.mktemp("warmcache")
    (cache / "checkpoints").symlink_to(fs_cache / "checkpoints", target_is_directory=True)
    work = tmp_path_factory.mktemp("warmspec")
    spec = write_toml(work / "spec.toml", small_spec_dict(work / "out"))
    env = dict(os.environ, FRAMESWEEP_CACHE=str(cache))
    _WARM["cache"] = cache
    r = subprocess.run([sys.executable, "-m", "engine.cli", "engines", "up", str(spec)], check=False,
                       capture_output=True, text=True, timeout=600, env=env)
    if r.returncode != 0:
        _stop_warm()
        pytest.fail(f"`framesweep engines up` failed (exit {r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}")
    yield cache
    _stop_warm()


_WARM: dict[str, Path | None] = {"cache": None}


def _stop_warm() -> None:
    """Stop the warm engine's cluster (every process of it); a no-op once done."""
    cache = _WARM["cache"]
    if cache is None:
        return
    _WARM["cache"] = None
    import ray

    from engine.backends.warm import engines_down
    from engine.runtime.local_cluster import stop_local_cluster

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FRAMESWEEP_CACHE", str(cache))
        ray.shutdown()  # a test may leave its driver connected
        engines_down()  # as `framesweep engines down`
        stop_local_cluster()  # whatever that left (a no-op after it)


def _warm_cache_resets() -> int:
    """How often the warm engine's caches were reset (once per reuse), asked over Ray."""
    import asyncio

    import ray

    from engine.backends.warm import list_engines
    from engine.runtime.cluster import ensure_ray

    ray.shutdown()  # a test may leave its driver connected
    ensure_ray()
    try:
        (engine,) = asyncio.run(list_engines())
        return int(engine["cache_resets"])
    finally:
        ray.shutdown()


@pytest.fixture
def warm_engine(warm_engine_cache: Path, monkeypatch: pytest.MonkeyPatch):
    """Run the test against the suite's warm engine; fail if the test's sweep did not reuse it."""
    monkeypatch.setenv("FRAMESWEEP_CACHE", str(warm_engine_cache))
    before = _warm_cache_resets()
    yield warm_engine_cache
    assert _warm_cache_resets() > before, "the test started its own engine instead of reusing the warm one"


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    """The tests that use the warm engine run first (in their collected order), then all the others; every test
    that uses the warm engine is an `engine` test."""
    for item in items:
        if WARM_FIXTURE in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.engine)
    items.sort(key=lambda item: WARM_FIXTURE not in getattr(item, "fixturenames", ()))


# ---------------------------------------------------------------------------------------------------
# The fast tier: `pytest -m "not engine"`.
#
# A test that starts a process (a vLLM engine, a Ray cluster, a `framesweep` CLI process, a browser) is an
# `engine` test: its module says so (`pytestmark = pytest.mark.engine`), or it uses the warm engine. The
# marks are checked, not trusted: every process a test starts is seen here (`subprocess.Popen`, which Ray
# and the CLI tests use, and multiprocessing's spawn), and a test not marked `engine` that starts one fails,
# naming the command, so the fast tier stays fast and the mark stays true.
# ---------------------------------------------------------------------------------------------------

_SPAWNED: list[str] = []
_WATCHING = {"on": False}


def _watch_spawns() -> None:
    import multiprocessing.util
    import subprocess

    child, spawnv = subprocess.Popen._execute_child, multiprocessing.util.spawnv_passfds  # type: ignore[attr-defined]

    def execute_child(self, args, *rest, **kw):  # Popen's private signature
        if _WATCHING["on"]:
            _SPAWNED.append(" ".join(map(str, args))[:160] if isinstance(args, list | tuple) else str(args)[:160])
        return child(self, args, *rest, **kw)

    def spawnv_passfds(path, args, passfds):
        if _WATCHING["on"]:
            _SPAWNED.append(" ".join(map(str, args))[:160])
        return spawnv(path, args, passfds)

    subprocess.Popen._execute_child = execute_child  # type: ignore[attr-defined]
    multiprocessing.util.spawnv_passfds = spawnv_passfds


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "engine: starts a process (a vLLM engine, a Ray cluster, a CLI process, a "
                                       "browser); `-m 'not engine'` is the fast tier")
    _watch_spawns()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """Watch the processes a test not marked `engine` starts (its fixtures' set-up and teardown included)."""
    _SPAWNED.clear()
    _WATCHING["on"] = item.get_closest_marker("engine") is None
    try:
        yield
    finally:
        _WATCHING["on"] = False


@pytest.fixture(autouse=True)
def _no_process_unless_marked(request: pytest.FixtureRequest):
    yield
    if _WATCHING["on"] and _SPAWNED:
        pytest.fail(f"{request.node.nodeid} starts a process but is not marked `engine` (add `pytestmark = "
                    f"pytest.mark.engine` to its module): {_SPAWNED[0]}", pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    """After the last test that uses the warm engine (and its fixtures' teardown), stop it."""
    yield
    if _WARM["cache"] is None or WARM_FIXTURE not in getattr(item, "fixturenames", ()):
        return
    later = item.session.items[item.session.items.index(item) + 1:]
    if not any(WARM_FIXTURE in getattr(it, "fixturenames", ()) for it in later):
        _stop_warm()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Leave no Ray connection open into the interpreter's exit: a driver connected to Ray keeps native threads
    (its core worker, gRPC) that the interpreter's finalisation can trip over."""
    import sys

    if "ray" in sys.modules:
        import ray

        if ray.is_initialized():
            ray.shutdown()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Past pytest's own fault handler (it stops at unconfigure): a crash while the interpreter exits prints the
    threads' stacks instead of a bare exit status 139."""
    import faulthandler
    import sys

    faulthandler.enable(file=sys.__stderr__, all_threads=True)
