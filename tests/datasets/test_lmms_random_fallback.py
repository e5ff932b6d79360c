"""EgoSchema's and LongVideoBench's lmms-eval tasks through the bridge: how their per-document results are read, and
why a bridged row's score does not depend on Python's global `random` state.

Both tasks' parsers (their utils' ``parse_multi_choice_response``) pick ``random.choice`` of the option letters when
a response holds no letter. lmms-eval seeds `random` once per run, so the letter a letterless response gets there
depends on how many draws came before it: on the order of the documents. framesweep scores each answer with the
task's own `process_results` under a `random` state seeded from the item id and the response
(`engine.datasets.lmms_eval`), the global state restored after, so the same answer of the same item scores alike in
any run, order or process. Shown below: the task's own `process_results` of one letterless response gives different
letters under different global states (so without the seeding a row could change between runs); the bridge's score
of it is one row under all of them.

Real task YAMLs and utils (the installed package's, unmodified); local data in each task's real schema (EgoSchema's
``Subset`` config: ``question_idx``, ``question``, ``video_idx``, five ``option`` lines, ``answer`` as the option's
index in a string; LongVideoBench's ``validation`` split: ``option0``..``option4`` with ``N/A`` for none,
``correct_choice``, ``video_path``, ``duration_group``, ``question_category``, ``id``). The media files are
placeholders: items are made without decoding.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml
from helpers.lmms import NEEDS_LMMS, empty_hf_home

from engine.datasets import build_adapter
from engine.datasets.lmms_eval import LmmsEvalBridge, LmmsEvalSpec

pytestmark = NEEDS_LMMS

OPTIONS = ("red", "green", "blue", "yellow")
EGOSCHEMA = [{"question_idx": f"q{i}", "question": "Which colour is the background at the start of the video?",
              "video_idx": f"clip{i}", "option": [f"{'ABCDE'[j]}. {o}" for j, o in enumerate((*OPTIONS, "white"))],
              "answer": str(i)} for i in range(2)]
LVB = [{"video_id": f"clip{i}", "video_path": f"clip{i}.mp4", "subtitle_path": f"clip{i}_en.json", "duration": 8.0,
        "duration_group": 15, "starting_timestamp_for_subtitles": 0.0,
        "question": "Which colour is the background at the start of the video?",
        "question_wo_referring_query": "Which colour is the background?", "candidates": list(OPTIONS),
        **{f"option{j}": o for j, o in enumerate((*OPTIONS, "N/A"))}, "correct_choice": i, "id": f"lvb-{i}",
        "position": [], "topic_category": "NP-News-Programs", "question_category": "S2E", "level": "L1-Perception",
        "view_count": 1} for i in range(2)]
LETTERLESS = "no idea"  # no option letter: both parsers draw one at random


def _release(root: Path, config: str | None, split: str, docs: list[dict[str, Any]]) -> Path:
    folder = root / (config or "data")
    folder.mkdir(parents=True)
    pl.DataFrame(docs).write_parquet(folder / f"{split}-00000-of-00001.parquet")
    if config:
        block = {"configs": [{"config_name": config, "data_files": [
            {"split": split, "path": f"{config}/{split}-*.parquet"}]}]}
        (root / "README.md").write_text(f"---\n{yaml.safe_dump(block)}---\n")
    return root


@pytest.fixture
def bridges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, LmmsEvalBridge]:
    """The two tasks' adapters over local releases, their videos (placeholders) where their utils look."""
    home = empty_hf_home(tmp_path / "hf", monkeypatch)
    for media, docs in (("egoschema/videos", EGOSCHEMA), ("datasets/longvideobench/videos", LVB)):
        (home / media).mkdir(parents=True)
        for i in range(len(docs)):
            (home / media / f"clip{i}.mp4").write_bytes(b"placeholder")
    releases = {"egoschema_subset": _release(tmp_path / "ego", "Subset", "test", EGOSCHEMA),
                "longvideobench_val_v": _release(tmp_path / "lvb", None, "validation", LVB)}
    return {task: build_adapter(LmmsEvalSpec(name="lmms_eval", task=task, dataset_path=path))
            for task, path in releases.items()}


@pytest.mark.parametrize(("task", "rule", "preds"), [
    ("egoschema_subset", "score:pred==ground_truth", ("1", "0")),
    ("longvideobench_val_v", "lvb_acc:parsed_pred==answer", ("B", "A")),
])
def test_their_results_are_read_as_the_tasks_aggregations_compare_them(
        bridges: dict[str, LmmsEvalBridge], task: str, rule: str, preds: tuple[str, str]) -> None:
    """EgoSchema's ``{"pred": index, "ground_truth": answer}`` and LongVideoBench's ``{"parsed_pred", "answer"}``:
    the prediction against the gold answer, as their aggregations count a document right; EgoSchema's answer (an
    index in a string) is the option's letter, so both are multiple choice with letters."""
    items = bridges[task].load()
    assert [(it.kind, it.answer, it.options[:4]) for it in items] == [("mcq", "A", OPTIONS), ("mcq", "B", OPTIONS)]
    assert items[0].dataset_version.endswith(f"/{rule}")
    right, wrong = bridges[task].score(items[1], "B"), bridges[task].score(items[1], "A")
    assert (right.correct, right.score, right.pred) == (True, 1.0, preds[0])
    assert (wrong.correct, wrong.score, wrong.pred) == (False, 0.0, preds[1])


@pytest.mark.parametrize("task", ["egoschema_subset", "longvideobench_val_v"])
def test_a_letterless_response_scores_alike_whatever_random_state_came_before(
        bridges: dict[str, LmmsEvalBridge], task: str) -> None:
    bridge = bridges[task]
    item = bridge.load()[0]
    doc = bridge._docs[item.item_id]
    metric = bridge.metric
    # the task's own process_results draws: under different global states the same response gets different letters
    drawn = set()
    for seed in range(20):
        random.seed(seed)
        drawn.add(str(bridge._task.process_results(doc, [LETTERLESS])[metric]))
    assert len(drawn) > 1, drawn
    # the bridge's row is one row under all of them, and the global state is left where it was
    rows, next_numbers = set(), []
    for seed in range(20):
        random.seed(seed)
        rows.add(bridge.score(item, LETTERLESS))
        next_numbers.append(random.random())
    assert len(rows) == 1, rows
    for seed, number in enumerate(next_numbers):  # the bridge consumed none of the caller's random numbers
        random.seed(seed)
        assert random.random() == number
    # scoring twice, with random numbers consumed in between, gives the same row
    first = bridge.score(item, LETTERLESS)
    random.random(), random.choice("ABCD")
    assert bridge.score(item, LETTERLESS) == first
