"""The metrics document (JSON) and the `framesweep metrics` command on a results directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.metric_rows import audit_rows, write_sweep
from typer.testing import CliRunner

from engine.cli import app
from engine.metrics.document import SCHEMA, summary_document
from engine.metrics.registry import registered_metrics
from engine.metrics.summary import SummaryOptions, load_rows, summary_tables

GROUP_KEYS = {
    "model_id", "dataset", "protocol_id", "protocol", "primary", "grid", "off_grid", "budget_frames", "n_items",
    "n_excluded", "fixed_accuracy",
    "best_fixed", "oracle_accuracy", "oracle_headroom", "transitions", "pair_transitions", "flows",
    "visual_confusion", "visual_confusion_visual_only", "text_overwrite", "terminal_regression", "generation",
    "categories", "cascade", "trajectory_patterns", "letter_prior", "official_scores", "low_level",
    "confidence_intervals",
}


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sweep")
    write_sweep(out, audit_rows())
    return out


@pytest.fixture(scope="module")
def doc(sweep_dir: Path) -> dict:
    opts = SummaryOptions(n_boot=40, seed=1, taus=(0.0, 1.0))
    docs = [summary_document(summary_tables(load_rows(sweep_dir), SummaryOptions(**{**opts.__dict__, "engine": e})),
                             opts, source="x") for e in ("streaming", "in-memory")]
    assert json.dumps(docs[0], allow_nan=False) == json.dumps(docs[1], allow_nan=False)
    return docs[0]


def _group(doc: dict, model: str, dataset: str, protocol: str = "default") -> dict:
    return next(g for g in doc["groups"]
                if (g["model_id"], g["dataset"], g["protocol_id"]) == (model, dataset, protocol))


def test_document_shape(doc: dict) -> None:
    assert doc["schema"] == SCHEMA
    assert set(doc) == {"schema", "source", "options", "groups", "robustness", "iso_compute", "cross_model",
                        "checkpoint_flows", "metrics"}
    # the alternate policy's f16 is a chain of its own (text + f16-random); the primary chain leads
    assert [(g["model_id"], g["dataset"], g["protocol_id"], g["primary"]) for g in doc["groups"]] == [
        ("m", "d", "default", True), ("m", "d", "random-seed3", False), ("m", "open", "default", True),
        ("m", "t", "default", True), ("m2", "d", "default", True)]
    for g in doc["groups"]:
        assert set(g) == GROUP_KEYS | {k for m in registered_metrics("group") for k in m.group_keys}
    assert _group(doc, "m", "d", "random-seed3")["protocol"] == {
        "max_pixels": None, "short_side": None, "min_pixels": None, "exact_pixels": None, "policy": "random", "seed": 3,
        "pipeline": "raw"}
    assert [(r["protocol_a"], r["protocol_b"]) for r in doc["robustness"]] == [("default", "random-seed3")]


def test_main_group_values(doc: dict) -> None:
    g = _group(doc, "m", "d")
    assert (g["grid"], g["off_grid"], g["n_items"], g["n_excluded"]) == (["text", "f4", "f8", "f16"], [], 4, 2)
    assert g["fixed_accuracy"] == {"text": 0.5, "f4": 0.5, "f8": 0.5, "f16": 0.25}
    assert g["best_fixed"] == {"budget_id": "text", "accuracy": 0.5}
    assert (g["oracle_accuracy"], g["oracle_headroom"]) == (0.75, 0.25)
    assert g["transitions"] == [
        {"from": "text", "to": "f4", "rescue": 1, "harm": 1, "net": 0.0, "churn": 0.5},
        {"from": "f4", "to": "f8", "rescue": 1, "harm": 1, "net": 0.0, "churn": 0.5},
        {"from": "f8", "to": "f16", "rescue": 0, "harm": 1, "net": -0.25, "churn": 0.25}]
    assert len(g["pair_transitions"]) == 6
    assert (g["visual_confusion"], g["visual_confusion_visual_only"]) == (0.75, 0.5)
    assert g["text_overwrite"] == {
        "n_text_correct": 2, "any": {"share_all": 0.5, "share_text_correct": 1.0},
        "all": {"share_all": 0.0, "share_text_correct": 0.0},
        "by_budget": {b: {"share_all": 0.25, "share_text_correct": 0.5} for b in ("f4", "f8", "f16")}}
    # b (a terminal regression) has no alternate result: not recovered over all, left out of share_with_alt
    assert g["terminal_regression"] == {"max_budget": "f16", "n_terminal": 2, "share": 0.5, "sampling_recovery": [
        {"alt_budget_id": "f16-random", "n_with_alt": 1, "n_missing_alt": 1, "n_recovered": 1, "share": 0.5,
         "share_with_alt": 1.0},
        {"alt_budget_id": "any", "n_with_alt": 1, "n_missing_alt": 1, "n_recovered": 1, "share": 0.5,
         "share_with_alt": 1.0}]}
    assert g["generation"] is None and doc["iso_compute"] == []
    assert [p["n"] for p in g["trajectory_patterns"]] == [1, 1, 1, 1]


def test_categories_cascade_and_intervals(doc: dict) -> None:
    g = _group(doc, "m", "d")
    x, y = g["categories"]["task_type"]
    assert (x["value"], x["n_items"], y["value"], y["n_items"]) == ("x", 2, "y", 2)
    assert x["rates"]["fixed_accuracy"] == {"text": 0.5, "f4": 1.0, "f8": 0.5, "f16": 0.0}
    assert (y["rates"]["best_fixed"], y["rates"]["oracle_headroom"]) == (0.5, 0.0)
    c = g["cascade"]
    assert c["stages"] == ["f4", "f8", "f16"]
    # confidences are null: every item escalates to f16, whatever tau
    assert [(p["tau"], p["accuracy"], p["mean_frames"]) for p in c["curve"]] == [(0.0, 0.25, 28.0), (1.0, 0.25, 28.0)]
    assert c["pareto_front"] == [0.0]
    assert c["match"]["fixed_budget"] == "f16" and c["match"]["frames_saved"] == 1 - 28 / 16
    ci = g["confidence_intervals"]
    assert set(ci["fixed_accuracy"]) == {"text", "f4", "f8", "f16"}
    lo, hi = ci["oracle_accuracy"]
    assert 0.0 <= lo <= 0.75 <= hi <= 1.0


def test_generation_and_text_only_groups(doc: dict) -> None:
    gen = _group(doc, "m", "open")
    assert (gen["n_items"], gen["fixed_accuracy"], gen["best_fixed"]) == (0, {}, None)
    assert gen["generation"] == {
        "grid": ["text", "f4", "f8"], "n_items": 3, "n_excluded": 0, "eps": 1e-9,
        "mean_score": {"text": 0.75 / 3, "f4": 1.25 / 3, "f8": 0.5}, "best_fixed": {"budget_id": "f8", "score": 0.5},
        "oracle_score": 1.75 / 3, "oracle_gap": 1.75 / 3 - 0.5,
        "regressions": [{"from": "text", "to": "f4", "n_regressed": 0, "share": 0.0},
                        {"from": "text", "to": "f8", "n_regressed": 0, "share": 0.0},
                        {"from": "f4", "to": "f8", "n_regressed": 1, "share": 1 / 3}]}
    assert gen["confidence_intervals"]["generation_oracle_gap"][0] is not None
    t = _group(doc, "m", "t")
    assert (t["grid"], t["fixed_accuracy"], t["oracle_headroom"], t["transitions"]) == (["text"], {"text": 0.5},
                                                                                        0.0, [])
    assert (t["visual_confusion"], t["visual_confusion_visual_only"]) == (0.0, 0.0)
    assert t["text_overwrite"] == {"n_text_correct": None, "any": None, "all": None, "by_budget": {}}
    assert t["terminal_regression"]["share"] == 0.0 and t["cascade"] is None


def test_cross_model_section(doc: dict) -> None:
    assert doc["cross_model"] == [{
        "dataset": "d", "protocol_id": "default", "models": ["m", "m2"], "grid": ["text", "f4"], "n_items": 4,
        "fixed_accuracy": {"m": {"text": 0.5, "f4": 0.5}, "m2": {"text": 0.5, "f4": 0.5}},
        "oracle_accuracy": {"m": 0.75, "m2": 0.75}, "oracle_headroom": {"m": 0.25, "m2": 0.25},
        "visual_confusion": {"m": 0.25, "m2": 0.25},
    }]


def test_metrics_command_writes_the_document(sweep_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    res = CliRunner().invoke(app, ["metrics", str(sweep_dir), "--json", str(out), "--n-boot", "10",
                                   "--pair", "f16:text", "--compare", "m:m2", "--cascade-stages", "f4,f16",
                                   "--cascade-match", "f16"])
    assert res.exit_code == 0, res.output
    assert "rescue / harm" in res.output
    doc = json.loads(out.read_text())
    g = _group(doc, "m", "d")
    assert g["pair_transitions"] == [{"from": "f16", "to": "text", "rescue": 1, "harm": 0, "net": 0.25, "churn": 0.25}]
    casc = g["cascade"]
    assert casc["stages"] == ["f4", "f16"] and casc["curve"][0]["mean_frames"] == 20.0
    assert (casc["match"]["fixed_budget"], casc["match"]["frames_saved"]) == ("f16", 1 - 20 / 16)
    flows = {(f["budget_id"], f["rescue"], f["harm"]) for f in doc["checkpoint_flows"] if f["dataset"] == "d"}
    # m -> m2 at text: a 0->1, b 1->0, c 1->1, d 1->?, e 0->0, f 1->?;  at f4: a 1->1, b 1->1, c 0->0, d 1->?
    assert flows == {("text", 1, 1), ("f4", 0, 0)}


def test_metrics_command_rejects_a_non_results_directory(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["metrics", str(tmp_path)])
    assert res.exit_code == 2


def test_metrics_follow_a_sweep_that_is_still_writing(tmp_path: Path) -> None:
    from helpers.metric_rows import frame

    from engine.results.store import ResultStore

    rows = frame({"a": "01", "b": "10", "c": "11"}, budgets={"text": 0, "f4": 4})
    opts = SummaryOptions(n_boot=0)
    with ResultStore(tmp_path) as store:  # holds the lock, like a running driver
        store.add([r for r in rows if r.budget_id == "text"] + [rows[1]])  # a's f4 only so far
        store.commit()
        (tmp_path / "results" / ".part-half-written.parquet.tmp").write_bytes(b"PAR1 torn")
        first = summary_document(summary_tables(load_rows(tmp_path), opts), opts)["groups"][0]
        assert (first["grid"], first["n_items"], first["n_excluded"]) == (["text", "f4"], 1, 2)
        assert first["fixed_accuracy"] == {"text": 0.0, "f4": 1.0}
        store.add([r for r in rows if r.budget_id == "f4" and r.item_id != "a"])
        store.commit()
        later = summary_document(summary_tables(load_rows(tmp_path), opts), opts)["groups"][0]
    assert (later["n_items"], later["n_excluded"]) == (3, 0)
    assert later["fixed_accuracy"] == {"text": 2 / 3, "f4": 2 / 3}
    assert later["transitions"] == [{"from": "text", "to": "f4", "rescue": 1, "harm": 1, "net": 0.0, "churn": 2 / 3}]


def test_metrics_command_restricts_to_chains_and_reads_the_primary_protocol(sweep_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    res = CliRunner().invoke(app, ["metrics", str(sweep_dir), "--json", str(out), "--n-boot", "0",
                                   "--protocol", "random-seed3", "--iso-tolerance", "0.05"])
    assert res.exit_code == 0, res.output
    assert "chain random-seed3" in res.output
    doc = json.loads(out.read_text())
    assert {g["protocol_id"] for g in doc["groups"]} == {"random-seed3", "default"}  # default: text-only groups
    assert [g["grid"] for g in doc["groups"] if g["dataset"] == "d" and g["model_id"] == "m"] == [
        ["text", "f16-random"]]
    assert doc["options"]["protocols"] == ["random-seed3"] and doc["options"]["iso_tolerance"] == 0.05
    # a spec's primary_protocol, read from the manifest, leads its model and dataset
    manifest = sweep_dir / "manifest.json"
    saved = manifest.read_text()
    try:
        manifest.write_text(json.dumps({"sweep_id": "t", "spec": {"primary_protocol": "random-seed3"}}))
        res = CliRunner().invoke(app, ["metrics", str(sweep_dir), "--json", str(out), "--n-boot", "0"])
    finally:
        manifest.write_text(saved)
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert [(g["protocol_id"], g["primary"]) for g in doc["groups"] if (g["model_id"], g["dataset"]) == ("m", "d")] \
        == [("random-seed3", True), ("default", False)]
    assert "robustness" in res.output


def test_chunked_cascade_and_intervals_equal_one_pass(sweep_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the cascade and the bootstrap run a chunk of groups at a time; with one group per chunk (a budget of
    # one row) every table must equal the one-pass tables (several models, datasets, chains, an open
    # dataset, a text-only group, alternate rows)
    from engine.metrics import cascade_metric, rates

    opts = SummaryOptions(n_boot=40, seed=1, taus=(0.0, 0.5, 1.0))
    whole = summary_tables(load_rows(sweep_dir), opts)
    monkeypatch.setattr(cascade_metric, "CASCADE_CHUNK_ROWS", 1)
    monkeypatch.setattr(rates, "BOOTSTRAP_CHUNK_ROWS", 1)
    chunked = summary_tables(load_rows(sweep_dir), opts)
    assert whole.keys() == chunked.keys()
    assert whole["confidence_intervals:intervals"]["model_id"].n_unique() > 1 and whole["cascade:curve"].height > 3
    for name, table in whole.items():
        assert table.equals(chunked[name], null_equal=True), name


def test_tables_side_by_side_equal_one_at_a_time(sweep_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # summary_tables computes TABLE_WORKERS tables at once: every table must be the one computed alone, under
    # its own name and in the same order
    from engine.metrics import summary

    opts = SummaryOptions(n_boot=40, seed=1, taus=(0.0, 0.5, 1.0))
    together = summary_tables(load_rows(sweep_dir), opts)
    monkeypatch.setattr(summary, "TABLE_WORKERS", 1)
    alone = summary_tables(load_rows(sweep_dir), opts)
    assert list(together) == list(alone) and len(alone) > 40
    for name, table in alone.items():
        assert table.equals(together[name], null_equal=True), name


def test_a_failing_metric_fails_the_tables(sweep_dir: Path) -> None:
    from engine.metrics.registry import METRICS, Metric, register_metric

    def boom(inputs: object) -> dict:
        raise RuntimeError("metric tables failed")

    register_metric(Metric(name="failing_metric", tables=boom, document=lambda rows, opts: None))
    try:
        with pytest.raises(RuntimeError, match="metric tables failed"):
            summary_tables(load_rows(sweep_dir), SummaryOptions(n_boot=0))
    finally:
        METRICS.unregister("failing_metric")
