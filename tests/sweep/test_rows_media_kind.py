"""Result rows record the item's media kind and group, whatever the budget sends."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.specs import small_spec_dict

from engine.config import BudgetPoint, parse_spec
from engine.items import Item, Job
from engine.sweep.rows import JobContext, error_row


@pytest.mark.parametrize(("media", "recorded"), [("image", "image"), ("video", "video"), ("frames", "video"),
                                                 ("none", "none")])
@pytest.mark.parametrize("frames", [0, 16])
def test_media_kind_comes_from_the_item_not_the_budget(tmp_path: Path, media: str, recorded: str,
                                                        frames: int) -> None:
    item = Item(dataset="mme", dataset_version="mme.fs1", item_id="OCR/a.jpg#1", video_id="a", video_path=None,
                question="Q?", answer="yes", kind="yesno", media_kind=media, group_id="OCR/a.jpg")  # type: ignore[arg-type]
    spec = parse_spec(small_spec_dict(tmp_path))
    n = 0 if frames == 0 else 1  # an image at a 16-frame budget is still one picture
    ctx = JobContext(job=Job("tiny", item, BudgetPoint(frames=frames)), model_family="qwen2_5_vl",
                     indices=np.zeros(n, dtype=np.int64), width=8, height=8, decoder="pyav", decode_s=0.0,
                     attempt=1)
    row = error_row(spec, ctx, "X", "boom")
    assert (row.media_kind, row.group_id, row.frames) == (recorded, "OCR/a.jpg", frames)
