"""`framesweep engines`: warm engines that outlive a run (up, list, down).

`engines up SPEC` starts the spec's vLLM engines as named, detached Ray actors on a persistent
local cluster (started here if none runs; its address is recorded in the framesweep cache
folder) or on the cluster at --address (default: RAY_ADDRESS, as runs join it), and leaves them
running. `run`, `cascade`, `predict` and `demo` then join that cluster and reuse an engine whose
settings match exactly (`engine.backends.warm`). `engines` lists them; `engines down` stops them,
and the local cluster if `engines up` started it.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from engine.cli._console import console, fail, setup_logging, warn
from engine.cli._output import JsonPath, check_json, emit_json, to_stdout
from engine.config import SpecError, load_spec
from engine.runtime.placement import PlacementError

__all__ = ["register"]

engines_app = typer.Typer(no_args_is_help=False, help="Warm engines kept running between runs: up, list, down.")

Address = Annotated[str | None, typer.Option("--address", help="Ray cluster of the engines (default: RAY_ADDRESS, "
                                             "else the local cluster `engines up` started).")]


def _settings_line(settings: dict[str, Any]) -> str:
    e = settings.get("engine", {})
    keys = ("dtype", "max_model_len", "max_num_seqs", "kv_cache_gib", "num_gpus", "engine_core")
    parts = [f"{k}={e[k]}" for k in keys if k in e]
    if e.get("extra"):
        parts.append(f"extra={json.dumps(e['extra'], sort_keys=True)}")
    if settings.get("family_kwargs"):
        parts.append(f"family={json.dumps(settings['family_kwargs'], sort_keys=True)}")
    return " ".join(parts)


def _print(engines: list[dict[str, Any]]) -> None:
    t = Table(title=f"{len(engines)} warm engine(s)")
    for c in ("name", "model", "settings", "memory MiB", "worker", "resets"):
        t.add_column(c, justify="right" if c in ("memory MiB", "resets") else "left")
    for e in engines:
        if "error" in e:
            t.add_row(e["name"], "", e["error"], "", "", "")
            continue
        s = e.get("settings", {})
        t.add_row(e["name"], Path(s.get("model_path", "?")).name, _settings_line(s), f"{e.get('rss_mb', 0):.0f}",
                  str(e.get("worker", "")), str(e.get("cache_resets", 0)))
    console.print(t)


@engines_app.callback(invoke_without_command=True)
def engines(ctx: typer.Context, address: Address = None, json_out: JsonPath = None) -> None:
    """List the warm engines: name (carrying the settings' key), model, settings, memory; the list as JSON with
    --json PATH (--json -: on stdout)."""
    if ctx.invoked_subcommand is not None:
        return
    from engine.backends.warm import join_engines_cluster, list_engines

    check_json(json_out)
    address = address or os.environ.get("RAY_ADDRESS") or None
    found = asyncio.run(list_engines()) if join_engines_cluster(address) else []
    if address is None:
        _name_unrecorded()
    if to_stdout(json_out):
        pass  # stdout holds the document alone
    elif found:
        _print(found)
    else:
        console.print("no warm engines (start them with `framesweep engines up SPEC`)")
    emit_json(json_out, found)


def _name_unrecorded() -> None:
    from engine.runtime.local_cluster import unrecorded_clusters

    if others := unrecorded_clusters():
        warn(f"{len(others)} more local Ray cluster(s) started by framesweep run without a record (`ray start` pid "
             f"{', '.join(map(str, others))}); their engines are not listed: `framesweep engines down` stops them")


@engines_app.command("up")
def up(
    spec_path: Annotated[Path, typer.Argument(metavar="SPEC.toml", help="Sweep spec whose engines to start.")],
    address: Address = None,
    dashboard: Annotated[bool, typer.Option("--dashboard", help="Start the local cluster with Ray's "
                                            "dashboard.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Start the spec's vLLM engines as warm engines (reusing any already up with the same settings)."""
    from engine.backends.chat_template import ChatTemplateError
    from engine.backends.kinds import in_cluster
    from engine.backends.warm import list_engines
    from engine.cli.progress import RunProgress
    from engine.cli.run import EXIT_ENGINE_START
    from engine.sweep import start_backends
    from engine.sweep.engines import EngineStartError
    from engine.sweep.preflight import preflight

    setup_logging(verbose)
    try:
        spec = load_spec(spec_path, writes=False)  # engines write no results: [store] may be left out
        preflight(spec, str(spec_path), only_engines=True)  # before the cluster or any engine starts
    except SpecError as err:
        fail(err)
        raise typer.Exit(2) from None
    if not any(in_cluster(m) for m in spec.models):
        warn("the spec has no vLLM engine to keep warm (its models are served over HTTP)")
        raise typer.Exit(0)
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address is None:
        _local_cluster(dashboard)
    spec = spec.model_copy(update={"ray_address": address, "models": [m for m in spec.models if in_cluster(m)]})

    async def go(progress: RunProgress) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        backends = await start_backends(spec, detached=True, progress=progress)
        return backends, await list_engines()

    try:
        with RunProgress("engines up", [m.id for m in spec.models], first="starting engines") as progress:
            backends, found = asyncio.run(go(progress))
    except (PlacementError, ChatTemplateError) as err:
        fail(err)
        raise typer.Exit(2) from None
    except EngineStartError as err:
        fail(err)
        raise typer.Exit(EXIT_ENGINE_START) from None
    for mid, b in backends.items():
        reused = sum(r.reused for r in b.replicas)
        console.print(f"{mid}: {len(b.replicas) - reused} started, {reused} already up")
    _print(found)


def _local_cluster(dashboard: bool) -> None:
    """Find or start the persistent local cluster, and say where it is (exit 1 when it does not start)."""
    from engine.runtime.local_cluster import ClusterStartError, start_local_cluster

    try:
        rec = start_local_cluster(dashboard=dashboard)
    except ClusterStartError as err:
        fail(err)
        raise typer.Exit(1) from None
    console.print(f"local Ray cluster at {rec['address']} (stop it with `framesweep engines down`)")
    if rec.get("dashboard"):
        console.print(f"Ray dashboard: {rec['dashboard']}")
    elif dashboard:
        warn("the local cluster already runs without Ray's dashboard: `framesweep engines down`, then `engines up "
             "--dashboard`")


@engines_app.command("down")
def down(
    address: Address = None,
    keep_cluster: Annotated[bool, typer.Option("--keep-cluster", help="Leave the local cluster running.")] = False,
) -> None:
    """Stop every warm engine, and the local cluster `engines up` started."""
    from engine.backends.warm import engines_down

    stopped, clusters = engines_down(address or os.environ.get("RAY_ADDRESS") or None, keep_cluster=keep_cluster)
    if stopped is None:
        console.print("no warm engines (no local cluster runs)")
    else:
        console.print(f"stopped {len(stopped)} warm engine(s)" + (": " + ", ".join(stopped) if stopped else ""))
    if clusters:
        console.print("local Ray cluster stopped" if clusters == 1 else f"{clusters} local Ray clusters stopped")


def register(app: typer.Typer) -> None:
    """Add the `engines` group to the framesweep app."""
    app.add_typer(engines_app, name="engines")
