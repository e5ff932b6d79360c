"""`[models.checkpoint]`: checkpoint-study metadata on a model entry."""

from pathlib import Path

import pytest
from helpers.specs import small_spec_dict

from engine.config import SpecError, parse_spec


def _models(*extra: dict) -> list[dict]:
    base = {"id": "base", "family": "qwen2_5_vl", "path": "tiny:qwen2_5_vl", "checkpoint": {"size": "7B"}}
    return [base, *({"family": "qwen2_5_vl", "path": "tiny:qwen2_5_vl", **m} for m in extra)]


def test_checkpoint_metadata_loads(tmp_path: Path) -> None:
    spec = parse_spec(small_spec_dict(tmp_path, models=_models(
        {"id": "ft16", "checkpoint": {"base": "base", "train_frames": 16, "size": "7B", "label": "FT-16"}},
        {"id": "hyb", "checkpoint": {"base": "base", "train_frames": "hybrid"}})))
    base, ft, hyb = spec.models
    assert base.checkpoint is not None and base.checkpoint.base is None and base.checkpoint.size == "7B"
    assert ft.checkpoint is not None and (ft.checkpoint.base, ft.checkpoint.train_frames) == ("base", 16)
    assert ft.checkpoint.label == "FT-16"
    assert hyb.checkpoint is not None and hyb.checkpoint.train_frames == "hybrid"


@pytest.mark.parametrize(("ckpt", "message"), [
    ({"base": "nope", "train_frames": 16}, "names no other model"),
    ({"base": "ft", "train_frames": 16}, "names no other model"),
    ({"train_frames": 16}, "train_frames needs base"),
    ({"base": "base", "train_frames": 0}, "positive frame count"),
    ({"base": "base", "train_frames": "mixed"}, "models.1.checkpoint.train_frames"),
    ({"base": "base", "epochs": 2}, "models.1.checkpoint.epochs"),
])
def test_bad_checkpoint_metadata_is_named(tmp_path: Path, ckpt: dict, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_spec(small_spec_dict(tmp_path, models=_models({"id": "ft", "checkpoint": ckpt})))
