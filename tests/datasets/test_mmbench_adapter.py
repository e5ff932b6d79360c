"""MMBench dev: the TSV with base64 images, circular evaluation over rotated options, its official score."""

from __future__ import annotations

import base64
import csv
import io
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from helpers.dataset_files import png_bytes
from helpers.group_tables import group_table
from PIL import Image
from polars.testing import assert_frame_equal

from engine.datasets import MMBenchSpec, build_adapter
from engine.datasets.errors import DatasetError
from engine.datasets.mmbench import extract_letter_mmbench, mmbench_prompt, rotate
from engine.datasets.scoring_rules import mmbench_circular_accuracy
from engine.results.schema import RESULT_SCHEMA

HEADER = ["index", "question", "hint", "A", "B", "C", "D", "answer", "category", "image", "source", "l2-category",
          "comment", "split"]


def jpeg_bytes(colour: tuple[int, int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (16, 12), colour).save(buf, format="JPEG", quality=95)
    return buf.getvalue()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def row(index: int, answer: str = "B", options: tuple[str, ...] = ("cat", "dog", "bird", "fish"),
        image: str | None = None, hint: str = "", **over: Any) -> dict[str, Any]:
    """One row of MMBench_DEV_EN.tsv (VLMEvalKit layout; missing options and hints are empty cells)."""
    cells = dict(zip("ABCD", [*options, "", "", ""][:4], strict=True))
    rec = {"index": str(index), "question": "Which animal is shown?", "hint": hint, **cells, "answer": answer,
           "category": "object_localization", "image": image if image is not None else b64(png_bytes()),
           "source": "MMBench", "l2-category": "fine-grained_perception (instance-level)", "comment": "",
           "split": "dev"}
    rec.update(over)
    return rec


def write_tsv(path: Path, rows: list[dict[str, Any]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, HEADER, delimiter="\t")
        w.writeheader()
        w.writerows(rows)
    return path


def spec(tmp_path: Path, rows: list[dict[str, Any]], **over: Any) -> MMBenchSpec:
    ann = write_tsv(tmp_path / "MMBench_DEV_EN.tsv", rows)
    return MMBenchSpec.model_validate({"name": "mmbench", "annotations": ann, "image_cache": tmp_path / "img", **over})


def test_rotations_share_a_group_and_move_the_answer(tmp_path: Path) -> None:
    rows = [row(0, "B", image=b64(png_bytes((200, 0, 0)))),
            row(1, "C", options=("one", "two", "three"), image=b64(jpeg_bytes((0, 0, 200))),
                hint="Count the \"dots\".\nThen answer."),
            row(2, "A", image="0")]  # VLMEvalKit: a short image cell names the row whose image it shares
    items = list(build_adapter(spec(tmp_path, rows)).items())
    assert [it.item_id for it in items] == ["0", "1000000", "2000000", "3000000", "1", "1000001", "2000001",
                                            "2", "1000002", "2000002", "3000002"]
    q0 = [it for it in items if it.group_id == "0"]
    assert [it.options for it in q0] == [("cat", "dog", "bird", "fish"), ("dog", "bird", "fish", "cat"),
                                         ("bird", "fish", "cat", "dog"), ("fish", "cat", "dog", "bird")]
    assert [it.answer for it in q0] == ["B", "A", "D", "C"]  # always "dog"
    assert all(it.options["ABCD".index(it.answer)] == "dog" for it in q0)
    assert [it.extra["position"] for it in q0] == [0, 1, 2, 3]
    q1 = [it for it in items if it.group_id == "1"]
    assert [it.answer for it in q1] == ["C", "B", "A"] and len(q1[0].options) == 3
    assert q1[0].prompt == ("Count the \"dots\".\nThen answer. Which animal is shown? There are several options:\n"
                            "A. one\nB. two\nC. three\nAnswer with the option's letter from the given choices directly.")
    first = items[0]
    assert (first.media_kind, first.kind, first.category, first.task_type) == (
        "image", "mcq", "object_localization", "fine-grained_perception (instance-level)")
    assert first.prompt.startswith("Which animal is shown? There are several options:\nA. cat")
    assert Image.open(first.video_path).getpixel((0, 0)) == (200, 0, 0) and first.video_path.suffix == ".png"
    assert q1[0].video_path.suffix == ".jpg" and Image.open(q1[0].video_path).size == (16, 12)
    q2 = [it for it in items if it.group_id == "2"]
    assert q2[0].video_path == first.video_path and q2[0].video_id == first.video_id  # the shared image


def test_file_with_rotated_copies_and_vanilla(tmp_path: Path) -> None:
    # the original release holds the rotated copies itself: index + r x 1e6, options already rotated
    rows = [row(5, "B", options=("x", "y")), row(1_000_005, "A", options=("y", "x"), image="5")]
    items = list(build_adapter(spec(tmp_path, rows)).items())
    assert [(it.item_id, it.group_id, it.extra["position"], it.answer) for it in items] == [
        ("5", "5", 0, "B"), ("1000005", "5", 1, "A")]
    (tmp_path / "v").mkdir()
    vanilla = list(build_adapter(spec(tmp_path / "v", rows, circular=False)).items())
    assert [it.item_id for it in vanilla] == ["5"]
    plain = list(build_adapter(spec(tmp_path / "v", [row(7)], circular=False)).items())
    assert [it.item_id for it in plain] == ["7"]


def test_malformed_rows_are_located(tmp_path: Path) -> None:
    rows = [row(0), row(1, answer="E"), row(2, options=("only",)), row(3, image="!!not base64!!" * 8),
            row(4, image="99")]
    s = spec(tmp_path, rows)
    with pytest.raises(DatasetError) as err:
        list(build_adapter(s).items())
    text = str(err.value)
    assert "4 problem(s)" in text
    for r, reason in ((1, "answer: expected one of A, B, C, D"), (2, "expected at least A and B"),
                      (3, "not a base64-encoded image"), (4, "names no row with an image")):
        assert f"MMBench_DEV_EN.tsv: row {r}" in text and reason in text
    lenient = build_adapter(spec(tmp_path, rows, strict=False))
    assert {it.group_id for it in lenient.items()} == {"0"} and len(lenient.problems) == 4


def test_base64_that_is_no_image_is_a_bad_row_not_media_found(tmp_path: Path) -> None:
    """Valid base64 of some text was written to the image cache as `<digest>.img` and counted as media found
    by inspect; every run then failed its jobs as error rows. It is a located row problem now: the load stops
    (strict), or the row is skipped and counted (strict = false) and is no media at all."""
    from engine.config import parse_spec
    from engine.sweep.survey import survey

    text = b64(b"this decodes fine as base64, but it is a sentence and no picture at all." * 2)
    rows = [row(0), row(1, image=text), row(2, image="1")]  # row 2 shares row 1's "image"
    with pytest.raises(DatasetError) as err:
        list(build_adapter(spec(tmp_path, rows)).items())
    said = str(err.value)
    for r in (1, 2):
        assert f"MMBench_DEV_EN.tsv: row {r}: image: the 144 bytes are no image Pillow can read" in said, said
    assert "2 problem(s)" in said
    lenient = spec(tmp_path, rows, strict=False)
    adapter = build_adapter(lenient)
    assert {it.group_id for it in adapter.items()} == {"0"} and len(adapter.problems) == 2
    assert [p.suffix for p in (tmp_path / "img").iterdir()] == [".png"]  # nothing else was cached
    sweep = parse_spec({"sweep_id": "mmb", "models": [{"id": "m", "family": "qwen2_5_vl", "path": "tiny:qwen2_5_vl"}],
                        "dataset": lenient.model_dump(mode="json"), "budgets": [{"frames": 1}],
                        "store": {"out_dir": str(tmp_path / "out")}})
    (got,) = survey(sweep)  # what `framesweep inspect` shows
    assert (got.media_total, got.media_found, len(got.problems)) == (1, 1, 2)


def test_missing_column_is_fatal(tmp_path: Path) -> None:
    path = tmp_path / "MMBench_DEV_EN.tsv"
    path.write_text("index\tquestion\tA\tB\tanswer\tcategory\n0\tq\ta\tb\tA\tc\n")
    with pytest.raises(DatasetError, match="missing column 'image'"):
        list(build_adapter(MMBenchSpec(name="mmbench", annotations=path, strict=False)).items())


@pytest.mark.parametrize(("response", "want"), [
    ("B", "B"), ("B. dog", "B"), ("(C)", "C"), ("The answer is (D).", "D"), ("dog", "B"),
    ("A dog is sitting on the mat", "B"),  # "A" as an article: the option text decides
    ("It is a cat or a dog", ""), ("I do not know", ""),
])
def test_mmbench_answer_matching(response: str, want: str) -> None:
    assert extract_letter_mmbench(response, ("cat", "dog", "bird", "fish")) == want


def test_rotate_and_prompt_without_hint() -> None:
    assert rotate(("a", "b", "c"), "A", 1) == (("b", "c", "a"), "C")
    assert mmbench_prompt("Q?", None, ("a", "b")) == ("Q? There are several options:\nA. a\nB. b\n"
                                                      "Answer with the option's letter from the given choices directly.")


def test_circular_accuracy_hand_computed(tmp_path: Path) -> None:
    rows = [row(0, "B"), row(1, "A", options=("p", "q")), row(2, "A", options=("s", "t"))]
    items = list(build_adapter(spec(tmp_path, rows)).items())
    groups = group_table(items)
    # q0: all 4 rotations right; q1: rotation 0 right, rotation 1 wrong; q2: rotation 1 never answered
    right = {"0": True, "1000000": True, "2000000": True, "3000000": True, "1": True, "1000001": False,
             "2": True}
    recs = [{"model_id": "m", "dataset": "mmbench", "budget_id": "f1", "item_id": k, "status": "ok", "correct": v,
             "category": "object_localization"} for k, v in right.items()]
    recs.append({"model_id": "m", "dataset": "mmbench", "budget_id": "f1", "item_id": "1000002", "status": "error",
                 "correct": None, "category": "object_localization"})
    res = pl.LazyFrame(recs, schema={c: RESULT_SCHEMA[c] for c in recs[0]})
    got = mmbench_circular_accuracy(res, groups).collect()
    # 3 questions: q0 right; q1 complete, wrong; q2 a rotation failed: wrong (as VLMEvalKit counts it) ->
    # official 1/3; over the 2 complete questions 1/2; rotation 0 right for all three -> vanilla 3/3
    want = pl.DataFrame({"model_id": ["m"], "dataset": ["mmbench"], "budget_id": ["f1"], "n_questions": [3],
                         "n_complete": [2], "n_incomplete": [1], "circular_accuracy": [1 / 3],
                         "circular_accuracy_complete": [0.5], "vanilla_accuracy": [1.0]},
                        schema_overrides={"n_questions": pl.UInt32, "n_complete": pl.UInt32,
                                          "n_incomplete": pl.UInt32})
    assert_frame_equal(got, want)
    by_cat = mmbench_circular_accuracy(res, groups, by=["category"]).collect()
    assert by_cat["circular_accuracy"].to_list() == [1 / 3]


def test_rotation_count_is_the_option_count_and_limit_counts_questions(tmp_path: Path) -> None:
    """q0 has 4 options, q1 3, q2 4: group_size 4, 3, 4 on every rotation (1 without circular evaluation).
    limit = 2 keeps q0's 4 and q1's 3 rotations (it kept the first 2 rotations of q0: one question that
    looked complete with 2 of its 4 rotations)."""
    rows = [row(0, "B"), row(1, "A", options=("p", "q", "r")), row(2, "C")]
    items = list(build_adapter(spec(tmp_path, rows)).items())
    assert [(it.group_id, it.extra["group_size"]) for it in items] == [("0", 4)] * 4 + [("1", 3)] * 3 + [("2", 4)] * 4
    cut = list(build_adapter(spec(tmp_path, rows, limit=2)).items())
    assert [it.item_id for it in cut] == ["0", "1000000", "2000000", "3000000", "1", "1000001", "2000001"]
    assert group_table(cut)["group_size"].to_list() == [4, 4, 4, 4, 3, 3, 3]
    (tmp_path / "v").mkdir()
    vanilla = list(build_adapter(spec(tmp_path / "v", rows, circular=False, limit=2)).items())
    assert [(it.item_id, it.extra["group_size"]) for it in vanilla] == [("0", 1), ("1", 1)]


def test_a_file_missing_a_rotated_copy_is_located(tmp_path: Path) -> None:
    """The file rotates q5 (3 options) but holds rotations 0 and 1 only: both rows are named, and with
    strict = false the question is skipped (2 problems); q6 with its 2 rotations is kept."""
    rows = [row(5, "B", options=("x", "y", "z")), row(1_000_005, "A", options=("y", "z", "x"), image="5"),
            row(6, "A", options=("s", "t")), row(1_000_006, "B", options=("t", "s"), image="5")]
    with pytest.raises(DatasetError) as err:
        list(build_adapter(spec(tmp_path, rows)).items())
    text = str(err.value)
    assert "2 problem(s)" in text
    for r in (0, 1):
        assert (f"MMBench_DEV_EN.tsv: row {r} (item {r * 1_000_000 + 5}): question 5: the file holds rotations "
                "[0, 1] of its 3 options (circular evaluation needs each once)") in text, text
    lenient = build_adapter(spec(tmp_path, rows, strict=False))
    assert [it.item_id for it in lenient.items()] == ["6", "1000006"] and len(lenient.problems) == 2
