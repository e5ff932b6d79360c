"""Video-MMMU: the released per-track parquet layout, lmms-eval's prompts, the official MMMU scoring."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
from helpers.dataset_files import png_bytes, touch, write_parquet

from engine.config.datasets import VideoMMMUSpec
from engine.datasets import build_adapter
from engine.datasets.errors import DatasetError
from engine.datasets.video_mmmu import eval_open, parse_multi_choice_response, parse_open_response

SCHEMA = {"id": pl.String(), "question": pl.String(), "options": pl.List(pl.String()), "answer": pl.String(),
          "question_type": pl.String()}
ADAPTATION_SCHEMA = {**SCHEMA, "image": pl.Struct({"bytes": pl.Binary(), "path": pl.String()})}
OPTS = ["2 moles", "4 moles", "6 moles", "8 moles"]


def q(vid: str, question: str, answer: str, options: list[str] | None = None,
      qtype: str = "multiple-choice", **over: Any) -> dict[str, Any]:
    rec = {"id": vid, "question": question, "options": OPTS if options is None else options, "answer": answer,
           "question_type": qtype}
    rec.update(over)
    return rec


def fixture(root: Path, perception: list[dict[str, Any]] | None = None) -> VideoMMMUSpec:
    """Three tracks over two lecture videos (one in its discipline folder, one at the root)."""
    ann, media = root / "VideoMMMU", root / "videos"
    chem, acc = "validation_Chemistry_12", "validation_Accounting_3"
    touch(media / "Science" / f"{chem}.mp4")
    touch(media / f"{acc}.mp4")
    write_parquet(ann / "Perception" / "test-00000-of-00001.parquet", perception if perception is not None else [
        q(chem, "How many moles of oxygen are shown on the slide?", "B"),
        q(acc, "Which account is debited?", "A", ["Cash", "Revenue", "Equity"]),
    ], SCHEMA)
    write_parquet(ann / "Comprehension" / "test-00000-of-00001.parquet", [
        q(chem, "Using the method in the video, what is the molar mass of water in g/mol?", "18.02", [], "open"),
    ], SCHEMA)
    img = {"bytes": png_bytes(), "path": "q.png"}
    write_parquet(ann / "Adaptation" / "test-00000-of-00001.parquet", [
        q(chem, "<image 1> Which reagent is limiting?", "C", ["A. H2", "B. N2", "C. O2", "D. none"], image=img),
        q(acc, "<image 1> What is the net income (in $)?", "1,250", [], "open", image=img),
    ], ADAPTATION_SCHEMA)
    return VideoMMMUSpec(name="video_mmmu", annotation_root=ann, media_root=media)


def test_tracks_items_and_video_paths(tmp_path: Path) -> None:
    spec = fixture(tmp_path)
    items = {it.item_id: it for it in build_adapter(spec).items()}
    assert list(items) == ["Perception/validation_Chemistry_12", "Perception/validation_Accounting_3",
                           "Comprehension/validation_Chemistry_12", "Adaptation/validation_Chemistry_12",
                           "Adaptation/validation_Accounting_3"]
    p = items["Perception/validation_Chemistry_12"]
    assert (p.kind, p.answer, p.options, p.task_type, p.category) == ("mcq", "B", tuple(OPTS), "Perception",
                                                                      "Chemistry")
    assert p.video_path == (tmp_path / "videos" / "Science" / "validation_Chemistry_12.mp4").resolve()
    assert items["Perception/validation_Accounting_3"].video_path == (
        tmp_path / "videos" / "validation_Accounting_3.mp4").resolve()
    assert p.prompt == ("How many moles of oxygen are shown on the slide?\nA. 2 moles\nB. 4 moles\nC. 6 moles\n"
                        "D. 8 moles\nPlease ignore the Quiz question in last frame of the video.")
    c = items["Comprehension/validation_Chemistry_12"]
    assert (c.kind, c.answer, c.options, c.references) == ("open", "18.02", (), ("18.02",))
    assert c.video_id == p.video_id  # the tracks ask about one video: one decode
    a = items["Adaptation/validation_Chemistry_12"]
    assert a.options == ("H2", "N2", "O2", "none")  # already lettered in the file: kept in the prompt as given
    assert a.prompt == ("You should watch and learn the video content. Then apply what you learned to answer the "
                        "following multi-choice question. The image for this question is at the end of the video.\n"
                        "<image 1> Which reagent is limiting?\nA. H2\nB. N2\nC. O2\nD. none")
    assert items["Adaptation/validation_Accounting_3"].prompt.startswith(
        "You should watch and learn the video content. Then apply what you learned to answer the following "
        "open-ended question.")


def test_official_scoring(tmp_path: Path) -> None:
    adapter = build_adapter(fixture(tmp_path))
    items = {it.item_id: it for it in adapter.items()}
    mcq = items["Perception/validation_Chemistry_12"]
    assert adapter.score(mcq, "B").correct and adapter.score(mcq, "The answer is B.").correct
    assert not adapter.score(mcq, "A").correct
    assert adapter.score(mcq, "Since each molecule carries two atoms, the slide shows 4 moles in total").pred == "B"
    assert adapter.score(mcq, "").pred is None
    num = items["Comprehension/validation_Chemistry_12"]
    assert adapter.score(num, "18.02").correct
    assert adapter.score(num, "The molar mass is 18.020 g/mol.").correct  # numbers compared as floats
    assert adapter.score(num, "2 x 1.01 + 16.00 = 18.02").correct
    assert not adapter.score(num, "It is 18.2").correct
    money = items["Adaptation/validation_Accounting_3"]
    assert adapter.score(money, "So the net income is $1,250.").correct  # "1,250" is 1250.0 either side
    s = adapter.score(money, "The net income is 1250")
    assert s.correct and s.score == 1.0 and s.pred == "1250"


@pytest.mark.parametrize(("response", "want"), [
    ("(C)", "C"), ("C: 6 moles", "C"), ("A. 2 moles, no wait, B. 4 moles", "B"), ("I pick D ", "D"),
    ("nothing here", ""), ("I think the slide clearly shows 8 moles of it", "D"),
])
def test_parse_multi_choice(response: str, want: str) -> None:
    assert parse_multi_choice_response(response, OPTS) == want


def test_parse_open_and_eval_open() -> None:
    assert 3.14 in parse_open_response("Therefore the value is 3.14159")  # rounded to 2 decimals
    assert eval_open("3.14", parse_open_response("Therefore the value is 3.14159"))
    assert eval_open(["three", "3"], parse_open_response("there are 3"))
    assert not eval_open("a", parse_open_response("banana"))  # a one-letter answer never matches inside a word
    assert parse_open_response("") == []


def test_malformed_rows_are_located(tmp_path: Path) -> None:
    bad = [q("validation_Chemistry_12", "ok?", "B"), q("nounderscores", "?", "A"),
           q("validation_Physics_1", "?", "E"), q("validation_Physics_2", "?", "A", ["only"])]
    spec = fixture(tmp_path, perception=bad)
    with pytest.raises(DatasetError) as err:
        list(build_adapter(spec).items())
    text = str(err.value)
    assert "3 problem(s)" in text
    assert "Perception/test-00000-of-00001.parquet: row 1" in text and "expected <split>_<Subject>_<n>" in text
    assert "row 2" in text and "expected an option letter A-D" in text
    assert "row 3" in text and "expected at least 2 options" in text
    lenient = build_adapter(spec.model_copy(update={"strict": False}))
    assert len(list(lenient.items())) == 4 and len(lenient.problems) == 3


def test_escaping_id_is_rejected(tmp_path: Path) -> None:
    spec = fixture(tmp_path, perception=[q("x_../../../etc/passwd_1", "?", "A")])
    with pytest.raises(DatasetError, match="escapes its root"):
        list(build_adapter(spec.model_copy(update={"strict": False})).items())


def test_new_adapters_are_listed_with_versions() -> None:
    from typer.testing import CliRunner

    from engine.cli import app

    out = CliRunner().invoke(app, ["datasets"], env={"COLUMNS": "200"}).output
    for name, version in (("mmbench", "mmbench-dev.fs1"), ("video_mmmu", "video_mmmu.fs1"),
                          ("llava_video_178k", "llava_video_178k.fs1")):
        assert name in out and version in out
    one = CliRunner().invoke(app, ["datasets", "mmbench"], env={"COLUMNS": "200"}).output
    assert "circular" in one


def test_more_options_than_letters_is_a_bad_row(tmp_path: Path) -> None:
    """A question with 30 options was lettered past Z ('[', '\\\\', ']', ...) and asked that way; it is a located
    row problem now (skipped and counted with strict = false)."""
    many = [f"choice {k}" for k in range(30)]
    spec = fixture(tmp_path, perception=[q("validation_Chemistry_12", "ok?", "B"),
                                         q("validation_Physics_1", "which?", "C", many)])
    with pytest.raises(DatasetError) as err:
        list(build_adapter(spec).items())
    assert "Perception/test-00000-of-00001.parquet: row 1: options: expected at most 26 options (the letters A-Z), " \
           "got 30" in str(err.value)
    lenient = build_adapter(spec.model_copy(update={"strict": False}))
    items = list(lenient.items())
    assert "Perception/validation_Physics_1" not in {it.item_id for it in items} and len(lenient.problems) == 1
    assert all(len(it.options) <= 26 for it in items)


def test_a_corrupt_parquet_is_one_sentence_naming_the_file(tmp_path: Path) -> None:
    """A shard whose footer reads but whose data pages are damaged ended the load in a Polars ComputeError
    traceback; it is a fatal problem naming the file (exit 2 from inspect and run)."""
    spec = fixture(tmp_path)
    shard = tmp_path / "VideoMMMU" / "Perception" / "test-00000-of-00001.parquet"
    data = bytearray(shard.read_bytes())
    data[8:len(data) // 2] = b"\xff" * (len(data) // 2 - 8)  # the pages; the footer at the end stays whole
    shard.write_bytes(bytes(data))
    for strict in (True, False):
        with pytest.raises(DatasetError) as err:
            list(build_adapter(spec.model_copy(update={"strict": strict})).items())
        assert f"{shard}: not a readable Parquet file: " in str(err.value)
