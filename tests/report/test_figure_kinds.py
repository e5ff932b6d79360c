"""The paper figures come from what each metric declares (`Metric.figures`), not from a list in the report."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from helpers.metric_rows import frame, lazy

from engine.metrics.document import summary_document
from engine.metrics.registry import METRICS, register_metric, registered_metrics
from engine.metrics.summary import SummaryOptions, summary_tables
from engine.report.figures import FIGURES, PaperFigure, _made, paper_figures, register_figure


def _doc() -> dict[str, Any]:
    opts = SummaryOptions(n_boot=0)
    rows = frame({"a": "0110", "b": "1100", "c": "0011"})
    return summary_document(summary_tables(lazy(rows), opts), opts, source="test")


def test_every_declared_kind_is_registered_and_every_kind_is_declared() -> None:
    declared = [k for m in registered_metrics() for k in m.figures]
    assert len(declared) == len(set(declared))  # one metric per figure kind
    assert sorted(declared) == sorted(FIGURES.names())


def test_a_chain_gets_the_figures_its_metrics_declare_in_their_order() -> None:
    doc = _doc()
    kinds = [pf.name.split("--")[0] for pf in paper_figures(doc)]
    # registration order: accuracy, transitions (and its flows), then the cascade, then the trajectories
    declared = [k for m in registered_metrics("group") for k in m.figures]
    assert [k for k in kinds if k in declared] == [k for k in declared if k in kinds]
    assert {"accuracy", "transitions", "flows", "trajectories"} <= set(kinds)


def test_a_new_metric_s_figure_reaches_the_paper_figures_with_no_other_edit() -> None:
    """One registration of a figure kind and one metric naming it: `paper_figures` draws it for each chain."""
    from matplotlib.figure import Figure

    seen: list[str] = []

    def toy(g: dict[str, Any], idx: int, level: float) -> Iterator[PaperFigure]:
        seen.append(g["model_id"])

        def draw() -> Figure:
            return Figure(figsize=(1, 1))
        yield from _made("toy", (g["model_id"], g["dataset"]), f"fig-toy-{idx}", "a toy", draw)

    base = METRICS.get("accuracy")
    register_figure("toy", toy)
    register_metric(dataclasses.replace(base, name="toy_metric", figures=("toy",)))
    try:
        names = [pf.name for pf in paper_figures(_doc())]
    finally:
        METRICS.unregister("toy_metric")
        FIGURES.unregister("toy")
    assert [n for n in names if n.startswith("toy--")] == ["toy--m--d"] and seen == ["m"]
    assert "toy" not in {pf.name.split("--")[0] for pf in paper_figures(_doc())}  # gone with its metric


def test_a_metric_naming_an_unregistered_figure_kind_is_an_error_naming_it() -> None:
    register_metric(dataclasses.replace(METRICS.get("accuracy"), name="dangling", figures=("no_such_figure",)))
    try:
        with pytest.raises(Exception, match="no_such_figure"):
            list(paper_figures(_doc()))
    finally:
        METRICS.unregister("dangling")

