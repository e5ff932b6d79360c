"""The hybrid-frame predictor: a model picks the frame count an instruction needs.

Two job policies run by the sweep pipeline. `QuestionPolicy` asks the predictor
model, for every item, the minimum frame count that suffices, as a multiple-choice
question whose options are the grid's visual frame budgets (and text-only when the
spec's ``predictor.text_only_option`` says so), asked without media by default or
with a few low-resolution "glimpse" frames. Its answers are ordinary result rows in
their own store under ``OUT/predictions/asked/<predictor>/`` (committed, resumable,
retried like any row), read back into predictions: in `letter` scoring the answer is constrained
to the option letters; in `generate` scoring the generated answer is held to the options' texts
("16 frames") by vLLM's structured outputs (``choice``; the in-process engine and a `vllm serve` that
has them), and where a server answers freely its text is parsed
(`engine.adaptive.predictions.parse_frame_count`, the fallback). The raw answer is kept.
Predictions are committed under ``OUT/predictions/``; `PredictedPolicy` then
answers every item at its predicted budget (rows under budget id ``pred-<predictor>``).
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from engine.adaptive.predictions import parse_frame_count, write_predictions
from engine.backends.base import ANSWER_CHOICES
from engine.backends.prompts import option_lines, question_text
from engine.config import BudgetPoint, ModelSpec, SweepSpec
from engine.datasets import get_adapter, load_items
from engine.items import Item, Job, option_letters
from engine.results.directory import ResultsDir
from engine.results.schema import ResultRow
from engine.sweep import Sweep, SweepSummary
from engine.sweep.policy import Key
from engine.sweep.preflight import Preflight

__all__ = ["PREDICT_TEMPLATE", "PredictedPolicy", "QuestionPolicy", "answers_items", "predict_frames",
           "predicted_budget_id", "predictor_options", "run_predicted"]

log = logging.getLogger(__name__)

PREDICT_TEMPLATE = (
    "A video assistant will answer the instruction below after looking at frames sampled evenly from the "
    "video. More frames cost more. What is the minimum number of frames that suffices to answer it?\n"
    "Instruction: {instruction}\n{options}\nAnswer with the option's letter."
)


def predictor_options(spec: SweepSpec) -> list[int]:
    """The frame counts the predictor chooses from: the grid's visual budgets, and text-only (0) only
    when ``predictor.text_only_option`` is set and the grid has a text-only budget."""
    frames = sorted({b.frames for b in spec.budgets if b.frames > 0 or spec.predictor.text_only_option})
    if not frames:
        raise ValueError("the predictor needs at least one visual budget in the grid to choose from")
    return frames


def answers_items(spec: SweepSpec) -> bool:
    """Whether every dataset of the spec has answers to score (an instruction-only set has none: predict only)."""
    return all(getattr(get_adapter(ds.name), "has_answers", True) for ds in spec.dataset_specs())


def predicted_budget_id(predictor_id: str) -> str:
    return "pred-" + _safe(predictor_id)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.@+-]", "_", name)


def _option(frames: int) -> str:
    return "no frames (text only)" if frames == 0 else f"{frames} frames"


def _question(item: Item, frames: list[int]) -> Item:
    """The predictor's question about an item: which of the grid's frame counts it needs. A generated answer is
    held to the options' texts (`ANSWER_CHOICES`: vLLM's structured outputs)."""
    options = tuple(_option(f) for f in frames)
    prompt = PREDICT_TEMPLATE.format(instruction=question_text(item), options=option_lines(options))
    return replace(item, prompt=prompt, options=options, answer=None, kind="mcq", response_prefix=None,
                   system_prompt=None, extra={**item.extra, ANSWER_CHOICES: list(options)})


class QuestionPolicy:
    """One job per item: the predictor model answers `_question(item)` at the glimpse budget."""

    def __init__(self, predictor_id: str, frames: list[int], budget: BudgetPoint) -> None:
        self.predictor_id, self.frames, self.budget = predictor_id, frames, budget

    def plan(self, spec: SweepSpec, items: list[Item], done: set[Key]) -> dict[str, list[Job]]:
        by_video: dict[str, list[Job]] = {}
        for item in items:
            job = Job(self.predictor_id, _question(item, self.frames), self.budget)
            if tuple(job.key) not in done:
                by_video.setdefault(item.media_key, []).append(job)
        return by_video

    def expected(self, spec: SweepSpec, items: list[Item]) -> dict[str, dict[str, int]]:
        return {self.predictor_id: {self.budget.budget_id: len(items)}}

    def next_round(self, finished: list[tuple[Job, ResultRow]]) -> tuple[list[Job], list[ResultRow]]:
        return [], []


def _prediction(row: dict[str, Any], frames: list[int], mode: str) -> tuple[str, int | None, str]:
    """(raw answer, predicted frames, parse status) from one answered question row."""
    if row["status"] != "ok":
        return f"{row['error_type']}: {row['error']}", None, "unparsed: engine error"
    raw = row["response"] or ""
    if mode == "letter":
        letters = option_letters(len(frames))
        pick = row["pred"]
        return (raw, frames[letters.index(pick)], "letter") if pick in letters else (raw, None, "unparsed: no letter")
    chosen = {_option(f): f for f in frames}.get(raw.strip())
    if chosen is not None:  # held to the options (structured outputs)
        return raw, chosen, "choice"
    n, status = parse_frame_count(raw, frames)  # a server without structured outputs: its free text, parsed
    return raw, n, status


async def predict_frames(spec: SweepSpec, predictor_id: str, backends: dict[str, Any], *,
                         glimpse_frames: int = 0, glimpse_pixels: int = 112 * 112) -> pl.DataFrame:
    """Ask the predictor model for every item's frame count; commit and return the predictions."""
    model = next(m for m in spec.models if m.id == predictor_id)
    frames = predictor_options(spec)
    budget = (BudgetPoint(frames=glimpse_frames, max_pixels=glimpse_pixels, id=f"glimpse{glimpse_frames}")
              if glimpse_frames else BudgetPoint(frames=0, id="text"))
    asked = Path(spec.store.out_dir) / "predictions" / "asked" / _safe(predictor_id)
    qspec = spec.model_copy(update={"models": [model.model_copy(update={"max_frames": None})],
                                    "prompt": spec.prompt.model_copy(update={"max_new_tokens": 16})})
    await Sweep(qspec.with_out_dir(asked), backends={predictor_id: backends[predictor_id]},
                policy=QuestionPolicy(predictor_id, frames, budget)).run()
    mine = (pl.col("model_id") == predictor_id) & (pl.col("budget_id") == budget.budget_id)
    answered = {(r["dataset"], r["item_id"]): r
                for r in ResultsDir.open(asked).rows().filter(mine).collect().iter_rows(named=True)}
    rows = []
    for item in (it for ds in spec.dataset_specs() for it in load_items(ds)[1]):
        got = answered.get((item.dataset, item.item_id))
        raw, n, status = (_prediction(got, frames, spec.prompt.scoring) if got is not None
                          else (None, None, "unparsed: not answered"))
        rows.append({"predictor_id": predictor_id, "dataset": item.dataset, "item_id": item.item_id,
                     "video_id": item.video_id, "instruction": item.question, "raw_answer": raw,
                     "predicted_frames": n, "parse_status": status, "finished_at": datetime.now(UTC)})
    df = pl.DataFrame(rows)
    write_predictions(spec.store.out_dir, df)
    return df


class PredictedPolicy:
    """Each item at its predicted budget only (held to each model's context ceiling)."""

    def __init__(self, chosen: dict[tuple[str, str], BudgetPoint]) -> None:
        self.chosen = chosen

    @staticmethod
    def _for(model: ModelSpec, budget: BudgetPoint) -> BudgetPoint:
        if not model.fits(budget):
            return budget.model_copy(update={"frames": model.max_frames})
        return budget

    def plan(self, spec: SweepSpec, items: list[Item], done: set[Key]) -> dict[str, list[Job]]:
        by_video: dict[str, list[Job]] = {}
        for item in items:
            budget = self.chosen.get((item.dataset, item.item_id))
            if budget is None:
                continue
            for m in spec.models:
                job = Job(m.id, item, self._for(m, budget))
                if tuple(job.key) not in done:
                    by_video.setdefault(item.media_key, []).append(job)
        return by_video

    def expected(self, spec: SweepSpec, items: list[Item]) -> dict[str, dict[str, int]]:
        ids = {b.budget_id for b in self.chosen.values()}
        return {m.id: {bid: len(self.chosen) for bid in ids} for m in spec.models}

    def next_round(self, finished: list[tuple[Job, ResultRow]]) -> tuple[list[Job], list[ResultRow]]:
        return [], []


async def run_predicted(spec: SweepSpec, predictor_id: str, predictions: pl.DataFrame,
                        backends: dict[str, Any], fallback_frames: int | None = None,
                        checked: Preflight | None = None) -> SweepSummary:
    """Answer every item at the budget its prediction names (unparsed: `fallback_frames`, default the largest);
    `checked`: the caller's `preflight` of `spec` (the sweep does not check it again)."""
    by_frames: dict[int, BudgetPoint] = {}
    for b in spec.budgets_in_cost_order():
        by_frames.setdefault(b.frames, b)  # the grid's first budget of that frame count
    fallback = fallback_frames if fallback_frames is not None else max(by_frames)
    bid = predicted_budget_id(predictor_id)
    chosen = {}
    for r in predictions.iter_rows(named=True):
        n = r["predicted_frames"] if r["predicted_frames"] in by_frames else fallback
        chosen[(r["dataset"], r["item_id"])] = by_frames[n].model_copy(update={"id": bid})
    return await Sweep(spec, backends=backends, policy=PredictedPolicy(chosen), checked=checked).run()
