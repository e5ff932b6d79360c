"""Starting or joining a Ray cluster.

Which cluster: `--address` (the spec's `ray_address`), else `RAY_ADDRESS` (as `ray.init()` reads it, e.g.
under `ray job submit`), else the local cluster `framesweep engines up` recorded, else a new local one
(loopback only; its dashboard with `dashboard=True`).

What the cluster's workers print (the engine actors' vLLM lines among it) comes to the driver
(`log_to_driver`) and goes to the log, logger `engine.runtime.workers` at INFO (a run's log file), never
to the terminal; `ray_session()` says where Ray keeps its own logs.

A local cluster this process started is watched (`watching_cluster`): when its GCS or raylet dies (`ray stop`,
the OOM killer), Ray's driver would wait 60 s for the GCS and then end the process with exit 1 and one line of
its own; the watcher notices within a fraction of a second, so the run can commit what finished and say what
happened (`cluster_lost`, `ClusterLostError`). Ray's native failure signal handler is left out of this process:
it printed a 10-line C++ stack for every SIGTERM, a plain stop the run handles (Python's `faulthandler` prints
the driver's stack on a real crash instead).
"""

from __future__ import annotations

import contextlib
import faulthandler
import logging
import os
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any, TypeVar

from engine.runtime.local_cluster import local_cluster_env, recorded_cluster
from engine.runtime.reaper import Reaper
from engine.runtime.secrets import register_secret_env

__all__ = ["WORKER_LOGGER", "ClusterLostError", "cluster_lost", "ensure_ray", "ray_session", "watching_cluster"]

log = logging.getLogger(__name__)

WORKER_LOGGER = "engine.runtime.workers"
"""The logger that carries every line the cluster's workers print (INFO)."""
_workers_log = logging.getLogger(WORKER_LOGGER)
_FORWARD = "framesweep_worker_logs"
_session: dict[str, Any] = {}

WATCH_S = 0.25
"""How often the watcher looks at the local cluster's GCS and raylet."""
_lost: dict[str, str] = {}  # "what": what of the local cluster is gone, once it is
_listeners: list[Callable[[], None]] = []

_LOCK = threading.Lock()
_KEEPER_LOCK = threading.Lock()
_WATCH_LOCK = threading.Lock()
_keeper: queue.Queue[tuple[Callable[[], Any], Future[Any]]] | None = None
T = TypeVar("T")


def _on_keeper(fn: Callable[[], T]) -> T:
    """Run `fn` on a daemon thread that lives as long as the process.

    Ray starts a local instance's processes (GCS, raylet, workers) with PR_SET_PDEATHSIG, which on
    Linux kills them when the *thread* that started them ends, not the process. A local cluster started
    from a short-lived thread (asyncio's `to_thread` workers end with their event loop) would die with
    it, and the driver's exit-time `ray.shutdown` would then wait out its timeouts on a dead cluster.
    """
    global _keeper
    with _KEEPER_LOCK:
        if _keeper is None:
            jobs: queue.Queue[tuple[Callable[[], Any], Future[Any]]] = queue.Queue()

            def serve() -> None:
                while True:
                    job, done = jobs.get()
                    try:
                        done.set_result(job())
                    except BaseException as err:  # noqa: BLE001 - handed to the caller
                        done.set_exception(err)

            threading.Thread(target=serve, name="ray-keeper", daemon=True).start()
            _keeper = jobs
    done: Future[T] = Future()
    _keeper.put((fn, done))
    return done.result()


def ensure_ray(address: str | None = None, *, num_cpus: int | None = None,
               object_store_mb: int | None = 1024, dashboard: bool = False) -> None:
    """Join the cluster at `address`, else the one `RAY_ADDRESS` names, else the persistent local cluster
    `framesweep engines up` recorded (`engine.runtime.local_cluster`), else start a local one bound to
    loopback (with Ray's dashboard when `dashboard`).

    A local instance keeps all its traffic on 127.0.0.1. Joining a real cluster
    needs its auth token (`RAY_AUTH_TOKEN` or `RAY_AUTH_TOKEN_PATH`) unless the
    cluster runs with `RAY_AUTH_MODE=disabled`; the token is never logged.
    Safe to call from a worker thread (a sweep starts Ray while it reads its dataset).
    """
    import ray

    register_secret_env("RAY_AUTH_TOKEN")  # never printed or stored, wherever it shows up
    with _LOCK:  # engines and decode actors may ask for the cluster at once, from two threads
        if not ray.is_initialized():
            _init(ray, address, num_cpus, object_store_mb, dashboard)


def ray_session() -> dict[str, Any]:
    """The cluster this process joined: `address`, `how` (the --address/ray_address, RAY_ADDRESS, the local
    cluster `engines up` recorded, or a new local one), `logs` (Ray's session log folder on the head node) and
    `dashboard` (its URL, or None); {} before Ray started."""
    return dict(_session)


def _init(ray: Any, address: str | None, num_cpus: int | None, object_store_mb: int | None, dashboard: bool) -> None:
    if threading.current_thread() is not threading.main_thread():
        logging.getLogger("ray._private.worker").addFilter(_no_sigterm_notice)
    _no_failure_signal_handler()
    forward = _can_forward()
    _session.clear()
    _lost.clear()
    if address or os.environ.get("RAY_ADDRESS"):
        how = "address" if address else "RAY_ADDRESS"
        address = address or os.environ["RAY_ADDRESS"]
        log.info("joining Ray cluster at %s (%s)", address, how)
        _joined(ray.init(address=address, log_to_driver=forward), how, forward)
        return
    recorded = recorded_cluster()
    _local_settings()
    if recorded is not None:
        log.info("joining the local Ray cluster at %s (started by `framesweep engines up`)", recorded["address"])
        _joined(ray.init(address=recorded["address"], log_to_driver=forward, configure_logging=False), "engines up",
                forward)
        return
    started: list[Any] = []

    def start() -> None:
        started.append(ray.init(
            address="local",  # a new instance, even where `ray start` left a cluster address behind
            num_cpus=num_cpus,
            include_dashboard=dashboard,
            object_store_memory=object_store_mb * 1024 * 1024 if object_store_mb else None,
            log_to_driver=forward,
            configure_logging=False,
        ))

    # what Ray's processes start lives on after a SIGKILLed driver: the reaper ends it. It starts before Ray
    # does, so that a driver killed while Ray starts leaves nothing either
    reaper = _begin_reaper()
    try:  # the processes of a new instance live as long as the thread that starts them: the main thread, or
        # else the keeper thread (see `_on_keeper`)
        if threading.current_thread() is threading.main_thread():
            start()
        else:
            _on_keeper(start)
    except BaseException:
        if reaper is not None:
            reaper.abort()  # what the failed start left is stopped
        raise
    _joined(started[0] if started else None, "local", forward)
    _watch(ray)
    if reaper is not None:
        try:
            reaper.attach(ray)
        except Exception as err:  # noqa: BLE001 - it still knows the session by name
            log.warning("could not hand Ray's processes to the reaper (%s: %s)", type(err).__name__, err)


def _joined(context: Any, how: str, forward: bool) -> None:
    """Record the session (`ray_session`) and send the workers' output to the log instead of the terminal."""
    if forward:
        _forward_worker_logs()
    info = getattr(context, "address_info", None) if context is not None else None  # (`len(context)` warns)
    _session.update(how=how, address=info.get("address") if isinstance(info, dict) else None, logs=_logs_dir(),
                    dashboard=_dashboard_url(context))
    log.info("Ray session: %s", _session)


def _logs_dir() -> str | None:
    try:
        from ray._private import worker

        node = worker._global_node
        return str(node.get_logs_dir_path()) if node is not None else None
    except Exception:  # noqa: BLE001 - a fact for the user, never a reason to fail
        return None


def _dashboard_url(context: Any) -> str | None:
    url = getattr(context, "dashboard_url", None) if context is not None else None
    return f"http://{url}" if url and not str(url).startswith("http") else (url or None)


def _dispatcher() -> Any:
    """Ray's driver-side dispatcher of worker output (private API; None where this Ray has none)."""
    try:
        from ray._private.ray_logging import global_worker_stdstream_dispatcher
    except ImportError:
        return None
    return global_worker_stdstream_dispatcher if hasattr(global_worker_stdstream_dispatcher, "remove_handler") \
        else None


def _can_forward() -> bool:
    """Whether the workers' output can be taken off the terminal: only then does the driver ask Ray for it."""
    return _dispatcher() is not None


def _forward_worker_logs() -> None:
    """Replace Ray's printing of worker output (to this process's stdout/stderr) by the log."""
    dispatcher = _dispatcher()
    dispatcher.remove_handler("ray_print_logs")
    dispatcher.remove_handler(_FORWARD)
    dispatcher.add_handler(_FORWARD, _log_worker_lines)


def _log_worker_lines(batch: dict[str, Any]) -> None:
    """One batch of a worker's output lines, each logged at INFO with the worker's name and pid (the autoscaler's
    periodic status report, which Ray itself does not print either, is left out)."""
    if batch.get("pid") == "autoscaler":
        return
    who = batch.get("actor_name") or batch.get("task_name") or "worker"
    where = f"({who} pid={batch.get('pid')}{', ip=' + str(batch['ip']) if batch.get('ip') else ''})"
    for line in batch.get("lines") or ():
        if line.strip():
            _workers_log.info("%s %s", where, line.rstrip())


def _begin_reaper() -> Reaper | None:
    try:
        return Reaper.begin()
    except Exception as err:  # noqa: BLE001 - a run never fails for want of its cleanup
        log.warning("could not start the process reaper (%s: %s): a killed driver leaves Ray's agents running "
                    "for a while", type(err).__name__, err)
        return None


def _no_sigterm_notice(record: logging.LogRecord) -> bool:
    """Ray notes that it sets no SIGTERM handler off the main thread; the sweep installs its own."""
    return not str(record.msg).startswith("SIGTERM handler is not set")


def _local_settings() -> None:
    """The settings of a local cluster, in this process, before Ray reads them."""
    # Token authentication stays on for a local instance (Ray's default), but said explicitly, so Ray does not
    # print its notice on every run; RAY_AUTH_MODE=disabled set by the user still wins.
    if "RAY_AUTH_MODE" not in os.environ:
        os.environ["RAY_AUTH_MODE"] = local_cluster_env({})["RAY_AUTH_MODE"]
        from ray._raylet import Config  # type: ignore[attr-defined]  # (ray's _raylet stub lists no Config)

        Config.initialize("")  # Ray caches its config at import (vLLM may have imported it): refresh it
    # Keep a local instance on 127.0.0.1 (on Linux Ray otherwise advertises the interface address).
    # Ray reads this at import; vLLM may have imported ray already, so set the constant too.
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    if os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] in ("0", "false", "False"):
        from ray._private import ray_constants

        ray_constants.ENABLE_RAY_CLUSTER = False


def _no_failure_signal_handler() -> None:
    """Keep Ray's native failure signal handler (absl's) out of this process, before Ray starts its core worker
    here: it printed a C++ stack dump for every SIGTERM before the run's own clean stop. The cluster's workers keep
    theirs; the driver's crash stacks come from Python's `faulthandler`. RAY_DISABLE_FAILURE_SIGNAL_HANDLER set by
    the user wins."""
    if "RAY_DISABLE_FAILURE_SIGNAL_HANDLER" in os.environ:
        return
    from ray._private import ray_constants

    ray_constants.RAY_DISABLE_FAILURE_SIGNAL_HANDLER = True  # read when the core worker starts
    if not faulthandler.is_enabled():
        with contextlib.suppress(Exception):  # a stderr without a file descriptor (captured): no crash stacks
            faulthandler.enable()


class ClusterLostError(RuntimeError):
    """The local Ray cluster the run started stopped under it (its GCS or raylet killed: `ray stop`, the OOM
    killer); what finished is committed, a rerun continues."""

    def __init__(self, what: str, rows: int) -> None:
        super().__init__(f"the run's Ray cluster stopped ({what}): {rows} row(s) committed; rerun to continue")
        self.what = what
        self.rows = rows


def cluster_lost() -> str | None:
    """What of the local cluster this process started is gone (`its GCS at 127.0.0.1:PORT is gone`), None while
    it runs (and for a cluster this process joined, which is not watched)."""
    return _lost.get("what")


@contextlib.contextmanager
def watching_cluster(on_lost: Callable[[], None]) -> Iterator[None]:
    """Inside: `on_lost()` is called once, from the watcher's thread, when the local cluster this process started
    (now or later inside) loses its GCS or raylet (at once when that happened already)."""
    with _WATCH_LOCK:
        _listeners.append(on_lost)
        already = cluster_lost() is not None
    try:
        if already:
            on_lost()
        yield
    finally:
        with _WATCH_LOCK:
            _listeners.remove(on_lost)


def _watch(ray: Any) -> None:
    """Watch the GCS and raylet of the local instance just started, on a daemon thread (till `ray.shutdown`)."""
    node = getattr(ray._private.worker, "_global_node", None)
    if node is None:
        return
    procs = [(kind, info.process) for kind in ("gcs_server", "raylet") for info in node.all_processes.get(kind, ())
             if info.process is not None]
    address = _session.get("address") or getattr(node, "gcs_address", None) or "?"
    threading.Thread(target=_watcher, args=(ray, node, procs, address), name="ray-watch", daemon=True).start()


def _watcher(ray: Any, node: Any, procs: list[tuple[str, Any]], address: str) -> None:
    import time

    def ours() -> bool:  # a `ray.shutdown` (disconnect first, then its processes stop) is no loss
        return ray.is_initialized() and getattr(ray._private.worker, "_global_node", None) is node

    while ours():
        time.sleep(WATCH_S)
        gone = [(kind, p.pid) for kind, p in procs if p.poll() is not None]
        if gone and ours():
            _lose(_what_is_gone(gone, address))
            return


def _what_is_gone(gone: list[tuple[str, int]], address: str) -> str:
    kinds = {kind for kind, _ in gone}
    if "gcs_server" in kinds:
        return f"its GCS at {address} is gone" + (" and so is its raylet" if "raylet" in kinds else "")
    return f"its raylet (pid {gone[0][1]}) is gone"


def _lose(what: str) -> None:
    with _WATCH_LOCK:
        _lost["what"] = what
        listeners = list(_listeners)
    # a listener (the run) says it in its own sentence; else this is the only word before Ray's exit 60 s later
    log.log(logging.INFO if listeners else logging.WARNING, "the local Ray cluster stopped: %s", what)
    for on_lost in listeners:
        try:
            on_lost()
        except Exception:  # one listener's failure does not keep the others from hearing it
            log.exception("a listener of the cluster's loss failed")
