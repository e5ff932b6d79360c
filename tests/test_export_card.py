"""The artifact's datacard is a Hub dataset card (YAML header, configs) whose tables survive any id, and its
provenance.json carries the run's history and, for an imported sweep, every import."""

from __future__ import annotations

import json
import re
from pathlib import Path

from helpers.metric_rows import frame
from huggingface_hub import DatasetCard
from typer.testing import CliRunner

from engine.cli import app
from engine.results.store import ResultStore

ODD = "org/model | v2\nbeta <b>"


def _cells(line: str) -> list[str]:
    """A Markdown table row's cells (a pipe escaped with a backslash stays inside its cell)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def test_datacard_is_a_hub_card_with_escaped_cells(tmp_path: Path) -> None:
    out = tmp_path / "out"
    rows = frame({"a": "11", "b": "01"}, model=ODD, budgets={"text": 0, "f4": 4})
    with ResultStore(out) as store:
        store.add(rows)
        store.commit()
        store.write_manifest({"sweep_id": "t", "spec": {"sweep_id": "t", "models": [
            {"id": ODD, "family": "qwen2_5_vl", "path": str(tmp_path / "missing")}]},
            "history": [{"started_at": "2026-12-01T10:00:00+00:00", "framesweep_version": "0.1.0", "policy": "grid"}]})
    res = CliRunner().invoke(app, ["export", str(out), "--to", str(tmp_path / "art")])
    assert res.exit_code == 0, res.output
    card = DatasetCard.load(tmp_path / "art" / "README.md")
    assert card.data.pretty_name == "framesweep audit: t" and "framesweep" in card.data.tags
    assert [c["config_name"] for c in card.data.configs] == ["items", "scores", "videos"]
    assert card.data.configs[0]["data_files"] == "items.parquet" and card.data.configs[0]["default"] is True
    chains = card.text.split("## Chains")[1].split("##")[0]
    head, _, *body = [line for line in chains.splitlines() if line.startswith("|")]
    assert len(body) == 1 and len(_cells(body[0])) == len(_cells(head)) == 6  # the id's pipe and newline
    assert _cells(body[0])[0] == "org/model \\| v2 beta &lt;b&gt;"
    prov = json.loads((tmp_path / "art" / "provenance.json").read_text())
    assert prov["runs"] == [{"started_at": "2026-12-01T10:00:00+00:00", "framesweep_version": "0.1.0",
                             "policy": "grid", "jobs_pending": None, "jobs_committed": None}]
    assert prov["rows"]["rows"] == 4 and prov["models"][ODD]["hash"] is None
    assert prov["exported_by"]["framesweep"] and prov["imports"] == []
