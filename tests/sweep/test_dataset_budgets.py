"""The budgets each dataset runs: `[[datasets]] budgets = [...]`, and image benchmarks asked as images.

In a sweep with video datasets an image benchmark is asked once per pipeline the video budgets use, as one
image at its own size (the stored image unless the dataset sets one), never at every frame budget; a text-only
(blind) run only where its `budgets` lists `text`. Every expectation below is written out by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.specs import small_spec_dict

from engine.config import SpecError, SweepSpec, parse_spec
from engine.frames.resize import size_for
from engine.items import Item, Job
from engine.sweep.fingerprint import AnswerPrints
from engine.sweep.jobs import plan_jobs
from engine.sweep.policy import GridPolicy

VIDEO_BUDGETS = [{"frames": 0}, {"frames": 8, "max_pixels": 200704}, {"frames": 16, "max_pixels": 200704}]


def _spec(tmp_path: Path, image: dict[str, Any] | None = None, video: dict[str, Any] | None = None,
          budgets: list[dict[str, Any]] | None = None, **over: Any) -> SweepSpec:
    d = small_spec_dict(tmp_path / "out", budgets=budgets or list(VIDEO_BUDGETS))
    d["datasets"] = [{**d.pop("dataset"), **(video or {})},
                     {"name": "mmstar", "annotations": str(tmp_path / "mmstar.parquet"), **(image or {})}]
    d.update(over)
    return parse_spec(d)


def _ids(spec: SweepSpec, dataset: str) -> list[str]:
    return [b.budget_id for b in spec.budgets_for(spec.models[0], dataset)]


def _item(dataset: str, item_id: str, media_kind: str = "video") -> Item:
    return Item(dataset=dataset, dataset_version="1", item_id=item_id, video_id=f"v{item_id}",
                video_path=Path(f"v{item_id}.png"), question="q", options=("a", "b"), answer="A",
                media_kind=media_kind)  # type: ignore[arg-type]


def test_an_image_benchmark_runs_its_image_budget_once_at_the_stored_size(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    assert _ids(spec, "synthetic") == ["text", "f8-px200704", "f16-px200704"]  # a video benchmark: every budget
    (image,) = spec.budgets_for(spec.models[0], "mmstar")  # no text-only run, no re-ask per frame count
    assert (image.budget_id, image.frames, image.pipeline) == ("image", 1, "raw")
    assert (image.max_pixels, image.short_side, image.min_pixels) == (None, None, None)
    assert size_for(1280, 960, image) == (1280, 960)  # the stored image: the processor applies its own limits
    assert size_for(1280, 960, spec.budgets[1]) == (516, 386)  # what a video budget would have sent


def test_one_image_budget_per_pipeline_the_video_budgets_use(tmp_path: Path) -> None:
    spec = _spec(tmp_path, budgets=[*VIDEO_BUDGETS, {"frames": 8, "pipeline": "cached"}])
    assert _ids(spec, "mmstar") == ["image", "image-cached"]
    assert [b.pipeline for b in spec.budgets_for(spec.models[0], "mmstar")] == ["raw", "cached"]
    cached = _spec(tmp_path, decode={"pipeline": "cached"})  # every visual budget cached
    assert _ids(cached, "mmstar") == ["image-cached"]
    text_only = _spec(tmp_path, budgets=[{"frames": 0}])  # a blind sweep stays blind
    assert _ids(text_only, "mmstar") == ["text"]


def test_named_budgets_and_a_size_set_by_the_dataset(tmp_path: Path) -> None:
    spec = _spec(tmp_path, image={"budgets": ["image", "text"], "max_pixels": 1003520},
                 video={"budgets": ["f16-px200704", "text"]})
    assert _ids(spec, "synthetic") == ["text", "f16-px200704"]  # cost order, whatever order they are named in
    text, image = spec.budgets_for(spec.models[0], "mmstar")
    assert (text.budget_id, text.frames) == ("text", 0)
    assert (image.budget_id, image.max_pixels) == ("image", 1003520)
    assert size_for(1280, 960, image) == (1156, 866)  # sqrt(1003520 / 1228800) = 0.9037 -> even sizes
    # a video budget named on an image benchmark sends its one image at that budget's size
    old = _spec(tmp_path, image={"budgets": ["f8-px200704"]})
    assert _ids(old, "mmstar") == ["f8-px200704"]
    # a model's ceiling still applies; an id no dataset has (probes) runs every budget
    capped = _spec(tmp_path, models=[{**small_spec_dict(tmp_path)["models"][0], "max_frames": 8}])
    assert _ids(capped, "synthetic") == ["text", "f8-px200704"] and _ids(capped, "mmstar") == ["image"]
    assert _ids(spec, "probe") == ["text", "f8-px200704", "f16-px200704"]


@pytest.mark.parametrize(("image", "video", "budgets", "message"), [
    ({"budgets": ["f32"]}, None, None,
     ("datasets.1.mmstar.budgets names 'f32', no budget of this sweep; known: f16-px200704, f8-px200704, text, "
      "image")),
    (None, {"budgets": ["image"]}, None, "datasets.0.synthetic.budgets names 'image', no budget of this sweep"),
    ({"budgets": ["image", "image"]}, None, None, "datasets.1.mmstar.budgets names image twice"),
    ({"budgets": []}, None, None, "datasets.1.mmstar.budgets: List should have at least 1 item"),
    ({"max_pixels": 1000, "short_side": 10}, None, None, "set at most one of max_pixels and short_side"),
    ({"min_pixels": 2000, "max_pixels": 1000}, None, None, "min_pixels (2000) is above max_pixels (1000)"),
    (None, None, [*VIDEO_BUDGETS, {"frames": 1, "id": "image"}],
     "budget id 'image' is the name of image benchmark 'mmstar''s image budget"),
])
def test_bad_budget_names_fail_naming_the_field(tmp_path: Path, image: Any, video: Any, budgets: Any,
                                                message: str) -> None:
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _spec(tmp_path, image=image, video=video, budgets=budgets)


def test_jobs_and_expected_counts_per_dataset(tmp_path: Path) -> None:
    spec = _spec(tmp_path, image={"budgets": ["text", "image"]})
    items = [_item("synthetic", "1"), _item("synthetic", "2"), _item("mmstar", "3", "image")]
    jobs = plan_jobs(spec, items, done={("tiny", "mmstar", "3", "text")})
    assert {k: [j.budget.budget_id for j in v] for k, v in jobs.items()} == {
        "synthetic/v1": ["text", "f8-px200704", "f16-px200704"],
        "synthetic/v2": ["text", "f8-px200704", "f16-px200704"],
        "mmstar/v3": ["image"],  # text is committed
    }
    policy = GridPolicy()
    assert policy.expected(spec, items[:2]) == {"tiny": {"text": 2, "f8-px200704": 2, "f16-px200704": 2}}
    assert policy.expected(spec, items[2:]) == {"tiny": {"text": 1, "image": 1}}
    assert policy.expected(spec, []) == {"tiny": {"text": 0, "f8-px200704": 0, "f16-px200704": 0}}


def _prints(spec: SweepSpec) -> AnswerPrints:
    # known checkpoint and template: this test is about the dataset and budget fields
    return AnswerPrints(spec, {"synthetic": "s1", "mmstar": "m1"}, checkpoints={"tiny": "sha256:x"},
                        templates={"qwen2_5_vl": "t"})


def test_fingerprints_budgets_select_jobs_and_the_image_size_is_the_image_budgets(tmp_path: Path) -> None:
    item = _item("mmstar", "3", "image")

    def prints(**image: Any) -> dict[str, str]:
        spec = _spec(tmp_path, image={"budgets": ["text", "image"], **image})
        p = _prints(spec)
        return {b.budget_id: p.of(Job("tiny", item, b)) for b in spec.budgets_for(spec.models[0], "mmstar")}

    spec = _spec(tmp_path, image={"budgets": ["text", "image"]})
    p = _prints(spec)
    image = spec.budgets_for(spec.models[0], "mmstar")[1]
    fields = p.fields[p.of(Job("tiny", item, image))]
    assert (fields["budget.frames"], fields["budget.max_pixels"], fields["budget.pipeline"]) == (1, None, "raw")
    assert fields["decode.decoder"] == "pyav"
    assert not {"dataset.budgets", "dataset.max_pixels", "dataset.short_side", "dataset.min_pixels"} & set(fields)
    base = prints()
    assert prints(budgets=["image", "text"], strict=False) == base  # which jobs exist is no answer setting
    sized = prints(max_pixels=50176)
    assert sized["text"] == base["text"] and sized["image"] != base["image"]  # the size shapes the image only


def _mmstar(path: Path, n: int) -> Path:
    """An MMStar parquet of `n` questions over embedded 8x6 PNG images."""
    import io

    import polars as pl
    from PIL import Image

    def png(i: int) -> bytes:
        buf = io.BytesIO()
        Image.new("RGB", (8, 6), (40 * i, 0, 0)).save(buf, format="PNG")
        return buf.getvalue()

    rows = [{"index": i, "question": "Which?\nOptions: A: x, B: y", "image": {"bytes": png(i), "path": f"{i}.png"},
             "answer": "A", "category": "c", "l2_category": "l2"} for i in range(n)]
    schema = {"index": pl.Int64(), "question": pl.String(), "image": pl.Struct({"bytes": pl.Binary(),
              "path": pl.String()}), "answer": pl.String(), "category": pl.String(), "l2_category": pl.String()}
    path.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(rows, schema=schema).write_parquet(path)
    return path


def test_inspect_counts_each_datasets_own_budgets(tmp_path: Path) -> None:
    from engine.datasets.survey import survey

    _mmstar(tmp_path / "mmstar.parquet", 2)
    spec = _spec(tmp_path, image={"image_cache": str(tmp_path / "img")})
    video, image = survey(spec)
    assert (video.budgets_by_model, video.jobs_by_model) == ({"tiny": ["text", "f8-px200704", "f16-px200704"]},
                                                             {"tiny": 9 * 3})  # 3 videos x 3 questions
    assert (image.budgets_by_model, image.jobs_by_model) == ({"tiny": ["image"]}, {"tiny": 2})
