"""Image tasks through the `lmms_eval` adapter: a task whose doc_to_visual returns one PIL image decoded from its
parquet (POPE, on the installed lmms-eval's unmodified YAML and utils, over a small local parquet in its real
schema written here: no hub) becomes image items whose image is written once, losslessly, to the image cache;
it is asked as the image benchmarks are (once, as one image, at its image budgets); its own process_results
scores a row and its own aggregation is the official score per budget.

lmms-eval is an optional extra (`framesweep[lmms]`): without it every test here skips, saying so.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.lmms import NEEDS_LMMS, empty_hf_home
from helpers.lmms_pope import PIXELS, POPE, pope_release
from helpers.metric_rows import lazy, row
from helpers.specs import small_spec_dict
from PIL import Image

from engine.config import parse_spec
from engine.datasets import build_adapter
from engine.datasets.errors import DatasetError
from engine.datasets.lmms_eval import LmmsEvalSpec
from engine.metrics.benchmark_scores import benchmark_scores

pytestmark = NEEDS_LMMS

@pytest.fixture
def hf_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return empty_hf_home(tmp_path / "hf", monkeypatch)


def _spec(tmp_path: Path, **over: Any) -> LmmsEvalSpec:
    return LmmsEvalSpec(name="lmms_eval", task="pope", dataset_path=pope_release(tmp_path / "pope_release"),
                        image_cache=tmp_path / "images", **over)


def _utils() -> Any:
    import lmms_eval

    path = Path(lmms_eval.__file__).parent / "tasks" / "pope" / "utils.py"
    spec = importlib.util.spec_from_file_location("pope_utils", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pope_documents_are_image_items_whose_cached_png_holds_the_images_exact_pixels(hf_home: Path,
                                                                                       tmp_path: Path) -> None:
    items = list(build_adapter(_spec(tmp_path)).items())
    assert [it.item_id for it in items] == ["1", "2", "3"] and {it.dataset for it in items} == {"pope"}
    assert {it.media_kind for it in items} == {"image"}
    for item, (*_, image, _category) in zip(items, POPE, strict=True):
        assert item.video_path.parent == tmp_path / "images" and item.video_path.suffix == ".png"
        with Image.open(item.video_path) as im:
            assert np.array_equal(np.asarray(im.convert("RGB")), PIXELS[image])
    # written once, by content: the two questions over one image share its file (one decode, one "video")
    assert items[0].video_path == items[1].video_path != items[2].video_path
    assert items[0].video_id == items[1].video_id
    assert len(list((tmp_path / "images").iterdir())) == 2
    assert items[0].prompt == "Is there a dog in the image?\nAnswer the question using a single word or phrase."
    assert {it.dataset_version for it in items} == {"lmms_eval-0.7.3/pope@0.0/pope_accuracy:score"}


def test_pope_answers_are_scored_by_the_tasks_process_results(hf_home: Path, tmp_path: Path) -> None:
    adapter = build_adapter(_spec(tmp_path))
    items = list(adapter.items())
    utils = _utils()
    doc = {"question_id": "1", "answer": "yes"}
    for response, right in (("Yes", 1.0), ("no", 0.0), ("Yes, there is.", 0.0)):
        own = utils.pope_process_results(doc, [response])["pope_accuracy"]
        scored = adapter.score(items[0], response)
        assert scored.score == own["score"] == right
        assert scored.correct is (right == 1.0)  # a yes/no item: its 0/1 score is its correctness (flows)
        assert scored.detail is not None and json.loads(scored.detail) == own
    assert {it.kind for it in items} == {"yesno"} and [it.answer for it in items] == [a for _, _, a, *_ in POPE]


def test_an_image_task_is_asked_once_as_one_image_not_at_every_frame_budget(hf_home: Path,
                                                                            tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    assert spec.asks_images
    sweep = parse_spec(small_spec_dict(tmp_path / "out", dataset=spec.model_dump(mode="json")))
    assert [b.budget_id for b in sweep.dataset_budgets(spec)] == ["image"]
    # a video task is not: its frame budgets
    video = LmmsEvalSpec(name="lmms_eval", task="videomme", dataset_path=tmp_path / "nothing_here")
    assert not video.asks_images


SEVERAL = """
from PIL import Image

def text(doc, kwargs=None):
    return doc["q"]

def two_images(doc):
    return [Image.new("RGB", (2, 2)), Image.new("RGB", (2, 2), "red")]

def results(doc, results):
    return {"accuracy": float(results[0].strip() == doc["a"])}
"""

TASK = """
task: {name}
dataset_path: {root}
test_split: test
output_type: generate_until
doc_to_visual: !function utils.{visual}
doc_to_text: !function utils.text
doc_to_target: "a"
process_results: !function utils.results
metric_list:
  - metric: accuracy
    aggregation: mean
    higher_is_better: true
"""


def test_several_images_per_document_are_refused_naming_the_task_and_the_count(hf_home: Path,
                                                                              tmp_path: Path) -> None:
    import polars as pl

    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "utils.py").write_text(SEVERAL)
    (tmp_path / "data").mkdir()
    pl.DataFrame([{"q": "What?", "a": "A"}]).write_parquet(tmp_path / "data" / "test-00000-of-00001.parquet")
    (folder / "two_task.yaml").write_text(TASK.format(name="two_task", root=tmp_path, visual="two_images"))
    with pytest.raises(DatasetError) as err:
        list(build_adapter(LmmsEvalSpec(name="lmms_eval", task="two_task", include_path=folder)).items())
    assert "lmms-eval task 'two_task': its doc_to_visual returns 2 images" in str(err.value)


def test_the_official_score_per_budget_is_popes_own_aggregation(hf_home: Path) -> None:
    """Hand-made rows whose score_detail is what pope_process_results returns, at the image budget and a text-only
    one: the official score per budget is the task's own pope_aggregate_accuracy over the same dicts."""
    utils = _utils()
    said = {"image": ["yes", "no", "no"], "f0": ["no", "no", "no"]}
    version = "lmms_eval-0.7.3/pope@0.0/pope_accuracy:score"
    rows, by_hand = [], {}
    for budget, answers in said.items():
        details = [utils.pope_process_results({"question_id": q, "answer": a}, [s])["pope_accuracy"]
                   for (q, _, a, *_), s in zip(POPE, answers, strict=True)]
        by_hand[budget] = utils.pope_aggregate_accuracy(details)
        rows += [row("m", "pope", d["question_id"], budget, 0 if budget == "f0" else 1, "1" if d["score"] else "0",
                     dataset_version=version, score_detail=json.dumps(d)) for d in details]
    got = benchmark_scores(lazy(rows)).collect()
    mine = got.filter(got["metric"] == "lmms_eval_score")
    assert set(mine["subset"]) == {"pope_accuracy"}
    assert by_hand == pytest.approx({"image": 2 / 3, "f0": 1 / 3})
    assert dict(zip(mine["budget_id"], mine["value"], strict=True)) == pytest.approx(by_hand)


FILE = SEVERAL.replace("def two_images(doc):", '''def image_file(doc):
    import os
    return [os.path.join(os.environ["HF_HOME"], "mine", "p.jpg")]

def two_images(doc):''')


def test_an_image_file_task_is_asked_once_as_one_image_too(hf_home: Path, tmp_path: Path) -> None:
    """A task whose doc_to_visual names one image file (not a PIL image): an image item, asked at the image budget."""
    import polars as pl

    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "utils.py").write_text(FILE)
    (tmp_path / "data").mkdir()
    pl.DataFrame([{"q": "What?", "a": "A"}]).write_parquet(tmp_path / "data" / "test-00000-of-00001.parquet")
    (folder / "file_task.yaml").write_text(TASK.format(name="file_task", root=tmp_path, visual="image_file"))
    (hf_home / "mine").mkdir()
    Image.fromarray(PIXELS[0]).save(hf_home / "mine" / "p.jpg")
    spec = LmmsEvalSpec(name="lmms_eval", task="file_task", include_path=folder, media_root=hf_home / "mine")
    [item] = build_adapter(spec).items()
    assert item.media_kind == "image" and item.video_path == (hf_home / "mine" / "p.jpg").resolve()
    sweep = parse_spec(small_spec_dict(tmp_path / "out", dataset=spec.model_dump(mode="json")))
    assert spec.asks_images and [b.budget_id for b in sweep.dataset_budgets(spec)] == ["image"]
