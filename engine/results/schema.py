"""The schemas of a results directory's tables, defined once. Add columns freely; renaming needs a migration.

`RESULT_SCHEMA` (``results/``: one row per job attempt), `VIDEO_STATS_SCHEMA` (``video_stats/``: one row per
decoded video and pass) and `PREDICTION_SCHEMA` (``predictions/``: one row per predictor answer); each table's
shards are written, checked and read by `engine.results.tables`' one shard engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import UTC, datetime

import polars as pl

from engine.runtime.secrets import redact_columns

__all__ = ["KEY_COLUMNS", "PREDICTION_KEY", "PREDICTION_SCHEMA", "REDACTED_COLUMNS", "RESULT_SCHEMA", "VIDEO_STATS_SCHEMA",
           "ResultRow", "rows_to_frame"]

KEY_COLUMNS: tuple[str, ...] = ("model_id", "dataset", "item_id", "budget_id")

REDACTED_COLUMNS: tuple[str, ...] = ("response", "pred", "pred_extracted", "score_detail", "error_type", "error",
                                     "worker", "engine_version")
"""The columns whose text a server, an engine or an error wrote (an answer, a message, a server's URL or version):
the only ones secret redaction rewrites. Key columns and what came from the dataset or the spec (ids, categories,
answers, budget ids, stage paths) are stored as they are: a secret found there was not put there by a server, and
rewriting a key would make every rerun commit its rows again."""

RESULT_SCHEMA: dict[str, pl.DataType] = {
    "sweep_id": pl.String(),
    "model_id": pl.String(),
    "model_family": pl.String(),
    "dataset": pl.String(),
    "dataset_version": pl.String(),
    "item_id": pl.String(),
    "video_id": pl.String(),
    "task_type": pl.String(),
    "category": pl.String(),
    "duration": pl.String(),
    "task_kind": pl.String(),
    "budget_id": pl.String(),
    "frames": pl.Int32(),
    "frames_sent": pl.Int32(),
    "max_pixels": pl.Int64(),
    "short_side": pl.Int32(),
    "min_pixels": pl.Int64(),
    "exact_pixels": pl.Int64(),
    "policy": pl.String(),
    "seed": pl.Int64(),
    "frame_indices": pl.List(pl.Int64()),
    "width": pl.Int32(),
    "height": pl.Int32(),
    "pixels_total": pl.Int64(),
    "pipeline": pl.String(),
    "decoder": pl.String(),
    "decoder_version": pl.String(),
    "scoring": pl.String(),
    "media_uuid": pl.String(),
    "prompt_hash": pl.String(),
    "answer": pl.String(),
    "response": pl.String(),
    "pred": pl.String(),
    "pred_extracted": pl.String(),
    "correct": pl.Boolean(),
    "score": pl.Float64(),
    "confidence": pl.Float64(),
    "option_probs": pl.List(pl.Float64()),
    "letters_returned": pl.Int32(),
    "prompt_tokens": pl.Int32(),
    "output_tokens": pl.Int32(),
    "decode_s": pl.Float64(),
    "engine_s": pl.Float64(),
    "status": pl.String(),
    "error_type": pl.String(),
    "error": pl.String(),
    "error_kind": pl.String(),
    "attempt": pl.Int32(),
    "worker": pl.String(),
    "engine_version": pl.String(),
    "finished_at": pl.Datetime("us", "UTC"),
    # what the video really held (a container may declare more frames than exist)
    "frames_repeated": pl.Boolean(),
    "video_frames": pl.Int32(),
    "video_frames_declared": pl.Int32(),
    # adaptive policies (null on fixed-budget rows)
    "stage_path": pl.List(pl.String()),
    "frames_processed": pl.Int32(),
    "frames_decoded": pl.Int32(),
    # what the item's media is (image | video | none), whatever the budget sends; null on rows from before it
    "media_kind": pl.String(),
    "group_id": pl.String(),
    # the item's scoring group as the benchmark defines it (engine.datasets.scoring_rules); null on rows from before
    "group_size": pl.Int32(),
    "group_type": pl.String(),
    "group_structure": pl.String(),
    # how the answer was made (engine.sweep.fingerprint); null on rows from before it
    "answer_fingerprint": pl.String(),
    # the benchmark's own per-document result (JSON) its official aggregation reads; null for most benchmarks
    "score_detail": pl.String(),
}

VIDEO_STATS_SCHEMA: dict[str, pl.DataType] = {
    "dataset": pl.String(), "video_id": pl.String(), "duration_s": pl.Float64(), "fps": pl.Float64(),
    "width": pl.Int32(), "height": pl.Int32(), "pixels": pl.Int64(), "n_frames": pl.Int32(),
    "frames_used": pl.Int32(), "motion_energy": pl.Float64(), "scene_cuts": pl.Int32(), "brightness": pl.Float64(),
    "contrast": pl.Float64(), "static_share": pl.Float64(), "written_at": pl.Datetime("us", "UTC"),
}
"""``video_stats/``: a decoded video's low-level statistics (`engine.results.video_stats`)."""

PREDICTION_KEY: tuple[str, ...] = ("predictor_id", "dataset", "item_id")

PREDICTION_SCHEMA: dict[str, pl.DataType] = {
    "predictor_id": pl.String(),
    "dataset": pl.String(),
    "item_id": pl.String(),
    "video_id": pl.String(),
    "instruction": pl.String(),
    "raw_answer": pl.String(),
    "predicted_frames": pl.Int32(),
    "parse_status": pl.String(),
    "finished_at": pl.Datetime("us", "UTC"),
}
"""``predictions/``: the hybrid-frame predictor's answer per (predictor, dataset, item) (`engine.adaptive.predictions`)."""


@dataclass
class ResultRow:
    """One committed result: a model's answer to one item at one budget (or its error)."""

    sweep_id: str
    model_id: str
    model_family: str
    dataset: str
    dataset_version: str
    item_id: str
    video_id: str
    task_kind: str
    budget_id: str
    frames: int
    policy: str
    seed: int
    status: str = "ok"
    task_type: str | None = None
    category: str | None = None
    duration: str | None = None
    frames_sent: int | None = None
    max_pixels: int | None = None
    short_side: int | None = None
    min_pixels: int | None = None
    exact_pixels: int | None = None
    frame_indices: list[int] = field(default_factory=list)
    width: int | None = None
    height: int | None = None
    pixels_total: int | None = None
    pipeline: str = "raw"
    decoder: str | None = None
    decoder_version: str | None = None
    scoring: str | None = None
    media_uuid: str | None = None
    prompt_hash: str | None = None
    answer: str | None = None
    response: str | None = None
    pred: str | None = None
    pred_extracted: str | None = None
    """The benchmark's official text extraction of `response` (cross-check of `pred` in letter mode)."""
    correct: bool | None = None
    score: float | None = None
    confidence: float | None = None
    option_probs: list[float | None] | None = None
    letters_returned: int | None = None
    """MCQ: how many option letters had a log-probability where the distribution was read (below their number,
    `option_probs` are not renormalised and `confidence` is a lower bound: `engine.scoring.score_letters`)."""
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    decode_s: float | None = None
    engine_s: float | None = None
    error_type: str | None = None
    error: str | None = None
    error_kind: str | None = None
    """Error rows: `permanent` (the media or the item is at fault: missing, undecodable or too large media, a frame
    plan the video cannot satisfy; a rerun fails the same way until the media are fixed) or `transient` (the engine,
    the server, a timeout, the machine: a rerun retries it). Null on ok rows and on error rows from before it."""
    attempt: int = 1
    worker: str | None = None
    engine_version: str | None = None
    finished_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    frames_repeated: bool | None = None
    """The video had fewer frames than the budget and the policy repeated some (capped: frames_sent < frames)."""
    video_frames: int | None = None
    """Frames that really exist in the video (counted by demuxing)."""
    video_frames_declared: int | None = None
    """Frames the container declares (may lie)."""
    stage_path: list[str] | None = None
    """Cascade: the stage budgets visited, in order."""
    frames_processed: int | None = None
    """Cascade: frames the model processed over every visited stage."""
    frames_decoded: int | None = None
    """Cascade: unique frames decoded for this item (frames shared between stages counted once)."""
    media_kind: str | None = None
    """The item's media: image (one picture), video (a file or a folder of frames) or none (text-only data);
    the dataset's kind, never the budget's (an image item at a 16-frame budget is still an image)."""
    group_id: str | None = None
    """Items scored together (the two MME questions of an image, MMBench's rotations, Video-MME v2's groups)."""
    group_size: int | None = None
    """How many items the benchmark puts in this item's group, whatever rows exist (MME 2; MMBench one per option
    of the question, 1 without circular evaluation; Video-MME v2 4): a group with fewer answered rows is incomplete."""
    group_type: str | None = None
    """Video-MME v2: the group's type (relevance | logic); null for other benchmarks."""
    group_structure: str | None = None
    """Video-MME v2: the group's structure, e.g. ``[1,[2,3],4]`` (whitespace removed); null for other benchmarks."""
    answer_fingerprint: str | None = None
    """SHA-256 of everything that shapes this answer (checkpoint, family and template, output-changing engine
    settings, prompt and scoring, dataset settings and adapter version, the budget's protocol), the same for every
    row of one (model, dataset, budget); a rerun refuses to add rows to keys made another way
    (`engine.sweep.fingerprint`)."""
    score_detail: str | None = None
    """JSON of the benchmark's own per-document result for this answer, the input of its official aggregation
    (`engine.datasets._base.ItemScore.detail`: an lmms-eval task's `process_results` value of the metric the row is
    scored by); null for benchmarks whose official score reads the row's columns, and on rows from before it."""

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.model_id, self.dataset, self.item_id, self.budget_id)


assert {f.name for f in fields(ResultRow)} == set(RESULT_SCHEMA), "ResultRow and RESULT_SCHEMA disagree"
assert set(REDACTED_COLUMNS) <= set(RESULT_SCHEMA) - set(KEY_COLUMNS), "REDACTED_COLUMNS names a key or no column"


def rows_to_frame(rows: list[ResultRow]) -> pl.DataFrame:
    """Rows as a DataFrame with exactly the result schema, in schema column order; every registered secret
    is redacted from the texts of `REDACTED_COLUMNS`, whatever put it there."""
    if not rows:
        return pl.DataFrame(schema=RESULT_SCHEMA)
    # column by column from the attributes: `asdict` deep-copies every row's lists first (8x slower on rows of
    # 256 frame indices, on the driver's commit path)
    return redact_columns(pl.DataFrame({name: [getattr(r, name) for r in rows] for name in RESULT_SCHEMA},
                                       schema=RESULT_SCHEMA), REDACTED_COLUMNS)
