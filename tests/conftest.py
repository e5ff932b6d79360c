"""Shared fixtures and hooks: an isolated framesweep cache, the tiny checkpoint, the warm engine, the fast tier's guard
(the helpers tests import are in `tests/helpers/`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import ci_parts
from helpers.bytecode import compile_package
from helpers.specs import small_spec_dict, write_toml

SHARED_CHECKPOINTS = "FRAMESWEEP_TEST_CHECKPOINTS"  # the run's one folder of tiny checkpoints


@pytest.fixture(scope="session", autouse=True)
def fs_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every test builds into its own cache (no state from the user's home). Its tiny checkpoints are one folder
    for the whole run, shared by the `-n` workers and the pytest processes tests start (each family is built
    once; `build_tiny_checkpoint` holds a lock while it builds)."""
    root = Path(os.environ.get("FRAMESWEEP_TEST_CACHE") or tmp_path_factory.mktemp("fscache"))
    os.environ["FRAMESWEEP_CACHE"] = str(root)
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    if not (root / "checkpoints").exists():
        # under xdist the base temp folder is per worker; its parent is this run's
        run = tmp_path_factory.getbasetemp()
        run = run.parent if os.environ.get("PYTEST_XDIST_WORKER") else run
        shared = Path(os.environ.get(SHARED_CHECKPOINTS) or run / "checkpoints")
        shared.mkdir(parents=True, exist_ok=True)
        root.mkdir(parents=True, exist_ok=True)
        (root / "checkpoints").symlink_to(shared, target_is_directory=True)
        os.environ[SHARED_CHECKPOINTS] = str(shared)
    return root


@pytest.fixture(scope="session")
def tiny_qwen25(fs_cache: Path) -> Path:
    """The tiny random Qwen2.5-VL checkpoint (built once per session)."""
    from engine.demo.tiny import build_tiny_checkpoint

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


def _warm_cache_resets(then_disconnect: bool) -> int:
    """How often the warm engine's caches were reset (once per reuse), asked over Ray from this process joined to the
    warm cluster (a driver's join costs the cluster about 3 CPU-s: one is kept from the check before a test through
    the test, whose own sweeps then reuse it, to the check after it)."""
    import asyncio

    import ray

    from engine.backends.warm import list_engines
    from engine.runtime.cluster import ensure_ray, ray_session
    from engine.runtime.local_cluster import recorded_cluster

    warm = recorded_cluster()
    if ray.is_initialized() and (warm is None or ray_session().get("address") != warm["address"]):
        ray.shutdown()  # a test left its driver connected to another cluster
    ensure_ray()
    try:
        (engine,) = asyncio.run(list_engines())
        return int(engine["cache_resets"])
    finally:
        if then_disconnect:
            ray.shutdown()


@pytest.fixture
def warm_engine(warm_engine_cache: Path, monkeypatch: pytest.MonkeyPatch):
    """Run the test against the suite's warm engine; fail if the test's sweep did not reuse it."""
    monkeypatch.setenv("FRAMESWEEP_CACHE", str(warm_engine_cache))
    before = _warm_cache_resets(then_disconnect=False)
    yield warm_engine_cache
    assert _warm_cache_resets(then_disconnect=True) > before, \
        "the test started its own engine instead of reusing the warm one"


# ---------------------------------------------------------------------------------------------------
# Two streams: `pytest -n 2` (the README's test command, pytest-xdist).
#
# Most of the suite's time goes to waiting on processes (engines starting, deadlines, servers), so two
# workers nearly halve it on 2 cores. The unit a worker takes (`_Units`, the scheduler this conftest gives
# xdist) is a module, except that every module with a test that uses the warm engine (WARM_MODULES,
# checked at collection) is in one unit: one worker runs them all, so the warm engine starts once and
# stops after its last test, as in a serial run. A module-scoped engine starts once. Units are queued in
# collection order and a worker takes the next one when it runs low, so the order below is a
# longest-first queue: the warm unit, the longest engine modules (LONGEST, measured, longest first), the
# other engine modules, then the fast tier. Without `-n` the same order runs serially.
# ---------------------------------------------------------------------------------------------------

WARM_MODULES = frozenset({  # every module with a test that uses the warm engine
    "tests/adaptive/test_adaptive.py",
    "tests/adaptive/test_predictor_178k.py",
    "tests/adaptive/test_predictor_choice.py",
    "tests/adaptive/test_predictor_online.py",
    "tests/backends/test_openai_http.py",
    "tests/backends/test_vllm_actor.py",
    "tests/e2e/test_checkpoint_study_e2e.py",
    "tests/e2e/test_lmms_bridge_e2e.py",
    "tests/e2e/test_lmms_image_e2e.py",
    "tests/e2e/test_several_datasets.py",
    "tests/e2e/test_sweep_e2e.py",
    "tests/frames/test_data_plane.py",
    "tests/sweep/test_images_and_subtitles_e2e.py",
    "tests/test_export.py",
})
LONGEST = (  # the engine modules that take longest (seconds measured on 2 cores), longest first
    "tests/sweep/test_engine_faults.py",  # ~150
    "tests/benchmarks/test_benchmarks.py",  # ~120
    "tests/e2e/test_lmms_parity.py",  # ~80
    "tests/e2e/test_two_nodes.py",  # ~55
    "tests/e2e/test_audit_study_seen.py",  # ~55
    "tests/adaptive/test_adaptive_faults.py",  # ~45
    "tests/cli/test_cli_run_observed.py",  # ~45
    "tests/runtime/test_gpu_placement_isolated.py",  # ~35
)


def _module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _uses_warm(item: pytest.Item) -> bool:
    return WARM_FIXTURE in getattr(item, "fixturenames", ())


_SCHEDULE_PROBLEM: dict[str, str] = {}  # a stale list above: the tests that use the warm engine fail, saying so


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    """Every test that uses the warm engine is an `engine` test. Order: the modules with a test that uses the warm
    engine (whole, so that a module-scoped fixture starts once), the LONGEST modules, the other engine modules,
    the fast tier (each in collected order). The lists above are checked: a listed module that does not exist,
    or a module using the warm engine that WARM_MODULES does not name, fails every test that uses the warm
    engine (a collection error would be lost in a worker)."""
    missing = sorted(m for m in (*WARM_MODULES, *LONGEST) if not (config.rootpath / m).is_file())
    unlisted = sorted({_module_of(it.nodeid) for it in items if _uses_warm(it)} - WARM_MODULES)
    if missing or unlisted:
        _SCHEDULE_PROBLEM["message"] = (f"tests/conftest.py's lists are stale: modules that do not exist: {missing}; "
                                        f"modules that use the warm engine, to add to WARM_MODULES: {unlisted}")

    def rank(item: pytest.Item) -> int:
        module = _module_of(item.nodeid)
        if module in WARM_MODULES:  # (every module using the warm engine, checked above) runs whole: its
            # module-scoped fixtures start once
            return 0
        if module in LONGEST:
            return 1 + LONGEST.index(module)
        return 1 + len(LONGEST) + (item.get_closest_marker("engine") is None)

    for item in items:
        if _uses_warm(item):
            item.add_marker(pytest.mark.engine)
    items.sort(key=rank)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if "message" in _SCHEDULE_PROBLEM and _uses_warm(item):
        pytest.fail(_SCHEDULE_PROBLEM["message"], pytrace=False)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook (the suite also runs without it)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """With `-n N` (and no other `--dist`), schedule by `_Units` in collection order."""
    if config.getvalue("dist") != "load":
        return None  # the user asked for another distribution
    from xdist.scheduler import LoadScopeScheduling

    class _Units(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = _module_of(nodeid)
            return "warm" if module in WARM_MODULES else module

    config.option.loadscopereorder = False  # keep this conftest's order
    return _Units(config, log)


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
    if not config.pluginmanager.is_registered(ci_parts):  # a needed part's skip fails in CI; the skip summary
        config.pluginmanager.register(ci_parts, "framesweep-ci-parts")
    _watch_spawns()
    if not hasattr(config, "workerinput"):  # once per run (the controller, or a run without -n)
        compile_package(config.rootpath / "engine")  # once, for every process the run starts


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """Watch the processes a test not marked `engine` starts (its fixtures' set-up and teardown included); with
    FRAMESWEEP_TEST_CPU set, measure the machine's CPU while it runs (below)."""
    import time

    _SPAWNED.clear()
    _WATCHING["on"] = item.get_closest_marker("engine") is None
    measure = bool(os.environ.get("FRAMESWEEP_TEST_CPU"))
    cpu, wall = (_machine_busy_s(), time.monotonic()) if measure else (0.0, 0.0)
    try:
        yield
    finally:
        _WATCHING["on"] = False
        if measure:
            _CPU[item.nodeid] = (_machine_busy_s() - cpu, time.monotonic() - wall)


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
    if _WARM["cache"] is None or not _uses_warm(item):
        return
    later = item.session.items[item.session.items.index(item) + 1:]
    if not any(_uses_warm(it) for it in later):
        _stop_warm()


# ---------------------------------------------------------------------------------------------------
# Where the suite's CPU goes: `FRAMESWEEP_TEST_CPU=cpu.json pytest -n 0` writes, per test and per module,
# the CPU seconds the whole machine spent while it ran (every process: engines, Ray, CLI processes) and
# its wall time, most CPU first. The suite's time on 2 cores is bounded by that CPU, not by waiting; a
# serial run attributes it cleanly (with `-n 2` the other worker's CPU is counted too).
# ---------------------------------------------------------------------------------------------------

_CPU: dict[str, tuple[float, float]] = {}


def _machine_busy_s() -> float:
    """CPU seconds the machine has been busy since boot (/proc/stat: all but idle, iowait and steal)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4] - ticks[7]) / os.sysconf("SC_CLK_TCK")


def _write_cpu_report(path: str) -> None:
    import json

    modules: dict[str, list[float]] = {}
    for nodeid, (cpu, wall) in _CPU.items():
        total = modules.setdefault(_module_of(nodeid), [0.0, 0.0])
        total[0] += cpu
        total[1] += wall

    def table(rows):
        return {k: {"cpu_s": round(c, 1), "wall_s": round(w, 1)} for k, (c, w) in
                sorted(rows, key=lambda kv: -kv[1][0])}

    Path(path).write_text(json.dumps({"total_cpu_s": round(sum(c for c, _ in _CPU.values()), 1),
                                      "modules": table(modules.items()), "tests": table(_CPU.items())}, indent=1))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Leave no Ray connection open into the interpreter's exit: a driver connected to Ray keeps native threads
    (its core worker, gRPC) that the interpreter's finalisation can trip over."""
    import sys

    if os.environ.get("FRAMESWEEP_TEST_CPU") and _CPU:
        _write_cpu_report(os.environ["FRAMESWEEP_TEST_CPU"])
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
