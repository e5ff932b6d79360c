"""The `lmms_eval` adapter on real lmms-eval task YAMLs and utils (the installed package's, unmodified), over small
local data in each task's real schema written here as a Hugging Face datasets folder (no hub), and the tasks it
refuses when its items are read (`framesweep inspect`).

lmms-eval is an optional extra (`framesweep[lmms]`): without it every test here skips, saying so. The media files
are placeholders: items are made without decoding (lmms-eval's doc_to_visual only checks that the file exists).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from helpers.lmms import NEEDS_LMMS, empty_hf_home, hub_release
from helpers.specs import small_spec_dict
from typer.testing import CliRunner

from engine.backends.base import EngineRequest, EngineResult
from engine.backends.families import get_family
from engine.cli import app
from engine.config import BudgetPoint, parse_spec
from engine.datasets import build_adapter
from engine.datasets.errors import DatasetError
from engine.datasets.lmms_eval import LmmsEvalSpec, options_in_text
from engine.items import Job
from engine.results.lmms_eval import _item_id
from engine.sweep.rows import JobContext, Scoring

pytestmark = NEEDS_LMMS

VIDEOMME_DOCS = [
    {"video_id": "001", "duration": "short", "domain": "Knowledge", "sub_category": "Humanity & History", "url": "u1",
     "videoID": "fFjv93ACGo8", "question_id": "001-1", "task_type": "Counting Problem",
     "question": "How many cats are in the video?", "options": ["A. One.", "B. Two.", "C. Three.", "D. Four."],
     "answer": "B"},
    {"video_id": "001", "duration": "short", "domain": "Knowledge", "sub_category": "Humanity & History", "url": "u1",
     "videoID": "fFjv93ACGo8", "question_id": "001-2", "task_type": "Object Recognition",
     "question": "What colour is the car?", "options": ["A. Red.", "B. Blue.", "C. Green.", "D. White."],
     "answer": "D"},
    {"video_id": "002", "duration": "medium", "domain": "Sports Competition", "sub_category": "Football", "url": "u2",
     "videoID": "aBcD1234xyz", "question_id": "002-1", "task_type": "Action Reasoning",
     "question": "Why does the player fall?", "options": ["A. He trips.", "B. He is pushed.", "C. He slips.",
                                                          "D. He dives."], "answer": "A"},
]
NEXTQA_DOCS = [
    {"video": "4010069381", "frame_count": 300, "width": 640, "height": 480, "qid": 6, "type": "CW",
     "question": "why did the boy pick up one present", "answer": 2, "a0": "to eat", "a1": "to throw",
     "a2": "to open it", "a3": "to hide", "a4": "to give away"},
    {"video": "4010069381", "frame_count": 300, "width": 640, "height": 480, "qid": 7, "type": "TN",
     "question": "what does the boy do next", "answer": 0, "a0": "runs", "a1": "sits", "a2": "cries",
     "a3": "sleeps", "a4": "sings"},
]

PERCEPTION_DOCS = [
    {"video_name": "video_10909", "question_id": 0, "question": "What is the person doing?",
     "options": ["cooking", "cleaning", "reading"], "answer_id": 1, "area": "semantics", "reasoning": "descriptive",
     "tag": ["action"]},
    {"video_name": "video_10909", "question_id": 1, "question": "How many cups are on the table?",
     "options": ["one", "two", "three"], "answer_id": 2, "area": "physics", "reasoning": "counting",
     "tag": ["counting"]},
]


@pytest.fixture
def hf_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Hugging Face home: lmms-eval's utils read HF_HOME (where they look for media) when imported."""
    return empty_hf_home(tmp_path / "hf", monkeypatch)


def _videomme(hf_home: Path) -> Path:
    data = hub_release(hf_home.parent / "videomme_release", None, "test", VIDEOMME_DOCS)
    (hf_home / "videomme" / "data").mkdir(parents=True)
    for doc in VIDEOMME_DOCS:
        (hf_home / "videomme" / "data" / f"{doc['videoID']}.mp4").write_bytes(b"placeholder")
    return data


def _lmms_utils(task_dir: str) -> Any:
    """The task's own utils module, imported as lmms-eval's YAML loader does (HF_HOME as set now)."""
    import lmms_eval

    path = Path(lmms_eval.__file__).parent / "tasks" / task_dir / "utils.py"
    spec = importlib.util.spec_from_file_location("utils", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _default_kwargs(task_dir: str, yaml_name: str) -> dict[str, Any]:
    """The `default` lmms_eval_specific_kwargs of a task YAML (its !function tags read as plain text)."""
    import lmms_eval

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))
    text = (Path(lmms_eval.__file__).parent / "tasks" / task_dir / yaml_name).read_text()
    return dict(yaml.load(text, Loader=Loader)["lmms_eval_specific_kwargs"]["default"])


def test_videomme_items_are_lmms_evals_documents(hf_home: Path) -> None:
    data = _videomme(hf_home)
    adapter = build_adapter(LmmsEvalSpec(name="lmms_eval", task="videomme", dataset_path=data))
    items = list(adapter.items())
    utils = _lmms_utils("videomme")
    kwargs = _default_kwargs("videomme", "videomme.yaml")
    assert [it.item_id for it in items] == ["001-1", "001-2", "002-1"]
    # the importer of lmms-eval logs keys a sample the same way: a bridged run and an imported log join
    assert [it.item_id for it in items] == [_item_id({}, doc, {"doc_id": i}, "log") for i, doc in
                                            enumerate(VIDEOMME_DOCS)]
    assert {it.dataset for it in items} == {"videomme"}  # the task's name, as an imported log's dataset
    for item, doc in zip(items, VIDEOMME_DOCS, strict=True):
        assert item.prompt == item.question == utils.videomme_doc_to_text(doc, kwargs)
        assert item.answer == doc["answer"] and item.kind == "mcq"
        assert item.options == tuple(o.split(". ", 1)[1] for o in doc["options"])  # the A. .. D. lines it shows
        assert item.video_path == (hf_home / "videomme" / "data" / f"{doc['videoID']}.mp4").resolve()
        assert item.video_id == doc["videoID"] and item.media_kind == "video"
        assert item.task_type == doc["task_type"] and item.category == doc["domain"]
    # lmms-eval's version, the task's (videomme.yaml: metadata: [{version: 0.0}]), the metric read and the rule
    assert {it.dataset_version for it in items} == {"lmms_eval-0.7.3/videomme@0.0/videomme_perception_score:score"}


def test_videomme_answers_are_scored_by_the_tasks_process_results(hf_home: Path) -> None:
    data = _videomme(hf_home)
    adapter = build_adapter(LmmsEvalSpec(name="lmms_eval", task="videomme", dataset_path=data))
    items = list(adapter.items())
    utils = _lmms_utils("videomme")
    for response, right in (("The answer is B.", True), ("A", False), ("(C) Three.", False)):
        own = utils.videomme_process_results(VIDEOMME_DOCS[0], [response])["videomme_perception_score"]
        scored = adapter.score(items[0], response)
        assert scored.correct is right and scored.score == own["score"] == float(right)
        assert scored.pred == own["pred_answer"]
        assert scored.detail is not None and json.loads(scored.detail) == own  # what the aggregation reads


def test_a_tasks_generation_kwargs_reach_the_requests_of_its_generated_answers(hf_home: Path) -> None:
    """Video-MME's YAML sets max_new_tokens 16 and no until (lmms-eval's default: a blank line); a user's task
    sets its own limit, stops and a sampling temperature. A spec asking 64 tokens is overridden where the task says."""
    data = _videomme(hf_home)
    [item, *_] = build_adapter(LmmsEvalSpec(name="lmms_eval", task="videomme", dataset_path=data)).items()
    qwen = get_family("qwen2_5_vl")
    asked = qwen.build("r", item, None, "generate", None, 64)
    assert (asked.max_tokens, asked.stop, asked.temperature) == (16, ["\n\n"], 0.0)
    letter = qwen.build("r", item, None, "letter", None, 64)
    assert (letter.mode, letter.stop) == ("letter", None)  # an MCQ scored by its letter: one token, as before
    folder = _own_task(hf_home.parent / "tasks", UTILS, generation="""generation_kwargs:
  max_new_tokens: 7
  until: ["END", "\\n"]
  temperature: 0.5
  do_sample: true
""")
    (hf_home / "mine").mkdir()
    (hf_home / "mine" / "v1.mp4").write_bytes(b"placeholder")
    [own] = build_adapter(LmmsEvalSpec(name="lmms_eval", task="my_task", include_path=folder,
                                       media_root=hf_home / "mine")).items()
    asked = qwen.build("r", own, None, "letter", None, 64)  # an open item is generated under either scoring
    assert (asked.mode, asked.max_tokens, asked.stop, asked.temperature) == ("generate", 7, ["END", "\n"], 0.5)


def test_nextqa_items_without_a_question_id_are_keyed_by_doc_id(hf_home: Path) -> None:
    data = hub_release(hf_home.parent / "nextqa_release", "MC", "test", NEXTQA_DOCS)
    (hf_home / "nextqa" / "NExTVideo").mkdir(parents=True)
    (hf_home / "nextqa" / "NExTVideo" / "4010069381.mp4").write_bytes(b"placeholder")
    adapter = build_adapter(LmmsEvalSpec(name="lmms_eval", task="nextqa_mc_test", dataset_path=data))
    items = list(adapter.items())
    utils = _lmms_utils("nextqa")
    assert [it.item_id for it in items] == ["0", "1"]  # lmms-eval's doc_id: no question_id in NExT-QA
    assert items[0].prompt == utils.nextqa_doc_to_text_mc(NEXTQA_DOCS[0], {})
    # the target is option 2: the answer is its letter, the one the task's process_results scores right
    assert [it.answer for it in items] == ["C", "A"] and items[0].kind == "mcq"
    assert items[0].options == ("to eat", "to throw", "to open it", "to hide", "to give away")
    right, wrong = adapter.score(items[0], "C"), adapter.score(items[0], "A. to eat")
    assert (right.correct, right.score) == (True, 1.0)
    assert (wrong.correct, wrong.score) == (False, 0.0)
    assert utils.nextqa_mc_process_results(NEXTQA_DOCS[0], ["C"]) == {"exact_match": True}


def test_letter_scoring_of_an_option_index_target_compares_letters(hf_home: Path, tmp_path: Path) -> None:
    """NExT-QA's target is an option index (2): a letter-scored row is right when the likeliest letter is that
    option's (C), as the task's own process_results says."""
    data = hub_release(hf_home.parent / "nextqa_release", "MC", "test", NEXTQA_DOCS)
    (hf_home / "nextqa" / "NExTVideo").mkdir(parents=True)
    (hf_home / "nextqa" / "NExTVideo" / "4010069381.mp4").write_bytes(b"placeholder")
    adapter = build_adapter(LmmsEvalSpec(name="lmms_eval", task="nextqa_mc_test", dataset_path=data))
    item = next(iter(adapter.items()))
    spec = parse_spec(small_spec_dict(tmp_path / "out", prompt={"scoring": "letter"}))
    ctx = JobContext(job=Job("tiny", item, BudgetPoint(frames=0)), model_family="qwen2_5_vl",
                     indices=np.empty(0, np.int64), attempt=1,
                     request=EngineRequest("r", "Q?", letters=list(item.letters), mode="letter"))
    row = Scoring(spec, {item.dataset: adapter.score}).row(
        ctx, EngineResult("r", text="C", letter_logprobs={"A": -3.0, "C": -0.1, "E": -4.0}))
    assert (row.pred, row.answer, row.correct) == ("C", "C", True)
    utils = _lmms_utils("nextqa")
    assert json.loads(row.score_detail or "null") == utils.nextqa_mc_process_results(NEXTQA_DOCS[0], ["C"])[
        "exact_match"]


def test_a_document_whose_video_is_missing_is_a_problem_naming_its_row(hf_home: Path) -> None:
    data = _videomme(hf_home)
    (hf_home / "videomme" / "data" / "aBcD1234xyz.mp4").unlink()
    reason = _refusal(LmmsEvalSpec(name="lmms_eval", task="videomme", dataset_path=data))
    assert "row 2: doc_to_visual failed: video path:" in reason and "aBcD1234xyz.mp4 does not exist" in reason
    adapter = build_adapter(LmmsEvalSpec(name="lmms_eval", task="videomme", dataset_path=data, strict=False))
    assert [it.item_id for it in adapter.items()] == ["001-1", "001-2"]
    assert [p.row for p in adapter.problems] == [2]


def test_options_are_read_from_the_lines_a_prompt_lists() -> None:
    assert options_in_text("Q?\nA. one\nB. two\n(C) three\nAnswer:") == ("one", "two", "three")
    assert options_in_text("Q?\nA. one\nC. three") == ()  # not A, B, ... in order: none
    assert options_in_text("A. alone") == ()


def test_perceptiontest_items_and_its_correct_field(hf_home: Path) -> None:
    data = hub_release(hf_home.parent / "perception_release", "mc_question_val", "validation", PERCEPTION_DOCS)
    (hf_home / "perceptiontest_val" / "videos").mkdir(parents=True)
    (hf_home / "perceptiontest_val" / "videos" / "video_10909.mp4").write_bytes(b"placeholder")
    adapter = build_adapter(LmmsEvalSpec(name="lmms_eval", task="perceptiontest_val_mc", dataset_path=data))
    items = list(adapter.items())
    utils = _lmms_utils("perceptiontest/val")
    assert [it.item_id for it in items] == ["0", "1"]  # its question_id
    assert items[0].prompt == utils.perceptiontest_val_doc_to_text(PERCEPTION_DOCS[0], {"pre_prompt": "",
                                                                                        "post_prompt": ""})
    assert items[0].options == ("cooking", "cleaning", "reading") and [it.answer for it in items] == ["B", "C"]
    assert items[0].dataset_version.endswith("/perceptiontest_val_mc@?/accuracy:correct")
    for response, right in (("B", True), ("B. cleaning", True), ("A", False), ("no idea", False)):
        own = utils.perceptiontest_val_process_results_mc(PERCEPTION_DOCS[0], [response])["accuracy"]
        scored = adapter.score(items[0], response)
        assert (scored.correct, scored.score) == (right, float(own["correct"])), response
        assert scored.pred == str(own["pred_id"])


def test_limit_keeps_the_first_documents(hf_home: Path) -> None:
    data = _videomme(hf_home)
    items = list(build_adapter(LmmsEvalSpec(name="lmms_eval", task="videomme", dataset_path=data, limit=2)).items())
    assert [it.item_id for it in items] == ["001-1", "001-2"]


def _refusal(spec: LmmsEvalSpec) -> str:
    with pytest.raises(DatasetError) as err:
        list(build_adapter(spec).items())
    return str(err.value)


def test_unknown_and_unfaithful_tasks_are_refused_naming_the_task_and_the_reason(hf_home: Path) -> None:
    unknown = _refusal(LmmsEvalSpec(name="lmms_eval", task="videomm"))
    assert "lmms-eval task 'videomm': unknown task" in unknown and "videomme" in unknown  # a close name
    submission = _refusal(LmmsEvalSpec(name="lmms_eval", task="egoschema"))
    assert "lmms-eval task 'egoschema': its metric 'submission' is a submission" in submission
    assert "its variants the bridge runs: egoschema_subset" in submission  # the subset has its answers
    judged = _refusal(LmmsEvalSpec(name="lmms_eval", task="activitynetqa"))
    assert "lmms-eval task 'activitynetqa'" in judged and "LLM judge" in judged


def _own_task(folder: Path, utils: str, visual: str = "utils.my_visual", generation: str = "") -> Path:
    """A user's task folder (`include_path`): one video task over a local parquet (`generation`: its YAML's
    generation_kwargs block)."""
    folder.mkdir()
    (folder / "utils.py").write_text(utils)
    data = hub_release(folder.parent / "my_release", None, "test", [{"vid": "v1", "q": "What?", "a": "A"}])
    (folder / "my_task.yaml").write_text(f"""
task: my_task
dataset_path: {data}
test_split: test
output_type: generate_until
doc_to_visual: !function {visual}
doc_to_text: !function utils.my_text
doc_to_target: "a"
process_results: !function utils.my_results
metric_list:
  - metric: accuracy
    aggregation: mean
    higher_is_better: true
{generation}""")
    return folder


UTILS = """
import os
import requests

def my_text(doc, kwargs=None):
    return doc["q"]

def my_visual(doc):
    return [os.path.join(os.environ["HF_HOME"], "mine", doc["vid"] + ".mp4")]

def two_visuals(doc):
    return my_visual(doc) * 2

def image_visual(doc):
    from PIL import Image
    return [Image.new("RGB", (2, 2))]

def _ask_judge(answer):
    return requests.post("http://judge.invalid", json={"a": answer}).json()["score"]

def my_results(doc, results):
    return {"accuracy": float(results[0].strip() == doc["a"])}

def judged_results(doc, results):
    return {"accuracy": _ask_judge(results[0])}

def split_results(doc, results):  # as MME: each document under its category's metric
    return {"cognition_score": float(results[0].strip() == doc["a"])}
"""


def test_a_users_own_task_runs_from_include_path(hf_home: Path) -> None:
    folder = _own_task(hf_home.parent / "tasks", UTILS)
    (hf_home / "mine").mkdir()
    (hf_home / "mine" / "v1.mp4").write_bytes(b"placeholder")
    adapter = build_adapter(LmmsEvalSpec(name="lmms_eval", task="my_task", include_path=folder,
                                         media_root=hf_home / "mine"))
    [item] = list(adapter.items())
    assert (item.item_id, item.prompt, item.answer, item.dataset) == ("0", "What?", "A", "my_task")
    assert item.kind == "open" and item.options == ()  # a letter answer, but no options shown: open
    right, wrong = adapter.score(item, "A"), adapter.score(item, "B")
    assert (right.score, right.correct, wrong.score, wrong.correct) == (1.0, None, 0.0, None)


def test_a_users_own_task_is_versioned_by_its_files(hf_home: Path) -> None:
    """A user's task folder changes under one ``metadata: version``: its files' digest is in the rows' version (so in
    the answer fingerprint), so a run after an edit of its YAML or utils never resumes over the old rows; a copy
    elsewhere (the path is not in it) and a cache file are the same task."""
    (hf_home / "mine").mkdir()
    (hf_home / "mine" / "v1.mp4").write_bytes(b"placeholder")

    def version(folder: Path) -> str:
        [item] = build_adapter(LmmsEvalSpec(name="lmms_eval", task="my_task", include_path=folder,
                                            media_root=hf_home / "mine")).items()
        return item.dataset_version

    first = version(_own_task(hf_home.parent / "a", UTILS))
    assert re.fullmatch(r"lmms_eval-0\.7\.3/my_task@\?\+[0-9a-f]{12}/accuracy:value", first), first
    assert version(_own_task(hf_home.parent / "b", UTILS)) == first  # the same files elsewhere
    (hf_home.parent / "b" / "__pycache__").mkdir(exist_ok=True)
    (hf_home.parent / "b" / "__pycache__" / "utils.cpython-311.pyc").write_bytes(b"cache")
    assert version(hf_home.parent / "b") == first
    edited = _own_task(hf_home.parent / "c", UTILS, generation="generation_kwargs:\n  max_new_tokens: 7\n")
    assert version(edited) != first
    other_utils = _own_task(hf_home.parent / "d", UTILS + "\n# a comment\n")
    assert version(other_utils) != first


FILTERS = """filter_list:
  - name: flexible-extract
    filter:
      - function: regex
        regex_pattern: "answer is ([A-D])"
      - function: take_first
"""


def test_a_tasks_filter_pipeline_reads_the_answer_before_process_results(hf_home: Path) -> None:
    folder = _own_task(hf_home.parent / "tasks", UTILS)
    (folder / "my_task.yaml").write_text((folder / "my_task.yaml").read_text() + FILTERS)
    (hf_home / "mine").mkdir()
    (hf_home / "mine" / "v1.mp4").write_bytes(b"placeholder")
    adapter = build_adapter(LmmsEvalSpec(name="lmms_eval", task="my_task", include_path=folder,
                                         media_root=hf_home / "mine"))
    [item] = list(adapter.items())
    assert item.dataset_version.endswith("/accuracy:value|filter=flexible-extract")
    assert adapter.score(item, "I think the answer is A.").score == 1.0  # the regex's group, as lmms-eval reads it
    assert adapter.score(item, "A").score == 0.0  # no match: the pipeline's fallback, "[invalid]"
    two = FILTERS + FILTERS.split("\n", 1)[1].replace("flexible-extract", "strict")
    (folder / "my_task.yaml").write_text((folder / "my_task.yaml").read_text().split("filter_list:")[0] + two)
    reason = _refusal(LmmsEvalSpec(name="lmms_eval", task="my_task", include_path=folder,
                                   media_root=hf_home / "mine"))
    assert "its filter_list has 2 pipelines (flexible-extract, strict)" in reason


def test_a_judge_in_process_results_and_visuals_that_are_not_one_file_are_refused(hf_home: Path) -> None:
    (hf_home / "mine").mkdir()
    (hf_home / "mine" / "v1.mp4").write_bytes(b"placeholder")
    judged = _own_task(hf_home.parent / "judged", UTILS.replace("utils.my_results", "x"))
    text = (judged / "my_task.yaml").read_text().replace("utils.my_results", "utils.judged_results")
    (judged / "my_task.yaml").write_text(text)
    reason = _refusal(LmmsEvalSpec(name="lmms_eval", task="my_task", include_path=judged,
                                   media_root=hf_home / "mine"))
    assert "its metric 'accuracy' is scored by an LLM judge (process_results reaches requests)" in reason
    two = _own_task(hf_home.parent / "two", UTILS, visual="utils.two_visuals")
    reason = _refusal(LmmsEvalSpec(name="lmms_eval", task="my_task", include_path=two, media_root=hf_home / "mine"))
    assert "lmms-eval task 'my_task': its doc_to_visual returns 2 visuals, not one video or image" in reason
    split = _own_task(hf_home.parent / "split", UTILS)
    (split / "my_task.yaml").write_text((split / "my_task.yaml").read_text().replace("utils.my_results",
                                                                                       "utils.split_results"))
    reason = _refusal(LmmsEvalSpec(name="lmms_eval", task="my_task", include_path=split, media_root=hf_home / "mine"))
    assert ("its process_results scores document 0 under 'cognition_score', not its first metric 'accuracy'"
            in reason), reason
    # one PIL image is no refusal: an image item (tests/datasets/test_lmms_images.py)
    image = _own_task(hf_home.parent / "image", UTILS, visual="utils.image_visual")
    [item] = build_adapter(LmmsEvalSpec(name="lmms_eval", task="my_task", include_path=image,
                                        image_cache=hf_home.parent / "images")).items()
    assert item.media_kind == "image" and item.video_path.parent == hf_home.parent / "images"


def test_the_default_media_root_is_lmms_evals_folder_of_the_task(hf_home: Path) -> None:
    """$HF_HOME/<dataset_kwargs.cache_dir>, where lmms-eval unpacks the task's media: a visual elsewhere under
    HF_HOME is outside it."""
    folder = _own_task(hf_home.parent / "tasks", UTILS)
    (folder / "my_task.yaml").write_text((folder / "my_task.yaml").read_text()
                                         + "dataset_kwargs:\n  video: true\n  cache_dir: my_cache\n")
    (hf_home / "mine").mkdir()
    (hf_home / "mine" / "v1.mp4").write_bytes(b"placeholder")
    (hf_home / "my_cache").mkdir()
    reason = _refusal(LmmsEvalSpec(name="lmms_eval", task="my_task", include_path=folder))
    assert f"outside the media root {(hf_home / 'my_cache').resolve()}" in reason


def test_a_visual_outside_the_media_root_is_refused(hf_home: Path) -> None:
    folder = _own_task(hf_home.parent / "tasks", UTILS)
    (hf_home / "mine").mkdir()
    (hf_home / "mine" / "v1.mp4").write_bytes(b"placeholder")
    (hf_home / "elsewhere").mkdir()
    reason = _refusal(LmmsEvalSpec(name="lmms_eval", task="my_task", include_path=folder,
                                   media_root=hf_home / "elsewhere"))
    assert f"outside the media root {(hf_home / 'elsewhere').resolve()}" in reason


SPEC = """
sweep_id = "lmms-bridge"

[[models]]
id = "m"
family = "qwen2_5_vl"
path = "tiny:qwen2_5_vl"

[dataset]
name = "lmms_eval"
{dataset}

[[budgets]]
frames = 0

[[budgets]]
frames = 8

[store]
out_dir = "{out}"
"""


def test_inspect_counts_a_bridged_task_and_refuses_an_unfaithful_one(hf_home: Path, tmp_path: Path) -> None:
    data = _videomme(hf_home)
    runner = CliRunner()
    good = tmp_path / "good.toml"
    good.write_text(SPEC.format(dataset=f'task = "videomme"\ndataset_path = "{data}"', out=tmp_path / "out"))
    result = runner.invoke(app, ["inspect", str(good)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "3 items" in result.output
    bad = tmp_path / "bad.toml"
    bad.write_text(SPEC.format(dataset='task = "egoschema"', out=tmp_path / "out"))
    result = runner.invoke(app, ["inspect", str(bad)], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "lmms-eval task 'egoschema': its metric 'submission'" in " ".join(result.output.split())


def test_datasets_lmms_eval_lists_the_tasks_and_the_bridges_verdict() -> None:
    result = CliRunner().invoke(app, ["datasets", "--lmms-eval"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    lines = {line.split("│")[1].strip(): line for line in result.output.splitlines() if line.count("│") >= 3}
    assert "runs" in lines["videomme"] and "submission" in lines["egoschema"]
    assert "LLM judge" in lines["activitynetqa"]
    assert "tasks pass the bridge's checks of their YAML" in result.output


def test_a_dataset_missing_from_the_cache_fails_offline_naming_it(hf_home: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A task whose data is not in the Hugging Face cache fails with the cache and the two ways out named, without
    one connection attempted (lmms-eval would retry a download for up to a minute); the hub's and datasets'
    offline modes are as they were afterwards. The network is watched by a socket whose connect records the
    attempt and refuses it (a fault injected: the real network cannot be made to report its use)."""
    import socket

    import datasets.config
    import huggingface_hub.constants

    tried: list[object] = []

    def connect(self: socket.socket, address: object) -> None:
        tried.append(address)
        raise OSError("network refused by the test")

    monkeypatch.setattr(socket.socket, "connect", connect)
    before = (datasets.config.HF_DATASETS_OFFLINE, huggingface_hub.constants.HF_HUB_OFFLINE,
              os.environ.get("HF_HUB_OFFLINE"))
    reason = _refusal(LmmsEvalSpec(name="lmms_eval", task="nextqa_mc_test"))
    assert "lmms-eval task 'nextqa_mc_test': its dataset could not be read from the Hugging Face cache" in reason
    assert "download it once, or give dataset_path" in reason and "RetryError" not in reason
    assert tried == []
    assert (datasets.config.HF_DATASETS_OFFLINE, huggingface_hub.constants.HF_HUB_OFFLINE,
            os.environ.get("HF_HUB_OFFLINE")) == before
