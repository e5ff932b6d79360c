"""The artifact's datacard is a Hub dataset card (YAML header, configs) whose tables survive any id, and its
provenance.json carries the run's history and, for an imported sweep, every import."""

from __future__ import annotations

import json
import re
from pathlib import Path

import datasets
import polars as pl
import yaml
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
    assert card.data.configs[0]["data_files"] == [{"split": "test", "path": "items.parquet"}]
    assert card.data.configs[0]["default"] is True
    chains = card.text.split("## Chains")[1].split("##")[0]
    head, _, *body = [line for line in chains.splitlines() if line.startswith("|")]
    assert len(body) == 1 and len(_cells(body[0])) == len(_cells(head)) == 6  # the id's pipe and newline
    assert _cells(body[0])[0] == "org/model \\| v2 beta &lt;b&gt;"
    prov = json.loads((tmp_path / "art" / "provenance.json").read_text())
    assert prov["runs"] == [{"started_at": "2026-12-01T10:00:00+00:00", "framesweep_version": "0.1.0",
                             "policy": "grid", "jobs_pending": None, "jobs_committed": None}]
    assert prov["rows"]["rows"] == 4 and prov["models"][ODD]["hash"] is None
    assert prov["exported_by"]["framesweep"] and prov["imports"] == []


def _sections(text: str) -> dict[str, str]:
    """The card body's ``## `` sections by title."""
    parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_datacard_names_licence_tasks_citations_and_a_test_split(tmp_path: Path) -> None:
    """The card's YAML has a licence, the Hub's task categories, the source benchmarks and a `test` split (never the
    default `train`); its body says whose licence governs the items (named where the release declares one, else
    "see the source benchmark"), and cites each benchmark's paper."""
    out = tmp_path / "out"
    video = {"text": 0, "f4": 4}
    rows = [*frame({"a": "11"}, dataset="vmme-short", budgets=video), *frame({"a": "01"}, dataset="mvbench",
                                                                              budgets=video),
            *frame({"a": "10"}, dataset="videomme_v2", budgets=video), *frame({"a": "1"}, dataset="mystery",
                                                                               budgets={"image": 1})]
    with ResultStore(out) as store:
        store.add(rows)
        store.commit()
        store.write_manifest({"sweep_id": "t", "spec": {"sweep_id": "t", "models": [{"id": "m"}], "datasets": [
            {"name": "videomme", "id": "vmme-short"}, {"name": "mvbench"}, {"name": "videomme_v2"}]}})
    res = CliRunner().invoke(app, ["export", str(out), "--to", str(tmp_path / "art")])
    assert res.exit_code == 0, res.output
    text = (tmp_path / "art" / "README.md").read_text()
    header = yaml.safe_load(text.split("---\n")[1])
    assert header["license"] == "other" and header["license_name"] == "source-benchmark-terms"
    assert header["task_categories"] == ["visual-question-answering", "video-text-to-text"]
    assert header["source_datasets"] == ["OpenGVLab/MVBench", "lmms-lab/Video-MME"]
    splits = {f["split"] for c in header["configs"] for f in c["data_files"]}
    assert splits == {"test"}
    body = _sections(DatasetCard.load(tmp_path / "art" / "README.md").text)
    licence = {c[0]: c[1:] for c in map(_cells, body["Licence"].splitlines()[2:]) if c and c[0] != "---"}
    assert licence["vmme-short"] == ["Video-MME", "see the source benchmark",
                                     "https://huggingface.co/datasets/lmms-lab/Video-MME"]
    assert licence["mvbench"][:2] == ["MVBench", "mit (as its release declares); its videos come from other public "
                                                 "datasets, each under its own terms"]
    assert licence["videomme_v2"] == ["videomme_v2", "see the source benchmark",
                                      "the Video-MME v2 release (see its project page)"]
    assert licence["mystery"] == ["unknown", "see the source benchmark", "the source benchmark's own release"]
    assert "each benchmark's licence and terms govern them" in body["Licence"]
    cites = body["Citation"]
    assert "- Video-MME: Video-MME: The First-Ever Comprehensive Evaluation Benchmark" in cites
    assert "arXiv:2405.21075 (https://arxiv.org/abs/2405.21075)" in cites and "arXiv:2311.17005" in cites
    assert "- videomme_v2: see the source benchmark (the Video-MME v2 release (see its project page))" in cites
    assert "- unknown: see the source benchmark" in cites
    # the card's split, as a user loads it
    items = datasets.load_dataset(str(tmp_path / "art"), split="test", cache_dir=str(tmp_path / "cache"))
    assert items.num_rows == pl.read_parquet(tmp_path / "art" / "items.parquet").height
