"""Resume integrity without an engine: answer fingerprints on rows and in the manifest, a rerun of a changed spec
refused before any work, what still resumes, and rows written before fingerprints existed.

The committed rows are written here through the store, as a finished run commits them (every key ok, with the
fingerprint the spec gives); every run below has nothing pending or stops before its first job, so none starts Ray
or an engine (the engine-backed version of this is in test_sweep_e2e.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest
from helpers.specs import small_spec_dict, write_toml
from typer.testing import CliRunner

from engine.cli.app import app
from engine.config import SweepSpec, parse_spec
from engine.datasets import load_items
from engine.results import ResultsDir
from engine.results.schema import ResultRow
from engine.results.store import ResultStore
from engine.sweep import Sweep
from engine.sweep.fingerprint import AnswerPrints
from engine.sweep.jobs import plan_jobs
from engine.sweep.policy import GridPolicy
from engine.sweep.prepare import prepare
from engine.sweep.resume import AnswerMismatchError, changed_fields

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)

BUDGETS = [{"frames": 0}, {"frames": 2}]


def _spec(out: Path, **over: Any) -> dict:
    d = small_spec_dict(out, budgets=list(BUDGETS))
    d.update(over)
    return d


def _commit_all(spec: SweepSpec, *, fingerprints: bool = True, failed_budgets: set[str] | None = None) -> int:
    """An ok row for every job of `spec` (an error row for those of `failed_budgets`), with the fingerprint a run of
    `spec` records (or none, as before fingerprints)."""
    adapter, items = load_items(spec.dataset_specs()[0])
    prints = AnswerPrints(spec, {items[0].dataset: adapter.version})
    rows = []
    for jobs in plan_jobs(spec, items, set()).values():
        for j in jobs:
            rows.append(ResultRow(sweep_id=spec.sweep_id, model_id=j.model_id, model_family="qwen2_5_vl",
                                  dataset=j.item.dataset, dataset_version=adapter.version, item_id=j.item.item_id,
                                  video_id=j.item.video_id, task_kind="mcq", budget_id=j.budget.budget_id,
                                  frames=j.budget.frames, policy="uniform", seed=0, pred="A",
                                  correct=j.item.answer == "A", answer=j.item.answer,
                                  answer_fingerprint=prints.of(j) if fingerprints else None,
                                  status="error" if j.budget.budget_id in (failed_budgets or ()) else "ok"))
    with ResultStore(spec.store.out_dir) as st:
        st.add(rows)
    return len(rows)


def _run(spec: SweepSpec) -> Any:
    import ray

    sweep = Sweep(spec)
    summary = asyncio.run(sweep.run())
    assert not ray.is_initialized() and sweep.backends == {}, "nothing was pending: no Ray, no engine"
    return summary


def _manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def test_rows_and_manifest_carry_fingerprints_and_nothing_pending_starts_nothing(tmp_path: Path,
                                                                                 tiny_qwen25: Path) -> None:
    """A rerun with nothing pending starts neither Ray nor an engine (it started both, then cancelled them), and
    records each (model, dataset, budget)'s fingerprint with its fields and the run in the history."""
    spec = parse_spec(_spec(tmp_path / "out"))
    n = _commit_all(spec)
    summary = _run(spec)
    assert (summary.jobs_ok, summary.jobs_skipped) == (0, n)
    m = _manifest(tmp_path / "out")
    rows = ResultsDir.open(tmp_path / "out").scan().collect()
    per_cell = {(r["budget_id"]): r["answer_fingerprint"] for r in rows.iter_rows(named=True)}
    assert m["answer_fingerprints"] == {"tiny": {"synthetic": {b: [fp] for b, fp in per_cell.items()}}}
    f2 = m["answer_fields"][per_cell["f2"]]
    assert f2["budget.frames"] == 2 and f2["prompt.scoring"] == "letter" and f2["family"] == "qwen2_5_vl"
    assert f2["checkpoint"].startswith("sha256:") and f2["decode.decoder"] == "pyav"
    assert "decode.decoder" not in m["answer_fields"][per_cell["text"]]  # text-only decodes nothing
    assert [h["policy"] for h in m["history"]] == ["GridPolicy"] and m["history"][0]["jobs_committed"] == n
    _run(spec)
    assert len(_manifest(tmp_path / "out")["history"]) == 2  # kept, not overwritten


def test_a_changed_prompt_is_refused_before_any_work_naming_the_keys_and_fields(tmp_path: Path,
                                                                                tiny_qwen25: Path) -> None:
    """The issue's case: the same sweep_id and out dir with another system prompt and scoring = "generate" went on
    as '18 already committed', exit 0, and the manifest took the new spec. Now: exit 2, each (model, dataset,
    budget) and each changed field named, the manifest untouched."""
    out = tmp_path / "out"
    spec = parse_spec(_spec(out))
    _commit_all(spec)
    _run(spec)
    before = (out / "manifest.json").read_bytes()
    changed = _spec(out, prompt={"scoring": "generate", "system_prompt": "Answer with one letter."})
    path = write_toml(tmp_path / "changed.toml", changed)
    res = CliRunner().invoke(app, ["run", str(path)], env={"COLUMNS": "200"})
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and isinstance(res.exception, SystemExit)
    for budget in ("text", "f2"):
        assert f"model tiny, dataset synthetic, budget {budget} (9 key(s))" in res.output
    assert "prompt.scoring: 'letter' -> 'generate'" in res.output
    assert "prompt.system_prompt: None -> 'Answer with one letter.'" in res.output
    assert (out / "manifest.json").read_bytes() == before
    import ray

    assert not ray.is_initialized()


def test_a_seed_that_renames_the_items_exits_2_and_commits_nothing(tmp_path: Path, tiny_qwen25: Path) -> None:
    """The issue's case through the CLI: the synthetic seed renames every item (syn0-* -> syn1-*), so no committed
    key matched a planned job and `framesweep run` went on (exit 0), mixing two item sets in one sweep. Now it
    exits 2 before any engine, naming the changed setting, with the shards and the manifest untouched."""
    import hashlib
    import subprocess
    import sys

    out = tmp_path / "out"
    spec = parse_spec(_spec(out))
    _commit_all(spec)
    _run(spec)  # records each fingerprint's fields
    shards = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (out / "results").glob("part-*")}
    before = (out / "manifest.json").read_bytes()
    reseeded = _spec(out)
    reseeded["dataset"] = {**reseeded["dataset"], "seed": 1}
    path = write_toml(tmp_path / "reseeded.toml", reseeded)
    res = subprocess.run([sys.executable, "-m", "engine.cli", "run", str(path)], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "COLUMNS": "200"})
    err = " ".join(res.stderr.split())  # rich wraps long lines
    assert res.returncode == 2, res.stdout + res.stderr
    assert "18 committed key(s) were answered another way" in err and "Traceback" not in err
    for budget in ("text", "f2"):
        assert f"model tiny, dataset synthetic, budget {budget} (9 key(s)): dataset.seed: 0 -> 1" in err
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (out / "results").glob("part-*")} == shards
    assert (out / "manifest.json").read_bytes() == before
    assert set(ResultsDir.open(out).scan().collect()["item_id"].str.slice(0, 4)) == {"syn0"}


def test_max_new_tokens_is_part_of_the_answer_under_letter_scoring(tmp_path: Path, tiny_qwen25: Path) -> None:
    """Open items (token-F1) are generated under `letter` scoring too, and max_new_tokens cuts their answers: a
    rerun with another cap over committed keys is refused (it was fingerprinted only under `generate`)."""
    out = tmp_path / "out"
    spec = parse_spec(_spec(out))
    assert spec.prompt.scoring == "letter"
    _commit_all(spec)
    _run(spec)  # records each fingerprint's fields in the manifest
    with pytest.raises(AnswerMismatchError, match=r"prompt.max_new_tokens: \d+ -> 7"):
        _run(parse_spec(_spec(out, prompt={"max_new_tokens": 7})))


def test_adding_a_budget_model_or_dataset_resumes_and_throughput_settings_do_not_count(tmp_path: Path,
                                                                                      tiny_qwen25: Path) -> None:
    out = tmp_path / "out"
    spec = parse_spec(_spec(out))
    n = _commit_all(spec)
    grown = _spec(out, budgets=[*BUDGETS, {"frames": 4}],
                  datasets=[small_spec_dict(out)["dataset"], {**small_spec_dict(out)["dataset"], "id": "syn2"}])
    del grown["dataset"]
    grown["models"] = [{**spec.models[0].model_dump(mode="json"),
                        "engine": {**spec.models[0].engine.model_dump(mode="json"), "max_num_seqs": 4, "replicas": 2,
                                   "kv_cache_gib": 2.0}},
                       {**spec.models[0].model_dump(mode="json"), "id": "tiny2"}]

    async def plan(d: dict) -> Any:  # the run up to its first job (what `Sweep.run` does before any engine)
        with ResultStore(out) as store:
            return await prepare(parse_spec(d), GridPolicy(), store)

    ready = asyncio.run(plan(grown))
    assert ready.committed == n
    # pending: f4 everywhere, and every budget of the new model and of the new dataset
    assert ready.pending == 2 * 2 * 9 * 3 - n
    # an output-changing engine setting is refused
    other = _spec(out)
    other["models"] = [{**other["models"][0], "engine": {**other["models"][0]["engine"], "dtype": "bfloat16"}}]
    with pytest.raises(AnswerMismatchError, match=r"engine.dtype: 'float32' -> 'bfloat16'"):
        asyncio.run(plan(other))


def test_moving_the_data_folder_resumes(tmp_path: Path, tiny_qwen25: Path) -> None:
    """Paths are not part of the fingerprint: the same videos under another root answer the same way."""
    out = tmp_path / "out"
    first = _spec(out)
    first["dataset"] = {**first["dataset"], "root": str(tmp_path / "a")}
    _commit_all(parse_spec(first))
    moved = {**first, "dataset": {**first["dataset"], "root": str(tmp_path / "b")}}
    assert _run(parse_spec(moved)).jobs_skipped == 18


def test_rows_from_before_fingerprints(tmp_path: Path, tiny_qwen25: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Rows without a fingerprint: judged against the spec the manifest recorded when there is one (a change is
    refused); without a manifest they are adopted with a warning, and from then on their cells have one."""
    out = tmp_path / "out"
    spec = parse_spec(_spec(out))
    _commit_all(spec, fingerprints=False)
    with ResultStore(out) as st:  # the manifest an older framesweep wrote: the spec, no fingerprints
        st.write_manifest({"sweep_id": "test", "spec": spec.model_dump(mode="json")})
    changed = parse_spec(_spec(out, prompt={"system_prompt": "Be brief."}))
    with pytest.raises(AnswerMismatchError, match=r"f2 \(9 key\(s\)\): prompt.system_prompt: None -> 'Be brief.'"):
        _run(changed)
    assert _run(spec).jobs_skipped == 18  # the same spec: resumes

    (out / "manifest.json").unlink()
    with caplog.at_level(logging.WARNING):
        assert _run(spec).jobs_skipped == 18
    assert "18 committed key(s) were written before answer fingerprints" in caplog.text
    with pytest.raises(AnswerMismatchError, match="prompt.system_prompt: None -> 'Be brief.'"):
        _run(changed)  # the adopted cells now have a recorded fingerprint


def test_changed_fields_names_each_change_and_accepts_a_hub_checkpoint_fetched_since() -> None:
    old = {"checkpoint": "unresolved:org/model", "prompt.scoring": "letter", "budget.frames": 8}
    new = {"checkpoint": "sha256:ab", "prompt.scoring": "generate", "budget.frames": 8, "prompt.max_new_tokens": 16}
    assert changed_fields(old, new) == ["prompt.max_new_tokens: (unset) -> 16",
                                        "prompt.scoring: 'letter' -> 'generate'"]
    assert changed_fields({**old, "checkpoint": "sha256:cd"}, new)[0] == "checkpoint: 'sha256:cd' -> 'sha256:ab'"
    assert changed_fields(None, new, "f" * 64) == ["fingerprint ffffffffffff -> (its fields are not recorded in the "
                                                   "manifest)"]


def test_status_forgets_a_budget_dropped_from_the_spec(tmp_path: Path, tiny_qwen25: Path) -> None:
    """A budget dropped from the spec (its failed rows still in the store) is no longer expected: status neither
    counts its failures nor lets them block the live churn (both did: expected counts were merged forever)."""
    from engine.metrics.status import sweep_status

    out = tmp_path / "out"
    wide = parse_spec(_spec(out, budgets=[*BUDGETS, {"frames": 4}]))
    _commit_all(wide, failed_budgets={"f4"})  # a run of the wide spec whose f4 jobs all failed

    async def plan() -> None:  # that run's plan, as `Sweep.run` records it before its first job
        with ResultStore(out) as store:
            await prepare(wide, GridPolicy(), store)

    asyncio.run(plan())
    before = sweep_status(out)
    assert before.failed == 9 and before.churn.height == 0  # f4's errors leave no item answered at every budget
    narrow = parse_spec(_spec(out))  # f4 dropped
    assert _run(narrow).jobs_skipped == 18
    st = sweep_status(out)
    assert "f4" not in st.per_budget["budget_id"].to_list()
    assert (st.done, st.failed, st.pending) == (18, 0, 0)
    assert st.churn.select("from", "to", "n").rows() == [("text", "f2", 9)]
