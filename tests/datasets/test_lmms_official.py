"""A bridged lmms-eval task's official score per budget (`engine.datasets.lmms_official`): the task's own
aggregation over each budget's per-document results, on hand-made rows whose ``score_detail`` holds what Video-MME's
`process_results` returns (its per-document dicts), compared with calling the installed task's aggregation on the
same dicts; absent for every other dataset, and with lmms-eval absent.

The tests that call lmms-eval skip, saying so, where it is not installed (`framesweep[lmms]`).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from helpers.lmms import needs_lmms
from helpers.metric_rows import lazy, row

from engine.datasets import lmms_official
from engine.datasets.lmms_official import task_and_metric
from engine.metrics.benchmark_scores import benchmark_scores
from engine.metrics.document import summary_document
from engine.metrics.options import SummaryOptions
from engine.metrics.summary import summary_tables
from engine.results.schema import ResultRow

VERSION = "lmms_eval-0.7.3/videomme@0.0/videomme_perception_score:score"
# (question, duration, domain, sub_category, task_type, answer) of four Video-MME documents
DOCS = [("001-1", "short", "Knowledge", "Humanity & History", "Counting Problem", "B"),
        ("001-2", "short", "Knowledge", "Humanity & History", "Object Recognition", "D"),
        ("002-1", "medium", "Sports Competition", "Football", "Action Reasoning", "A"),
        ("003-1", "long", "Film & Television", "Movie & TV Show", "Temporal Reasoning", "C")]
# the answer each budget's response gave (what process_results extracted); "" is an unreadable answer
SAID = {"f0": ["B", "A", "C", ""], "f8": ["B", "D", "A", "B"]}


def _detail(doc: tuple[str, ...], said: str) -> dict[str, Any]:
    """What Video-MME's `videomme_process_results` returns for one document and extracted answer."""
    qid, duration, domain, sub, task, answer = doc
    return {"question_id": qid, "duration": duration, "category": domain, "sub_category": sub,
            "task_category": task, "pred_answer": said, "answer": answer, "score": float(said == answer),
            "videoID": f"v{qid[:3]}"}


def _rows(dataset: str = "videomme", version: str = VERSION) -> list[ResultRow]:
    out = []
    for budget, frames in (("f0", 0), ("f8", 8)):
        for doc, said in zip(DOCS, SAID[budget], strict=True):
            detail = _detail(doc, said)
            out.append(row("m", dataset, doc[0], budget, frames, "1" if detail["score"] else "0",
                           dataset_version=version, score_detail=json.dumps(detail)))
    # an error row is no document lmms-eval scored: left out
    out.append(row("m", dataset, "004-1", "f8", 8, "e", dataset_version=version))
    return out


def _official(got: pl.DataFrame, dataset: str = "videomme") -> dict[str, float]:
    mine = got.filter((pl.col("dataset") == dataset) & (pl.col("metric") == "lmms_eval_score"))
    assert set(mine["subset"]) <= {"videomme_perception_score"}
    return dict(zip(mine["budget_id"], mine["value"], strict=True))


def _aggregate_by_hand(budget: str) -> float:
    """The installed task's own aggregation, imported from its utils and called here on the same dicts."""
    import lmms_eval

    path = Path(lmms_eval.__file__).parent / "tasks" / "videomme" / "utils.py"
    spec = importlib.util.spec_from_file_location("videomme_utils", path)
    assert spec is not None and spec.loader is not None
    utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    return float(utils.videomme_aggregate_results([_detail(d, s) for d, s in zip(DOCS, SAID[budget], strict=True)]))


@needs_lmms
def test_the_official_score_per_budget_is_the_tasks_own_aggregation(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # the task's utils read HF_HOME when imported
    got = benchmark_scores(lazy(_rows())).collect()
    by_hand = {b: _aggregate_by_hand(b) for b in SAID}
    assert by_hand == pytest.approx({"f0": 100 / 4, "f8": 300 / 4})  # Video-MME's percentage over the answered
    assert _official(got) == pytest.approx(by_hand)
    heads = got.filter(pl.col("headline")).select("budget_id", "metric", "subset").rows()
    assert sorted(heads) == [("f0", "lmms_eval_score", "videomme_perception_score"),
                             ("f8", "lmms_eval_score", "videomme_perception_score")]
    accuracy = dict(got.filter(pl.col("metric") == "accuracy").select("budget_id", "value").rows())
    assert accuracy == pytest.approx({"f0": 1 / 4, "f8": 3 / 4})  # framesweep's own, beside it


@needs_lmms
def test_the_metrics_document_carries_the_official_score_per_budget(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    opts = SummaryOptions(n_boot=0)
    doc = summary_document(summary_tables(lazy(_rows()), opts), opts)
    scores = next(g for g in doc["groups"] if g["dataset"] == "videomme")["official_scores"]
    official = {r["budget_id"]: r["value"] for r in scores if r["metric"] == "lmms_eval_score"}
    assert official == pytest.approx({b: _aggregate_by_hand(b) for b in SAID})


def test_no_official_lmms_eval_score_for_other_datasets() -> None:
    """Rows of the built-in Video-MME adapter (and of an imported lmms-eval log, whose version has no metric), even
    with a per-document detail, get no lmms-eval score: no lmms-eval is needed, none is called."""
    got = benchmark_scores(lazy([*_rows("videomme_builtin", "videomme-v1.fs1"),
                                 *_rows("imported", "lmms-eval")])).collect()
    assert got.filter(pl.col("metric") == "lmms_eval_score").height == 0
    assert got.filter(pl.col("metric") == "videomme_accuracy").height == 2  # the built-in one's own score


def test_without_lmms_eval_the_score_is_absent_not_guessed(monkeypatch: pytest.MonkeyPatch) -> None:
    """lmms-eval missing at metrics time (faked: the installed check says so; the fault the real package cannot
    produce while installed): no score, accuracy still there."""
    monkeypatch.setattr(lmms_official, "installed_version", lambda: None)
    got = benchmark_scores(lazy(_rows())).collect()
    assert _official(got) == {}
    assert got.filter(pl.col("metric") == "accuracy").height == 2


def test_the_task_and_metric_are_read_from_a_bridged_rows_version() -> None:
    assert task_and_metric(VERSION + "|filter=flexible") == ("videomme", "videomme_perception_score")
    assert task_and_metric("lmms_eval-0.7.3/my@task@1.0/acc:value") == ("my@task", "acc")
    assert task_and_metric("lmms-eval") is None
    assert task_and_metric("videomme-v1.fs1") is None


def test_an_imported_lmms_eval_log_keeps_accuracy_as_its_headline() -> None:
    """Rows imported from lmms-eval's logs (`import-lmms-eval`, version ``lmms-eval``) are no bridged task: the
    lmms_eval benchmark does not claim them, so their accuracy stays the headline (a bridged row's version starts
    with the adapter's name, ``lmms_eval-``)."""
    imported = [row("m", "videomme", d[0], "f8", 8, "1", dataset_version="lmms-eval") for d in DOCS]
    got = benchmark_scores(lazy(imported)).collect()
    assert got.filter(pl.col("metric") == "accuracy")["headline"].to_list() == [True]
    bridged = benchmark_scores(lazy(_rows())).collect()
    assert not bridged.filter(pl.col("metric") == "accuracy")["headline"].any()


OWN_UTILS = """
def my_text(doc, kwargs=None):
    return doc["q"]
def my_results(doc, results):
    return {"hits": {"hit": float(results[0].strip() == doc["a"]), "weight": doc["w"]}}
def my_weighted(items):
    return 100 * sum(i["hit"] * i["weight"] for i in items) / sum(i["weight"] for i in items)
"""


def _own_task_rows(folder: Path) -> list[ResultRow]:
    """A user's task (a folder given as ``include_path``) whose aggregation is its own: a weighted hit rate."""
    folder.mkdir()
    (folder / "utils.py").write_text(OWN_UTILS)
    (folder / "my_weighted_task.yaml").write_text("""
task: my_weighted_task
dataset_path: unused
test_split: test
output_type: generate_until
doc_to_visual: !function utils.my_text
doc_to_text: !function utils.my_text
doc_to_target: "a"
process_results: !function utils.my_results
metric_list:
  - metric: hits
    aggregation: !function utils.my_weighted
    higher_is_better: true
""")
    version = "lmms_eval-0.7.3/my_weighted_task@?/hits:value"
    hits = {"f0": [(1.0, 1), (0.0, 3)], "f8": [(1.0, 1), (1.0, 3)]}  # (hit, weight) of documents 0 and 1
    return [row("m", "my_weighted_task", str(i), b, f, "1" if hit else "0", dataset_version=version,
                score_detail=json.dumps({"hit": hit, "weight": w}))
            for b, f in (("f0", 0), ("f8", 8)) for i, (hit, w) in enumerate(hits[b])]


@needs_lmms
def test_a_users_own_task_is_scored_from_the_folder_its_run_named(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    """A task from a run's ``include_path`` is not in lmms-eval: the metrics step finds its aggregation in the folder
    the results directory's spec names (read when a command opens the directory), not only in the run's process."""
    from helpers.metric_rows import write_sweep
    from typer.testing import CliRunner

    from engine.cli import app
    from engine.datasets import _lmms_tasks

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setattr(_lmms_tasks, "_TASK_FOLDERS", {})  # a fresh process: no run loaded the task here
    folder = tmp_path / "my_tasks"
    rows = _own_task_rows(folder)
    assert _official(benchmark_scores(lazy(rows)).collect(), "my_weighted_task") == {}  # the folder is not known
    spec = {"sweep_id": "t", "datasets": [{"name": "lmms_eval", "task": "my_weighted_task",
                                           "include_path": str(folder)}]}
    write_sweep(tmp_path / "out", rows, {"sweep_id": "t", "spec": spec})
    monkeypatch.setattr(_lmms_tasks, "_TASK_FOLDERS", {})
    result = CliRunner().invoke(app, ["metrics", str(tmp_path / "out"), "--n-boot", "0", "--json", "-"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    [group] = [g for g in doc["groups"] if g["dataset"] == "my_weighted_task"]
    official = {r["budget_id"]: r["value"] for r in group["official_scores"] if r["metric"] == "lmms_eval_score"}
    assert official == pytest.approx({"f0": 100 * 1 / 4, "f8": 100.0})  # weighted by hand: (1*1 + 0*3) / 4
