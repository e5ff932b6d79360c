"""Registering one new metric is enough: its JSON key, bootstrap interval, category split, report section,
terminal table and export column, end to end through `framesweep metrics`, `report` and `export`.

The metric here exists only in this test (no other file knows it): the share of items right at the
grid's largest budget with confidence >= 0.5 ("confident_right"), on hand-built rows. It reads a
column no built-in metric reads (``response``), declared as an input.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from helpers.metric_rows import frame, lazy
from typer.testing import CliRunner

from engine.cli import app
from engine.metrics.document import summary_document
from engine.metrics.grid import GROUP
from engine.metrics.per_item import feature
from engine.metrics.registry import METRICS, GroupRows, Inputs, Metric, register_metric
from engine.metrics.sections import Block, Heading, Headline, Rate, Table, rate_with_interval, text
from engine.metrics.summary import SummaryOptions, snapshot_columns, summary_tables
from engine.report import render_report
from engine.results.store import ResultStore

NAME = "confident_right"


def _top(m: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
    return m.filter(pl.col("rank") == pl.col("rank").max().over(by)).with_columns(
        (pl.col("c") & (pl.col("confidence") >= 0.5)).alias("hit"))


def _tables(inputs: Inputs) -> dict[str, pl.LazyFrame]:
    said = inputs.snapshot.select("model_id", "dataset", "item_id", "budget_id", "response")
    top = _top(inputs.m, GROUP).join(said, on=["model_id", "dataset", "item_id", "budget_id"], how="left")
    return {"share": top.group_by(GROUP).agg(pl.col("hit").mean().alias("value"),
                                             pl.col("response").str.len_chars().max().alias("longest"))}


def _document(rows: GroupRows, opts: Any) -> dict[str, Any] | None:
    r = rows.one("share")
    return None if r is None else {"share": r["value"], "longest_response": r["longest"]}


def _features(m: pl.LazyFrame, alt: pl.LazyFrame | None, by: list[str]) -> pl.LazyFrame:
    return feature(_top(m, by), by, NAME, pl.col("hit"))


def _section(g: dict[str, Any], idx: int = 0) -> list[Block]:
    return [Heading("Confident and right"),
            Table(f"table-{NAME}-{idx}", ["items", "share"], [["confident and right at the top", Rate(g[NAME]["share"])]],
                  title="confident and right")]


def _headline(g: dict[str, Any]) -> Headline:
    share = g[NAME]["share"]
    return Headline(text("confident and right ", Rate(share)),
                    (("confident and right at the top", rate_with_interval(g, NAME, share)),))


@pytest.fixture
def registered() -> Iterator[Metric]:
    metric = register_metric(Metric(
        name=NAME, inputs=("response",), tables=_tables, document=_document, features=_features, rates=(NAME,),
        report=_section, terminal=_section, headline=_headline,
        annotations=lambda m: _top(m, GROUP).select(*GROUP, "item_id", pl.col("hit").alias(NAME)),
        annotation_columns={NAME: "right at the chain's dearest budget with confidence >= 0.5"},
        higher_is_better=True, description="items right at the top budget with confidence >= 0.5",
    ))
    try:
        yield metric
    finally:
        METRICS.unregister(NAME)


def _rows() -> list:
    budgets = {"text": 0, "f4": 4, "f8": 8}
    conf = {("a", "f8"): {"confidence": 0.9, "response": "A, sure"}, ("b", "f8"): {"confidence": 0.2},
            ("c", "f8"): {"confidence": 0.9}, ("d", "f8"): {"confidence": 0.7}}
    cats = {"a": {"task_type": "x"}, "b": {"task_type": "x"}, "c": {"task_type": "y"}, "d": {"task_type": "y"}}
    return frame({"a": "011", "b": "111", "c": "110", "d": "001"}, budgets=budgets, per_cell=conf, per_item=cats)


def test_one_registration_reaches_document_intervals_categories_and_report(registered: Metric) -> None:
    opts = SummaryOptions(n_boot=50, seed=3, categories=("task_type",))
    doc = summary_document(summary_tables(lazy(_rows()), opts), opts)
    (g,) = doc["groups"]
    # a right (0.9), b right but unsure (0.2), c wrong, d right (0.7): 2 of 4
    assert g[NAME] == {"share": 0.5, "longest_response": 7}
    lo, hi = g["confidence_intervals"][NAME]
    assert 0.0 <= lo <= 0.5 <= hi <= 1.0
    by_type = {v["value"]: v["rates"][NAME] for v in g["categories"]["task_type"]}
    assert by_type == {"x": 0.5, "y": 0.5}  # x: a hit, b not; y: c not, d hit
    assert doc["metrics"][-1] == {"name": NAME, "scope": "group", "keys": [NAME], "rates": [NAME],
                                  "higher_is_better": True, "description": "items right at the top budget with "
                                  "confidence >= 0.5"}
    html = render_report(doc)
    assert f'id="table-{NAME}-0"' in html and "<td>confident and right at the top</td><td>50.0</td>" in html
    ci = " ".join(f"{100 * v:.1f}" for v in (lo, hi)).replace(" ", ", ")
    assert f"<td>confident and right at the top</td><td>50.0 [{ci}]</td></tr></table>" in html  # its headline row
    assert METRICS.get(NAME) is registered and "response" in snapshot_columns()  # its declared input


def _sweep(out: Path) -> Path:
    with ResultStore(out) as store:
        store.add(_rows())
        store.commit()
        store.write_manifest({"sweep_id": "t", "spec": {"sweep_id": "t", "models": [
            {"id": "m", "family": "qwen2_5_vl", "path": str(out / "model")}]}})
    (out / "model").mkdir()
    (out / "model" / "config.json").write_text('{"hidden_size": 128}')
    return out


def test_one_registration_reaches_the_cli_report_and_export(registered: Metric, tmp_path: Path) -> None:
    out, runner = _sweep(tmp_path / "out"), CliRunner()
    res = runner.invoke(app, ["metrics", str(out), "--n-boot", "20", "--json", str(tmp_path / "m.json")],
                        env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "Confident and right" in res.output  # its heading, then its table
    assert "; terminal regressions 25.0; confident and right 50.0\n" in res.output  # the chain's headline line
    assert re.search(r"confident and right at the top\s*│\s*50\.0\s*│", res.output), res.output
    assert json.loads((tmp_path / "m.json").read_text())["groups"][0][NAME]["share"] == 0.5
    res = runner.invoke(app, ["report", str(out), "--n-boot", "0", "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    assert f'id="table-{NAME}-0"' in (tmp_path / "r.html").read_text()
    res = runner.invoke(app, ["export", str(out), "--to", str(tmp_path / "art")])
    assert res.exit_code == 0, res.output
    items = pl.read_parquet(tmp_path / "art" / "items.parquet")
    hits = dict(items.filter(pl.col("budget_id") == "f8").select("item_id", NAME).iter_rows())
    assert hits == {"a": True, "b": False, "c": False, "d": True}
    assert f"| `{NAME}` | right at the chain's dearest budget" in (tmp_path / "art" / "README.md").read_text()


def test_unregistered_metric_is_absent_and_named_in_errors() -> None:
    opts = SummaryOptions(n_boot=0)
    doc = summary_document(summary_tables(lazy(_rows()), opts), opts)
    assert NAME not in doc["groups"][0]
    assert "response" not in snapshot_columns()  # no registered metric reads it
    with pytest.raises(KeyError, match="unknown metric 'confident_right'; known: .*trajectory_patterns"):
        METRICS.get(NAME)
    with pytest.raises(ValueError, match="registered twice"):
        register_metric(METRICS.get("trajectory_patterns"))


def test_builtin_metrics_fill_the_document_in_registration_order() -> None:
    opts = SummaryOptions(n_boot=10)
    doc = summary_document(summary_tables(lazy(_rows()), opts), opts)
    group_keys = [k for m in doc["metrics"] for k in m["keys"]]
    assert list(doc["groups"][0])[10:] == group_keys  # after the chain's header
    assert [k for k in doc if k not in ("schema", "source", "options", "groups", "metrics")] == [
        m["name"] for m in doc["metrics"] if m["scope"] == "dataset"]
    assert group_keys[:4] == ["fixed_accuracy", "best_fixed", "oracle_accuracy", "oracle_headroom"]
