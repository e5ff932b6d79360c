"""A hand-built sweep and the hybrid-frame predictor's answers for it."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl

from engine.adaptive.predictions import PREDICTION_SCHEMA, parse_frame_count
from engine.results.schema import ResultRow
from helpers.metric_rows import frame

GRID = [0, 4, 8, 16]
# model "m", dataset "d", grid text < f4 < f8 < f16. Cheapest sufficient budgets: a f4, b text, c text,
# g f8; e is right nowhere; h lacks f8 (excluded, but predicted); k is matched but never predicted.
SWEEP = {"a": "0110", "b": "1100", "c": "1011", "e": "0000", "g": "0011", "h": "11.1", "k": "0101"}
# (raw answer, allowed list the online run parsed it with). e's 32 is on no grid budget: off-grid.
ANSWERS = {"a": ("4 frames", GRID), "b": ("(C)", GRID), "c": ("no idea", GRID), "e": ("32 frames", [*GRID, 32]),
           "g": ("text only", GRID), "h": ("8", GRID)}
T0, T1 = datetime(2025, 1, 1, tzinfo=UTC), datetime(2025, 1, 2, tzinfo=UTC)


def predictions(answers: dict[str, tuple[str, list[int]]] = ANSWERS, predictor: str = "p",
                dataset: str = "d", at: datetime = T1) -> pl.DataFrame:
    """A predictions table from raw answers, parsed as the online run parses them."""
    parsed = {i: parse_frame_count(raw, allowed) for i, (raw, allowed) in answers.items()}
    return pl.DataFrame({
        "predictor_id": [predictor] * len(answers), "dataset": [dataset] * len(answers), "item_id": list(answers),
        "video_id": [f"v-{i}" for i in answers], "instruction": [f"What happens in {i}?" for i in answers],
        "raw_answer": [raw for raw, _ in answers.values()], "predicted_frames": [p[0] for p in parsed.values()],
        "parse_status": [p[1] for p in parsed.values()], "finished_at": [at] * len(answers),
    }, schema=PREDICTION_SCHEMA)


def predictor_rows(model: str = "m") -> list[ResultRow]:
    """SWEEP's rows for one model."""
    return frame(SWEEP, model=model)


def all_predictions() -> pl.DataFrame:
    """ANSWERS at T1 plus an older answer for a (16 frames), which the latest one replaces."""
    stale = predictions({"a": ("16", GRID)}, at=T0)
    return pl.concat([stale, predictions()])
