"""Several datasets in one sweep (`[[datasets]]`) on the same real engine: items, jobs, status and metrics
per dataset; two datasets reusing a video id never share frames or a media uuid."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import polars as pl
import pytest
from helpers.specs import small_spec_dict

from engine.config import SpecError, parse_spec
from engine.metrics.document import summary_document
from engine.metrics.status import sweep_status
from engine.metrics.summary import SummaryOptions, load_rows, summary_tables
from engine.results import ResultsDir
from engine.sweep import Sweep, start_backends

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)


def _spec_dict(out: Path) -> dict:
    d = small_spec_dict(out)
    a = dict(d.pop("dataset"), n_videos=2)
    b = dict(a, id="syn_slow", fps=6)  # same adapter and seed: the same video ids, other files
    d["datasets"] = [a, b]
    d["budgets"] = [{"frames": 0}, {"frames": 2}]
    return d


def test_two_datasets_run_in_one_sweep(tmp_path: Path, warm_engine: Path) -> None:
    import ray

    spec = parse_spec(_spec_dict(tmp_path / "out"))

    async def go() -> tuple:
        backends = await start_backends(spec)  # started here, on the main thread, like every engine test
        try:
            return await Sweep(spec, backends=backends).run(), await Sweep(spec, backends=backends).run()
        finally:
            await asyncio.gather(*(b.close() for b in backends.values()))

    try:
        summary, again = asyncio.run(go())
    finally:
        ray.shutdown()
    assert summary.jobs_failed == 0 and summary.jobs_ok == 2 * 6 * 2  # 2 datasets x 6 items x 2 budgets
    rows = ResultsDir.open(tmp_path / "out").scan().collect()
    assert sorted(rows["dataset"].unique()) == ["syn_slow", "synthetic"]
    visual = rows.filter(pl.col("frames") > 0)
    # one video id, two files: each dataset's rows name their own media and were decoded from their own file
    per = visual.group_by("dataset").agg(pl.col("media_uuid").unique(), pl.col("video_frames").first())
    uuids = dict(zip(per["dataset"], per["media_uuid"], strict=True))
    assert not set(uuids["synthetic"]) & set(uuids["syn_slow"])
    assert all(u.startswith("synthetic/") for u in uuids["synthetic"])
    frames = dict(zip(per["dataset"], per["video_frames"], strict=True))
    assert frames == {"synthetic": 32, "syn_slow": 24}  # 4 s at 8 and at 6 fps
    # status and metrics per dataset
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert set(manifest["expected_by_dataset"]) == {"synthetic", "syn_slow"}
    st = sweep_status(tmp_path / "out")
    assert (st.done, st.pending) == (24, 0)
    assert st.per_budget.select("dataset", "budget_id", "done").sort("dataset", "budget_id").rows() == [
        ("syn_slow", "f2", 6), ("syn_slow", "text", 6), ("synthetic", "f2", 6), ("synthetic", "text", 6)]
    opts = SummaryOptions(n_boot=0)
    doc = summary_document(summary_tables(load_rows(tmp_path / "out"), opts), opts)
    assert sorted(g["dataset"] for g in doc["groups"]) == ["syn_slow", "synthetic"]
    # a rerun has nothing to do
    assert again.jobs_skipped == 24 and again.jobs_ok == 0


def test_dataset_tables_are_one_way_and_named_once(tmp_path: Path) -> None:
    d = _spec_dict(tmp_path)
    with pytest.raises(SpecError, match="exactly one of the two"):
        parse_spec({**d, "dataset": d["datasets"][0]})
    with pytest.raises(SpecError, match="datasets named twice: synthetic"):
        parse_spec({**d, "datasets": [d["datasets"][0], d["datasets"][0]]})
    single = small_spec_dict(tmp_path)
    assert [ds.dataset_id for ds in parse_spec(single).dataset_specs()] == ["synthetic"]
