"""Every reply is scored in one place, the score step (`engine.sweep.rows.Scoring`): each dataset's adapter plugs
its official rule in, a dataset without one is scored by `default_score`, and for MCQ items the spec's extraction
rule reads the letter unless it says "official". A sweep scores through it with the rules its adapters gave."""

from __future__ import annotations

import ast
import asyncio
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
from helpers.specs import small_spec_dict
from helpers.sure_results import SureEngine

from engine.backends.base import EngineRequest, EngineResult
from engine.config import BudgetPoint, SweepSpec, parse_spec
from engine.datasets import get_adapter
from engine.datasets._base import ItemScore
from engine.items import Item, Job
from engine.sweep import Sweep
from engine.sweep.rows import JobContext, Scoring

ENGINE = Path(__file__).resolve().parents[2] / "engine"


def _spec(tmp_path: Path, **prompt: object) -> SweepSpec:
    return parse_spec(small_spec_dict(tmp_path / "out", prompt={"scoring": "generate", **prompt}))


def _ctx(dataset: str, kind: str, answer: str) -> JobContext:
    item = Item(dataset=dataset, dataset_version="1", item_id="i", video_id="v", video_path=None, question="Q?",
                options=("red", "green", "blue") if kind == "mcq" else (), answer=answer, kind=kind)  # type: ignore[arg-type]
    return JobContext(job=Job("tiny", item, BudgetPoint(frames=0)), model_family="qwen2_5_vl",
                      indices=np.empty(0, np.int64), attempt=1, request=EngineRequest("r", "Q?", mode="generate"))


def shouting(item: Item, response: str) -> ItemScore:
    """A benchmark's own rule: right when the reply is the answer in capitals."""
    return ItemScore(response, response == item.answer.upper(), 0.5)  # type: ignore[union-attr]


def test_an_adapters_rule_scores_its_own_datasets_items_only(tmp_path: Path) -> None:
    scoring = Scoring(_spec(tmp_path), {"loud": shouting})
    row = scoring.row(_ctx("loud", "open", "red"), EngineResult("r", text="RED"))
    assert (row.status, row.pred, row.correct, row.score) == ("ok", "RED", True, 0.5)
    other = scoring.row(_ctx("quiet", "open", "red"), EngineResult("r", text="red"))
    assert (other.pred, other.correct, other.score) == ("red", None, 1.0), "default_score: token F1"


def test_the_specs_extraction_rule_reads_mcq_letters_unless_it_says_official(tmp_path: Path) -> None:
    reply = EngineResult("r", text="B")
    official = Scoring(_spec(tmp_path), {"loud": shouting}).row(_ctx("loud", "mcq", "b"), reply)
    assert (official.pred, official.correct, official.score) == ("B", True, 0.5), "the adapter's rule"
    strict = Scoring(_spec(tmp_path, extraction="strict"), {"loud": shouting}).row(_ctx("loud", "mcq", "B"), reply)
    assert (strict.pred, strict.correct, strict.score) == ("B", True, 1.0), "the spec's rule, not the adapter's"


def detailed(item: Item, response: str) -> ItemScore:
    """A benchmark whose official score aggregates its own per-document results (an lmms-eval task's)."""
    said = response.strip()[-1:]
    return ItemScore(said, said == item.answer, float(said == item.answer), detail=json.dumps({"pred": said}))


def test_the_benchmarks_per_document_result_is_kept_and_follows_the_rows_prediction(tmp_path: Path) -> None:
    scoring = Scoring(_spec(tmp_path), {"own": detailed})
    row = scoring.row(_ctx("own", "mcq", "B"), EngineResult("r", text="It is B"))
    assert (row.pred, row.correct, row.score_detail) == ("B", True, '{"pred": "B"}')
    ctx = _ctx("own", "mcq", "B")
    letter = replace(ctx, request=EngineRequest("r", "Q?", mode="letter"))
    # letter mode: the prediction is the likeliest letter (C), not the text's; the detail is the rule's on it
    row = scoring.row(letter, EngineResult("r", text="It is B", letter_logprobs={"B": -2.0, "C": -0.2}))
    assert (row.pred, row.pred_extracted, row.score_detail) == ("C", "B", '{"pred": "C"}')
    assert scoring.row(_ctx("other", "mcq", "B"), EngineResult("r", text="B")).score_detail is None


def test_a_failed_call_is_a_transient_error_row(tmp_path: Path) -> None:
    row = Scoring(_spec(tmp_path)).failed(_ctx("d", "open", "x"), TimeoutError("no reply in 60 s"))
    assert (row.status, row.error_type, row.error, row.error_kind) == ("error", "TimeoutError", "no reply in 60 s",
                                                                       "transient")


def test_a_sweep_scores_through_the_rules_its_adapters_gave(tmp_path: Path) -> None:
    d = small_spec_dict(tmp_path / "out")
    d["dataset"]["n_videos"] = 1
    d["budgets"] = [{"frames": 0}, {"frames": 2}]
    d["models"] = [{"id": "tiny", "family": "qwen2_5_vl", "path": "served", "backend": "openai",
                    "http": {"base_url": "http://127.0.0.1:9"}}]  # answered by the stand-in: no checkpoint to build
    spec = parse_spec(d)
    sweep = Sweep(spec, backends={"tiny": SureEngine()})
    summary = asyncio.run(sweep.run())
    assert summary.jobs_ok == 6
    adapter = get_adapter("synthetic")(spec.dataset_specs()[0])
    assert sweep.scoring.rule("synthetic").__func__ is type(adapter).score  # type: ignore[attr-defined]


def test_replies_are_scored_in_the_score_step_alone() -> None:
    """No other module of the engine calls the row scorer or reads an item's rule itself."""
    callers = set()
    for path in sorted(ENGINE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", getattr(node.func, "attr", None))
                if name in ("scored_row", "_judge", "default_score"):
                    callers.add(str(path.relative_to(ENGINE)))
    assert callers <= {"sweep/rows.py", "datasets/_base.py", "datasets/synthetic.py"}, callers
