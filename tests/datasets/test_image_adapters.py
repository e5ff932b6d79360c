"""Image benchmarks (MMStar, POPE, MME): one-frame items, embedded or path images, their metrics."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from helpers.dataset_files import png_bytes, write_parquet
from helpers.group_tables import group_table
from PIL import Image
from polars.testing import assert_frame_equal

from engine.datasets import MMESpec, MMStarSpec, POPESpec, build_adapter
from engine.datasets.errors import DatasetError
from engine.datasets.mme import extract_yes_no_mme
from engine.datasets.mmstar import extract_letter_mmstar
from engine.datasets.pope import extract_yes_no_pope
from engine.datasets.scoring_rules import mme_scores, mme_totals, pope_metrics
from engine.results.schema import RESULT_SCHEMA

IMAGE = pl.Struct({"bytes": pl.Binary(), "path": pl.String()})
MMSTAR_SCHEMA = {"index": pl.Int64(), "question": pl.String(), "image": IMAGE, "answer": pl.String(),
                 "category": pl.String(), "l2_category": pl.String(),
                 "meta_info": pl.Struct({"source": pl.String(), "split": pl.String()})}
MMSTAR_Q = ("Which option describe the object relationship in the image correctly?\nOptions: A: The suitcase is on "
            "the book., B: The suitcase is beneath the cat., C: The suitcase is beneath the bed., D: The suitcase "
            "is beneath the book.")


def test_mmstar_embedded_images(tmp_path: Path) -> None:
    red, blue = png_bytes((200, 0, 0)), png_bytes((0, 0, 200))
    rows = [{"index": i, "question": MMSTAR_Q, "image": {"bytes": b, "path": f"{i}.png"}, "answer": "A",
             "category": "coarse perception", "l2_category": "image scene and topic",
             "meta_info": {"source": "MMBench", "split": "val"}} for i, b in enumerate([red, blue, red])]
    ann = write_parquet(tmp_path / "mmstar.parquet", rows, MMSTAR_SCHEMA)
    cache = tmp_path / "img"
    adapter = build_adapter(MMStarSpec(name="mmstar", annotations=ann, image_cache=cache))
    items = list(adapter.items())
    first = items[0]
    assert (first.item_id, first.media_kind, first.kind, first.answer) == ("0", "image", "mcq", "A")
    assert first.options == ("The suitcase is on the book.", "The suitcase is beneath the cat.",
                             "The suitcase is beneath the bed.", "The suitcase is beneath the book.")
    assert first.prompt == MMSTAR_Q + "\nAnswer with the option's letter from the given choices directly"
    assert first.video_path.parent == cache and first.video_path.suffix == ".png"
    assert Image.open(first.video_path).getpixel((0, 0)) == (200, 0, 0)
    assert items[2].video_path == first.video_path and items[1].video_path != first.video_path  # one file per image
    assert len(list(cache.iterdir())) == 2


@pytest.mark.parametrize(("response", "want"), [
    ("A", "A"), ("(B) the cat", "B"), ("Option C", "C"), ("The answer is D.", "D"), ("I think A", ""),
    ("Based on the image, C", "B"),  # MMStar's rule reads the first character
])
def test_mmstar_rule(response: str, want: str) -> None:
    assert extract_letter_mmstar(response, "ABCD") == want


POPE_SCHEMA = {"question_id": pl.String(), "question": pl.String(), "answer": pl.String(), "image": pl.String(),
               "category": pl.String()}


def _pope(tmp_path: Path, rows: list[dict[str, object]], **over: object) -> POPESpec:
    media = tmp_path / "coco"
    media.mkdir(exist_ok=True)
    Image.new("RGB", (4, 4)).save(media / "COCO_val2014_000000016631.jpg")
    ann = write_parquet(tmp_path / "pope.parquet", rows, POPE_SCHEMA)
    return POPESpec.model_validate({"name": "pope", "annotations": ann, "media_root": media, **over})


def _pope_row(qid: str, answer: str, category: str = "random", image: str = "COCO_val2014_000000016631.jpg"
              ) -> dict[str, object]:
    return {"question_id": qid, "question": "Is there a person in the image?", "answer": answer, "image": image,
            "category": category}


def test_pope_items_and_paths(tmp_path: Path) -> None:
    spec = _pope(tmp_path, [_pope_row("1", "yes"), _pope_row("1", "no", "adversarial"), _pope_row("2", "No")],
                 categories=["random"])
    items = list(build_adapter(spec).items())
    assert [(it.item_id, it.answer, it.kind) for it in items] == [("random/1", "yes", "yesno"),
                                                                  ("random/2", "no", "yesno")]
    assert items[0].video_path == (spec.media_root / "COCO_val2014_000000016631.jpg").resolve()
    assert items[0].prompt == "Is there a person in the image?\nAnswer the question using a single word or phrase."


def test_pope_bad_rows_and_escape(tmp_path: Path) -> None:
    spec = _pope(tmp_path, [_pope_row("1", "maybe"), _pope_row("2", "yes", "sideways"),
                            _pope_row("3", "yes", image="../../etc/passwd")], strict=False)
    with pytest.raises(DatasetError) as err:
        list(build_adapter(spec).items())
    msg = str(err.value)
    assert "pope.parquet: row 0: answer: expected yes or no, got 'maybe'" in msg
    assert "row 1: category: expected adversarial, popular or random" in msg
    assert "row 2 (item random/3): media path '../../etc/passwd' escapes its root" in msg


@pytest.mark.parametrize(("response", "want"), [
    ("Yes", "yes"), ("No.", "no"), ("There is no person. Yes.", "no"), ("It is not there", "no"), ("maybe", "yes"),
])
def test_pope_rule(response: str, want: str) -> None:
    assert extract_yes_no_pope(response) == want


def _rows(dataset: str, ids: list[str], preds: list[str], answers: list[str], category: list[str]) -> pl.LazyFrame:
    n = len(ids)
    data = {c: [None] * n for c in RESULT_SCHEMA}
    data.update(model_id=["m"] * n, dataset=[dataset] * n, budget_id=["f1"] * n, status=["ok"] * n, item_id=ids,
                pred=preds, answer=answers, category=category,
                correct=[p == a for p, a in zip(preds, answers, strict=True)])
    return pl.LazyFrame(data, schema=RESULT_SCHEMA)


def test_pope_metrics_by_hand() -> None:
    preds = ["yes", "yes", "no", "no", "yes", "no"]
    answers = ["yes", "no", "yes", "no", "yes", "no"]
    got = pope_metrics(_rows("pope", [str(i) for i in range(6)], preds, answers, ["random"] * 6)).collect()
    # tp 2, fp 1, tn 2, fn 1 -> accuracy 4/6, precision 2/3, recall 2/3, F1 2/3, yes-ratio 3/6
    want = pl.DataFrame({"model_id": ["m"], "dataset": ["pope"], "budget_id": ["f1"], "category": ["random"],
                         "n": [6], "tp": [2], "fp": [1], "tn": [2], "fn": [1], "accuracy": [4 / 6],
                         "precision": [2 / 3], "recall": [2 / 3], "yes_ratio": [0.5], "f1": [2 / 3]})
    assert_frame_equal(got, want, check_dtypes=False)


MME_SCHEMA = {"question_id": pl.String(), "image": IMAGE, "question": pl.String(), "answer": pl.String(),
              "category": pl.String()}


def test_mme_items_and_scores(tmp_path: Path) -> None:
    img1, img2 = png_bytes((1, 2, 3)), png_bytes((4, 5, 6))
    rows = [
        {"question_id": "code_reasoning/0020.png", "image": {"bytes": img1, "path": "0020.png"},
         "question": "Is the output 3? Please answer yes or no.", "answer": "Yes", "category": "code_reasoning"},
        {"question_id": "code_reasoning/0020.png", "image": {"bytes": img1, "path": "0020.png"},
         "question": "Is the output 4? Please answer yes or no.", "answer": "No", "category": "code_reasoning"},
        {"question_id": "0001.jpg", "image": {"bytes": img2, "path": "0001.jpg"},
         "question": "Is there a dog? Please answer yes or no.", "answer": "Yes", "category": "existence"},
        {"question_id": "0001.jpg", "image": {"bytes": img2, "path": "0001.jpg"},
         "question": "Is there a cat? Please answer yes or no.", "answer": "No", "category": "existence"},
    ]
    ann = write_parquet(tmp_path / "mme.parquet", rows, MME_SCHEMA)
    items = list(build_adapter(MMESpec(name="mme", annotations=ann, image_cache=tmp_path / "img")).items())
    assert [it.item_id for it in items] == ["code_reasoning/0020.png#0", "code_reasoning/0020.png#1",
                                            "existence/0001.jpg#0", "existence/0001.jpg#1"]
    assert items[0].prompt == "Is the output 3? Please answer yes or no." and items[0].answer == "yes"
    assert items[0].group_id == items[1].group_id == "code_reasoning/0020.png"
    assert (items[2].task_type, items[0].task_type) == ("perception", "cognition")
    rows_lf = _rows("mme", [it.item_id for it in items], ["yes", "no", "yes", "yes"], [it.answer for it in items],
                    [it.category for it in items])
    scores = mme_scores(rows_lf, group_table(items)).collect()
    # code_reasoning: 2/2 right, 1/1 image -> 100 + 100; existence: 1/2 right, 0/1 image -> 50 + 0
    assert scores.select("category", "acc", "acc_plus", "score").rows() == [
        ("code_reasoning", 100.0, 100.0, 200.0), ("existence", 50.0, 0.0, 50.0)]
    totals = mme_totals(scores.lazy()).collect()
    # one subtask of each half ran: no total (the old sums read 50 and 200), the others named
    assert totals.select("perception", "cognition", "perception_missing", "cognition_missing").row(0) == (
        None, None, ["count", "position", "color", "posters", "celebrity", "scene", "landmark", "artwork", "OCR"],
        ["commonsense_reasoning", "numerical_calculation", "text_translation"])
    assert [it.extra["group_size"] for it in items] == [2, 2, 2, 2]


def _mme_row(image: str, question: str, answer: str = "Yes", category: str = "existence") -> dict[str, object]:
    return {"question_id": image, "image": {"bytes": png_bytes((1, 2, 3)), "path": image},
            "question": f"{question}? Please answer yes or no.", "answer": answer, "category": category}


def test_mme_image_without_its_question_pair_is_located(tmp_path: Path) -> None:
    """b.jpg has one question (a cut file), c.jpg three: each of their rows is named; strict = false keeps a.jpg
    and counts the 4 rows skipped. acc+ never sees a one-question image."""
    rows = [_mme_row("a.jpg", "Dog"), _mme_row("b.jpg", "Cat"), _mme_row("a.jpg", "Cat", "No"),
            _mme_row("c.jpg", "One"), _mme_row("c.jpg", "Two"), _mme_row("c.jpg", "Three")]
    ann = write_parquet(tmp_path / "mme.parquet", rows, MME_SCHEMA)
    with pytest.raises(DatasetError) as err:
        list(build_adapter(MMESpec(name="mme", annotations=ann, image_cache=tmp_path / "img")).items())
    text = str(err.value)
    assert "4 problem(s)" in text
    assert ("mme.parquet: row 1 (item existence/b.jpg#0): image 'existence/b.jpg' has 1 question(s), MME asks 2 "
            "per image (this is question 1)") in text, text
    for r, k in ((3, 1), (4, 2), (5, 3)):
        assert (f"mme.parquet: row {r} (item existence/c.jpg#{k - 1}): image 'existence/c.jpg' has 3 question(s), "
                f"MME asks 2 per image (this is question {k})") in text, text
    lenient = build_adapter(MMESpec(name="mme", annotations=ann, image_cache=tmp_path / "img", strict=False))
    assert [it.item_id for it in lenient.items()] == ["existence/a.jpg#0", "existence/a.jpg#1"]
    assert len(lenient.problems) == 4


def test_mme_limit_never_cuts_an_image_in_two(tmp_path: Path) -> None:
    """Questions a0 b0 a1 b1 (an image's two questions apart, as in two shards): limit 1 keeps a's two (it kept a0
    alone: an image of one question), limit 3 both images; nothing is ever half an image."""
    rows = [_mme_row("a.jpg", "Dog"), _mme_row("b.jpg", "Cat"), _mme_row("a.jpg", "Cat", "No"),
            _mme_row("b.jpg", "Dog", "No")]
    ann = write_parquet(tmp_path / "mme.parquet", rows, MME_SCHEMA)

    def ids(limit: int) -> list[str]:
        spec = MMESpec(name="mme", annotations=ann, image_cache=tmp_path / "img", limit=limit)
        return [it.item_id for it in build_adapter(spec).items()]

    assert ids(1) == ["existence/a.jpg#0", "existence/a.jpg#1"]
    assert ids(3) == ids(4) == ["existence/a.jpg#0", "existence/b.jpg#0", "existence/a.jpg#1",
                                "existence/b.jpg#1"]


@pytest.mark.parametrize(("response", "want"), [
    ("yes", "yes"), ("No", "no"), ("Yes, it is.", "yes"), ("not sure", "no"), ("The answer is yes", ""),
])
def test_mme_rule(response: str, want: str) -> None:
    assert extract_yes_no_mme(response) == want


def test_image_path_without_media_root(tmp_path: Path) -> None:
    ann = write_parquet(tmp_path / "pope.parquet", [_pope_row("1", "yes")], POPE_SCHEMA)
    with pytest.raises(DatasetError, match=r"row 0: image is the path .* but the spec sets no media_root"):
        list(build_adapter(POPESpec(name="pope", annotations=ann)).items())


def test_wrong_image_column_type(tmp_path: Path) -> None:
    schema = {**POPE_SCHEMA, "image": pl.Int64()}
    ann = write_parquet(tmp_path / "pope.parquet", [{**_pope_row("1", "yes"), "image": 7}], schema)
    with pytest.raises(DatasetError, match="column 'image' has type Int64, expected an image"):
        list(build_adapter(POPESpec(name="pope", annotations=ann)).items())
