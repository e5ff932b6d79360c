"""Starting or joining a Ray cluster.

Which cluster: `--address` (the spec's `ray_address`), else `RAY_ADDRESS` (as `ray.init()` reads it, e.g.
under `ray job submit`), else the local cluster `framesweep engines up` recorded, else a new local one
(loopback only; its dashboard with `dashboard=True`).

What the cluster's workers print (the engine actors' vLLM lines among it) comes to the driver
(`log_to_driver`) and goes to the log, logger `engine.runtime.workers` at INFO (a run's log file), never
to the terminal; `ray_session()` says where Ray keeps its own logs.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from engine.runtime.local_cluster import local_cluster_env, recorded_cluster
from engine.runtime.reaper import Reaper
from engine.runtime.secrets import register_secret_env

__all__ = ["WORKER_LOGGER", "ensure_ray", "ray_session"]

log = logging.getLogger(__name__)

WORKER_LOGGER = "engine.runtime.workers"
"""The logger that carries every line the cluster's workers print (INFO)."""
_workers_log = logging.getLogger(WORKER_LOGGER)
_FORWARD = "framesweep_worker_logs"
_session: dict[str, Any] = {}

_LOCK = threading.Lock()
_KEEPER_LOCK = threading.Lock()
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
    forward = _can_forward()
    _session.clear()
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
        from ray._raylet import Config

        Config.initialize("")  # Ray caches its config at import (vLLM may have imported it): refresh it
    # Keep a local instance on 127.0.0.1 (on Linux Ray otherwise advertises the interface address).
    # Ray reads this at import; vLLM may have imported ray already, so set the constant too.
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    if os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] in ("0", "false", "False"):
        from ray._private import ray_constants

        ray_constants.ENABLE_RAY_CLUSTER = False
