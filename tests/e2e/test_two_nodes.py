"""A real two-node Ray cluster on one machine; the second node is killed mid-sweep.

The head runs on the host side of a veth pair, the second raylet inside a network
namespace the test creates (`ray start --address`), so the two nodes have their own
addresses and all traffic stays on links the test made. The sweep (`framesweep run
--address`) runs two engine replicas of the tiny model, one per node (each node has
room for one), and decode actors. When some of its rows were answered on the second
node, every process of that node is SIGKILLed: the batches it held are retried on the
head's engine and the sweep completes with exactly the expected key set, once each.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import psutil
import pytest
from helpers.specs import small_spec_dict, write_toml

from engine.config import parse_spec
from engine.datasets import build_adapter
from engine.results.schema import KEY_COLUMNS
from engine.results.store import scan_results

RAY = str(Path(sys.executable).with_name("ray"))
FRAMESWEEP = [sys.executable, "-m", "engine.cli"]


def _sh(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=30)


def _netns_usable() -> str | None:
    """None if this process may create network namespaces and veth pairs, else why not."""
    if shutil.which("ip") is None:
        return "the `ip` tool (iproute2) is not installed"
    if os.geteuid() != 0:
        return "creating a network namespace needs root"
    probe = f"fsprobe{os.getpid()}"
    made = _sh("ip", "netns", "add", probe)
    if made.returncode != 0:
        return f"`ip netns add` is not permitted here: {made.stderr.strip()}"
    _sh("ip", "netns", "del", probe)
    return None


_why = _netns_usable()
pytestmark = [pytest.mark.engine, pytest.mark.needs("iproute2"),
              pytest.mark.skipif(_why is not None, reason=f"two-node Ray test: {_why}")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _session_pids(sid: int) -> list[int]:
    out = []
    for p in psutil.process_iter(["pid"]):
        try:
            if os.getsid(p.pid) == sid:
                out.append(p.pid)
        except (ProcessLookupError, PermissionError):
            pass
    return out


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class TwoNodes:
    """Head on the host end of a veth pair, a second raylet inside a network namespace."""

    def __init__(self, tag: int) -> None:
        self.ns = f"fs{tag}"
        self.host_if, self.ns_if = f"fsh{tag}", f"fsn{tag}"
        net = 20 + tag % 200
        self.head_ip, self.node_ip = f"10.231.{net}.1", f"10.231.{net}.2"
        self.port = _free_port()
        self.address = f"{self.head_ip}:{self.port}"
        self.env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
        self.env["RAY_AUTH_MODE"] = "disabled"  # a throwaway test cluster; real clusters propagate the token
        self.head: subprocess.Popen | None = None
        self.node: subprocess.Popen | None = None

    def up(self, tmp: Path) -> None:
        for cmd in (
            ["ip", "netns", "add", self.ns],
            ["ip", "link", "add", self.host_if, "type", "veth", "peer", "name", self.ns_if],
            ["ip", "link", "set", self.ns_if, "netns", self.ns],
            ["ip", "addr", "add", f"{self.head_ip}/24", "dev", self.host_if],
            ["ip", "link", "set", self.host_if, "up"],
            ["ip", "netns", "exec", self.ns, "ip", "addr", "add", f"{self.node_ip}/24", "dev", self.ns_if],
            ["ip", "netns", "exec", self.ns, "ip", "link", "set", self.ns_if, "up"],
            ["ip", "netns", "exec", self.ns, "ip", "link", "set", "lo", "up"],
        ):
            r = _sh(*cmd)
            assert r.returncode == 0, f"{' '.join(cmd)}: {r.stderr}"
        common = ["--num-cpus=2", "--object-store-memory=400000000", "--disable-usage-stats", "--block"]
        self.head = subprocess.Popen(
            [RAY, "start", "--head", f"--node-ip-address={self.head_ip}", f"--port={self.port}",
             "--include-dashboard=false", *common],
            stdout=(tmp / "head.log").open("w"), stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        self._wait_nodes(1)
        self.node = subprocess.Popen(
            ["ip", "netns", "exec", self.ns, RAY, "start", f"--address={self.address}",
             f"--node-ip-address={self.node_ip}", *common],
            stdout=(tmp / "node2.log").open("w"), stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        self._wait_nodes(2)

    def _wait_nodes(self, n: int, timeout: float = 120) -> None:
        probe = (f"import ray; ray.init(address={self.address!r}, log_to_driver=False); "
                 "print(sum(x['Alive'] for x in ray.nodes()))")
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=self.env,
                               timeout=60)
            if r.returncode == 0 and r.stdout.strip().splitlines()[-1:] == [str(n)]:
                return
            time.sleep(1.0)
        raise AssertionError(f"the cluster did not reach {n} alive nodes in {timeout:.0f}s")

    def node_pids(self) -> set[int]:
        r = _sh("ip", "netns", "pids", self.ns)
        return {int(x) for x in r.stdout.split()}

    def kill_node(self) -> int:
        """SIGKILL every process of the second node (its raylet, workers, engine): the machine is gone."""
        pids = sorted(self.node_pids())
        _kill(pids)
        return len(pids)

    def down(self) -> None:
        _kill(sorted(self.node_pids()))
        if self.node is not None:
            _kill(_session_pids(self.node.pid))
        if self.head is not None:
            _kill(_session_pids(self.head.pid))
        _sh("ip", "netns", "del", self.ns)
        _sh("ip", "link", "del", self.host_if)
        # `ray start` records its cluster for later `ray.init()` calls on this machine: forget it
        current = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
        if current.exists() and current.read_text().strip() == self.address:
            current.unlink()


@pytest.fixture
def two_nodes(tmp_path: Path):
    cluster = TwoNodes(os.getpid() % 10000)
    try:
        cluster.up(tmp_path)
        yield cluster
    finally:
        cluster.down()


def _rows(out: Path) -> pl.DataFrame:
    if not (out / "results").exists() or not list((out / "results").glob("part-*.parquet")):
        return pl.DataFrame()
    return scan_results(out).collect()


def _pid(worker: str | None) -> int | None:
    return int(worker.rsplit(":", 1)[1]) if worker else None


def test_second_node_killed_mid_sweep_loses_nothing(tmp_path: Path, two_nodes: TwoNodes, tiny_qwen25: Path) -> None:
    out = tmp_path / "out"
    d = small_spec_dict(out)
    # the second node's first answer lands seconds after the head's (its engine's first call, frames sent
    # across nodes) while the head's engine answers ~70 rows a second: the sweep is long enough that the
    # node answers (and is killed) with most of it still to do (~20% done on an idle 2-core machine)
    d["dataset"].update(n_videos=96, width=320, height=240)
    d["budgets"] = [{"frames": 0}, {"frames": 4}, {"frames": 8}, {"frames": 16}]
    d["models"][0]["engine"]["replicas"] = 2
    d["decode"] = {"actors": 2, "actor_cpus": 0.5, "max_videos_in_flight": 2}
    d["store"]["commit_interval_s"] = 0.5
    spec = parse_spec(d)
    items = list(build_adapter(spec.dataset).items())
    expected = {(m.id, it.item_id, b.budget_id) for m in spec.models for b in spec.budgets for it in items}
    assert len(expected) == 96 * 3 * 4
    path = write_toml(tmp_path / "spec.toml", d)
    env = {**two_nodes.env, "FRAMESWEEP_CACHE": os.environ["FRAMESWEEP_CACHE"]}
    # the run's output goes to a file: a pipe nobody reads while the test waits fills up (vLLM's lines, the
    # progress lines) and the driver blocks on its next print
    printed = tmp_path / "run.out"
    with printed.open("w") as sink:
        proc = subprocess.Popen([*FRAMESWEEP, "run", str(path), "--address", two_nodes.address, "--verbose"],
                                stdout=sink, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
    try:
        node_pids = two_nodes.node_pids()
        t0 = time.monotonic()
        while True:  # wait until the second node's engine has answered (and committed) some jobs
            assert proc.poll() is None, f"sweep ended before the node was killed:\n{printed.read_text()[-6000:]}"
            if time.monotonic() - t0 > 600:
                proc.kill()
                pytest.fail(f"the second node never answered a job ({_rows(out).height} rows committed); the "
                            f"run's output:\n{printed.read_text()[-6000:]}")
            rows = _rows(out)
            if rows.height and any(_pid(w) in node_pids for w in rows["worker"].unique().to_list()):
                break
            node_pids |= two_nodes.node_pids()
            time.sleep(0.2)
        before = rows.height
        timeline = rows.group_by("worker").agg(pl.len(), pl.col("engine_s").max().alias("slowest_engine_s"),
                                               pl.col("finished_at").min().alias("first"),
                                               pl.col("finished_at").max().alias("last"))
        assert before < len(expected) / 2, f"the node must die with most of the sweep still to do:\n{timeline}"
        killed = two_nodes.kill_node()
        killed_at = datetime.now(UTC)
        assert killed > 0
        proc.wait(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
    stdout = printed.read_text()
    assert proc.returncode == 0, stdout[-6000:]

    final = _rows(out)
    keys = final.select(KEY_COLUMNS)
    assert keys.n_unique() == final.height, "no key was committed twice"
    got = {(r["model_id"], r["item_id"], r["budget_id"]) for r in final.iter_rows(named=True)}
    assert got == expected
    assert (final["status"] == "ok").all(), final.filter(pl.col("status") != "ok")["error"].to_list()[:3]
    workers = final.group_by("worker").agg(pl.len())
    on_node2 = [w for w in workers["worker"].to_list() if _pid(w) in node_pids]
    on_head = [w for w in workers["worker"].to_list() if _pid(w) not in node_pids]
    assert on_node2 and on_head, "both nodes' engines answered jobs"
    # the second node answered nothing after it was killed: the rest, including the batch it held when
    # it died (retried: those rows record a second attempt), was answered by the head's engine
    node2_last = final.filter(pl.col("worker").is_in(on_node2))["finished_at"].max()
    assert node2_last <= killed_at + timedelta(seconds=2)  # a result already in transit may land just after
    assert final.filter(pl.col("worker").is_in(on_head)).height == len(expected) - final.filter(
        pl.col("worker").is_in(on_node2)).height
    retried = final.filter(pl.col("attempt") > 1)
    assert set(retried["worker"]) <= set(on_head)  # (none when the node happened to be between batches)
    assert "a member died" in stdout
    plane = re.search(r"frame bytes: (\d+) into the driver, (\d+) between nodes \((\d+) jobs\)", " ".join(stdout.split()))
    assert plane is not None, stdout[-3000:]
    driver_bytes, internode_bytes, jobs = (int(x) for x in plane.groups())
    print(f"data plane: {driver_bytes / jobs:.0f} frame bytes into the driver and {internode_bytes / jobs:.0f} "
          f"between nodes per job ({jobs} jobs)")
    assert jobs == len(expected) and driver_bytes == 0 and internode_bytes == 0
