"""Result rows record the item's scoring group as the benchmark defines it: size, type and structure."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from helpers.specs import small_spec_dict

from engine.config import BudgetPoint, parse_spec
from engine.items import Item, Job
from engine.results.schema import rows_to_frame
from engine.sweep.rows import JobContext, error_row


def _row(tmp_path: Path, item: Item):
    spec = parse_spec(small_spec_dict(tmp_path))
    ctx = JobContext(job=Job("tiny", item, BudgetPoint(frames=0)), model_family="qwen2_5_vl",
                     indices=np.zeros(0, dtype=np.int64), width=8, height=8, decoder="pyav", decode_s=0.0, attempt=1)
    return error_row(spec, ctx, "X", "boom")


def test_rows_carry_the_group_size_type_and_structure(tmp_path: Path) -> None:
    """An MMBench rotation of a 3-option question: group size 3, whatever rows exist; a Video-MME v2 question:
    size 4, its type and structure; an item of no group: all null."""
    mmb = Item(dataset="mmbench", dataset_version="mmbench-dev.fs1", item_id="1000007", video_id="i",
               video_path=None, question="Q?", options=("a", "b", "c"), answer="A", kind="mcq", group_id="7",
               extra={"position": 1, "group_size": 3})
    v2 = Item(dataset="videomme_v2", dataset_version="videomme-v2.fs1", item_id="001-2", video_id="001",
              video_path=None, question="Q?", options=("a", "b"), answer="A", kind="mcq", group_id="001",
              extra={"position": 2, "group_size": 4, "group_type": "logic", "group_structure": "[1,[2,3],4]"})
    plain = Item(dataset="d", dataset_version="1", item_id="x", video_id="v", video_path=None, question="Q?",
                 answer="A", kind="mcq")
    rows = [_row(tmp_path, it) for it in (mmb, v2, plain)]
    got = rows_to_frame(rows).select("group_id", "group_size", "group_type", "group_structure").rows()
    assert got == [("7", 3, None, None), ("001", 4, "logic", "[1,[2,3],4]"), (None, None, None, None)]


def test_the_group_table_read_from_rows_is_the_adapters(tmp_path: Path) -> None:
    """Video-MME v2 items through result rows: the group table the scores read from the rows alone
    (`score_groups`) equals the adapter's own (`group_table`), so the group scores need no dataset files."""

    import polars as pl
    from helpers.dataset_files import videomme_v2_fixture
    from helpers.group_tables import group_table
    from polars.testing import assert_frame_equal

    from engine.datasets import build_adapter
    from engine.metrics.benchmark_scores import benchmark_column, score_groups

    items = list(build_adapter(videomme_v2_fixture(tmp_path)).items())
    rows = rows_to_frame([_row(tmp_path, it) for it in items]).lazy().with_columns(benchmark_column())
    got = score_groups(rows).collect().sort("item_id")
    want = group_table(items).with_columns(pl.lit(None, pl.Int64).alias("level")).sort("item_id")
    assert_frame_equal(got, want)
