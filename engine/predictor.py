"""The hybrid-frame predictor, run for real: a model picks the frame count an instruction needs.

The predictor reads the instruction (text-only by default, or with a few
low-resolution frames) and answers a multiple-choice question whose options are
the grid's frame budgets, through the same backends as any sweep: in `letter`
scoring the answer is constrained to the option letters; in `generate` scoring
the free text is parsed robustly (`engine.adaptive_eval.parse_frame_count`).
Its raw answer is kept. Predictions are committed under ``OUT/predictions/``;
`run_predicted` then answers every item at its predicted budget (rows under
budget id ``pred-<predictor>``).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from engine.adaptive_eval import parse_frame_count, write_predictions
from engine.backends.prompts import MediaView, get_family, question_text
from engine.datasets import build_adapter
from engine.frames.decode import decode_union, get_decoder
from engine.frames.plan import plan_budget
from engine.frames.resize import target_size
from engine.items import Item, Job, option_letters
from engine.scheduler import Sweep
from engine.scoring import score_letters
from engine.spec import BudgetPoint, SweepSpec

__all__ = ["PREDICT_TEMPLATE", "predict_frames", "predicted_budget_id", "run_predicted"]

PREDICT_TEMPLATE = (
    "A video assistant will answer the instruction below after looking at some frames sampled evenly "
    "from the video. More frames cost more. How many frames does it need to answer well?\n"
    "Instruction: {instruction}\n{options}\nAnswer with the option's letter."
)


def predicted_budget_id(predictor_id: str) -> str:
    return "pred-" + re.sub(r"[^A-Za-z0-9_.@+-]", "_", predictor_id)


def _question(item: Item, frames: list[int]) -> Item:
    """The predictor's question about an item: which of the grid's frame counts it needs."""
    options = tuple("no frames (text only)" if f == 0 else f"{f} frames" for f in frames)
    lines = "\n".join(f"{lt}. {o}" for lt, o in zip(option_letters(len(options)), options))
    prompt = PREDICT_TEMPLATE.format(instruction=question_text(item), options=lines)
    return replace(item, prompt=prompt, options=options, answer=None, kind="mcq", response_prefix=None,
                   system_prompt=None)


def _glimpse(item: Item, n: int, max_pixels: int) -> MediaView | None:
    """A few low-resolution frames of the item's video for the predictor (None: text-only)."""
    if n <= 0 or item.video_path is None or item.media_kind != "video":
        return None
    info = get_decoder("pyav").probe(item.video_path)
    idx = plan_budget(BudgetPoint(frames=n), info.n_frames, info.fps).indices
    size = target_size(info.width, info.height, max_pixels, None)
    frames = decode_union(item.video_path, np.unique(idx), "pyav", size).view(idx, size)
    return MediaView(frames, idx, info.fps, info.n_frames, f"{item.video_id}:glimpse{n}", "pyav")


async def predict_frames(spec: SweepSpec, predictor_id: str, backends: dict[str, Any], *,
                         glimpse_frames: int = 0, glimpse_pixels: int = 112 * 112) -> pl.DataFrame:
    """Ask the predictor model for every item's frame count; commit and return the predictions."""
    model = next(m for m in spec.models if m.id == predictor_id)
    family = get_family(model.family)
    frames = sorted({b.frames for b in spec.budgets})
    letters = option_letters(len(frames))
    items = list(build_adapter(spec.dataset).items())
    mode = spec.prompt.scoring
    requests = []
    for i, item in enumerate(items):
        media = await asyncio.to_thread(_glimpse, item, glimpse_frames, glimpse_pixels) if glimpse_frames else None
        requests.append(family.build(f"predict/{i}", _question(item, frames), media, mode, None, 16))
    results = await backends[predictor_id].generate(requests)
    rows = []
    for item, res in zip(items, results):
        if not res.ok:
            raw, n, status = f"{res.error_type}: {res.error}", None, "unparsed: engine error"
        elif mode == "letter":
            pick = score_letters(letters, res.letter_logprobs).pred
            raw = res.text
            n, status = (frames[letters.index(pick)], "letter") if pick else (None, "unparsed: no letter")
        else:
            raw = res.text
            n, status = parse_frame_count(raw, frames)
        rows.append({"predictor_id": predictor_id, "dataset": item.dataset, "item_id": item.item_id,
                     "video_id": item.video_id, "instruction": item.question, "raw_answer": raw,
                     "predicted_frames": n, "parse_status": status, "finished_at": datetime.now(UTC)})
    df = pl.DataFrame(rows)
    write_predictions(spec.store.out_dir, df)
    return df


class _PredictedSweep(Sweep):
    """A sweep in which each item runs at its predicted budget only."""

    def __init__(self, spec: SweepSpec, chosen: dict[tuple[str, str], BudgetPoint], **kw: Any) -> None:
        super().__init__(spec, **kw)
        self.chosen = chosen

    def _expected(self, items: list[Item], jobs: dict[str, list[Job]]) -> dict[str, dict[str, int]]:
        bid = next(iter(self.chosen.values())).budget_id if self.chosen else None
        return {m.id: {bid: len(self.chosen)} for m in self.spec.models} if bid else {}

    def _plan_jobs(self, items: list[Item], done: set[Any]) -> dict[str, list[Job]]:
        by_video: dict[str, list[Job]] = {}
        for item in items:
            budget = self.chosen.get((item.dataset, item.item_id))
            if budget is None:
                continue
            for m in self.spec.models:
                job = Job(m.id, item, budget)
                if tuple(job.key) not in done:
                    by_video.setdefault(item.video_id, []).append(job)
        return by_video


async def run_predicted(spec: SweepSpec, predictor_id: str, predictions: pl.DataFrame,
                        backends: dict[str, Any], fallback_frames: int | None = None) -> Any:
    """Answer every item at the budget its prediction names (unparsed: `fallback_frames`, default the largest)."""
    by_frames = {}
    for b in spec.budgets_in_cost_order():
        by_frames.setdefault(b.frames, b)  # the grid's first budget of that frame count
    fallback = fallback_frames if fallback_frames is not None else max(by_frames)
    bid = predicted_budget_id(predictor_id)
    chosen = {}
    for r in predictions.iter_rows(named=True):
        n = r["predicted_frames"] if r["predicted_frames"] in by_frames else fallback
        chosen[(r["dataset"], r["item_id"])] = by_frames[n].model_copy(update={"id": bid})
    return await _PredictedSweep(spec, chosen, backends=backends).run()


def manifest_path(out_dir: Path | str) -> Path:
    return Path(out_dir) / "predictions" / "manifest.jsonl"
