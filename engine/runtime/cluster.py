"""Starting or joining a Ray cluster."""

from __future__ import annotations

import logging
import os

from engine.runtime.secrets import register_secret_env

__all__ = ["ensure_ray"]

log = logging.getLogger(__name__)


def ensure_ray(address: str | None = None, *, num_cpus: int | None = None,
               object_store_mb: int | None = 1024) -> None:
    """Join the cluster at `address`, or start a local one bound to loopback.

    A local instance keeps all its traffic on 127.0.0.1. Joining a real cluster
    needs its auth token (`RAY_AUTH_TOKEN` or `RAY_AUTH_TOKEN_PATH`) unless the
    cluster runs with `RAY_AUTH_MODE=disabled`; the token is never logged.
    """
    import ray

    register_secret_env("RAY_AUTH_TOKEN")  # never printed or stored, wherever it shows up
    if ray.is_initialized():
        return
    if address:
        log.info("joining Ray cluster at %s", address)
        ray.init(address=address, log_to_driver=False)
        return
    # Token authentication stays on for a local instance (Ray's default), but said explicitly, so Ray does not
    # print its notice on every run; RAY_AUTH_MODE=disabled set by the user still wins.
    if "RAY_AUTH_MODE" not in os.environ:
        os.environ["RAY_AUTH_MODE"] = "token"
        from ray._raylet import Config

        Config.initialize("")  # Ray caches its config at import (vLLM may have imported it): refresh it
    # Keep a local instance on 127.0.0.1 (on Linux Ray otherwise advertises the interface address).
    # Ray reads this at import; vLLM may have imported ray already, so set the constant too.
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    if os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] in ("0", "false", "False"):
        from ray._private import ray_constants

        ray_constants.ENABLE_RAY_CLUSTER = False
    ray.init(
        address="local",  # a new instance, even where `ray start` left a cluster address behind
        num_cpus=num_cpus,
        include_dashboard=False,
        object_store_memory=object_store_mb * 1024 * 1024 if object_store_mb else None,
        log_to_driver=False,
        configure_logging=False,
    )
