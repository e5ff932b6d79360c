"""Sweep-wide options: how questions are asked and scored, what the predictor may answer, how videos
are decoded and where results are committed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from engine.config.datasets import StrictModel


class PromptSpec(StrictModel):
    """How questions are asked and answers scored."""

    scoring: Literal["letter", "generate"] = Field(
        default="letter",
        description="letter: one constrained answer token with option-letter probabilities; "
        "generate: free greedy answer + official extraction.",
    )
    system_prompt: str | None = Field(default=None, description="System message; null uses the family default.")
    max_new_tokens: int = Field(default=16, ge=1, description="Token limit for `generate` scoring.")
    extraction: Literal["official", "strict", "lmms_eval"] = Field(
        default="official",
        description="How an MCQ option letter is read from generated text: official: the benchmark adapter's own "
        "rule; strict: a corrected reading (engine.scoring.extract_letter_videomme_strict); lmms_eval: lmms-eval "
        "0.7.x's extract_mcq_answer, for item-by-item comparison with lmms-eval logs. Recorded in `scoring`.",
    )

class PredictorSpec(StrictModel):
    """The hybrid-frame predictor (`framesweep predict`): what it may answer."""

    text_only_option: bool = Field(
        default=False,
        description="Offer 'no frames (text only)' among the predictor's options (when the grid has a "
        "text-only budget); false: the options are the grid's visual frame counts only.",
    )

class DecodeSpec(StrictModel):
    """How videos are decoded."""

    decoder: str = Field(default="pyav", description="Decoder name (see `engine.frames.decode.DECODERS`).")
    pipeline: Literal["raw", "cached"] = Field(
        default="raw",
        description="raw: decode the video files; cached: frames from the on-disk frame cache (decoded once, "
        "kept by video content hash, frame index and size), shared by later sweeps and models.",
    )
    cache_dir: Path | None = Field(default=None, description="Frame cache folder; null: <framesweep cache>/frames.")
    cache_format: Literal["jpeg", "png", "npy"] = Field(
        default="jpeg", description="How cached frames are stored: jpeg (q95, lossy) or png / npy (lossless)."
    )
    max_videos_in_flight: int = Field(default=4, ge=1, description="Videos decoded or being answered at once.")
    threads: int = Field(
        default=2, ge=1,
        description="Decode worker threads in this process; each decodes one video at a time on one core "
        "(pyav), so raise it (with max_videos_in_flight) on machines with more cores.")
    actors: int | None = Field(
        default=None, ge=0,
        description="CPU decode actors in the Ray cluster (spread over nodes); decoded frames travel through "
        "Ray's object store. 0: decode in this process's threads. null (auto): one per node when joining a "
        "cluster (ray_address / --address), threads in this process otherwise.",
    )
    actor_cpus: float = Field(default=1.0, gt=0, description="CPUs each decode actor reserves.")
    max_source_pixels: int | None = Field(
        default=7680 * 4320, gt=0,
        description="Largest stored frame (width x height) a video or image may have; a larger one is refused "
        "before any frame is decoded, its jobs error rows (error_kind permanent) naming the file and its size. "
        "Default: 8K UHD (33.2 MP, ~100 MB per RGB frame). null: no cap.")

class StoreSpec(StrictModel):
    """Where and how often results are committed."""

    out_dir: Path = Field(description="Results directory (relative paths are taken from the working directory).")
    commit_interval_s: float = Field(default=5.0, gt=0, description="Commit buffered rows at least this often.")
    max_buffered_rows: int = Field(default=512, ge=1, description="Commit once this many rows are buffered.")
