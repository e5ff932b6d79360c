"""The checkpoint study: which model is whose base, trained on how many frames, and its study-level views.

A study is a list of `Checkpoint`s: bases (no `base`) and fine-tuned checkpoints naming their
base, with the frames they were trained on (a count or ``"hybrid"``), architecture and size.
It comes from the run's spec (`[models.checkpoint]`, `study_from_spec`) or, as an override,
from model ids in order, the first the base of the others (`study_from_models`). A *family*
is a base and the checkpoints that name it; each checkpoint is measured against its own base
on the items its whole family answered (`engine.metrics.checkpoints.checkpoint_table`).

Views:
- `score_deltas`: every official score (`engine.metrics.benchmark_scores`) of a checkpoint
  beside its base's at the same dataset, budget, metric and subset (MME subtasks, POPE splits,
  MMBench l2-categories, ...); a headline's delta is also given on its full scale
  (``delta_scaled`` = delta / full scale: MME points / 2000 or 800, Video-MME v2 / 100,
  fractions as they are), so that benchmarks of different units can be averaged.
- `train_frames_view`: per fine-tuned checkpoint, video gain (macro mean over video datasets of
  each dataset's gain at its dearest budget) and image gain / loss (the same over image
  datasets, each at its image budget: `score_rows`), with its architecture, size and train
  frames: the study's frame-budget figure (gain and loss against train frames per architecture
  and size; hybrid beside the fixed counts).
  It reads any table of (checkpoint, dataset, budget) gains: the official headline deltas
  (`engine.metrics.checkpoint_official.official_cells`, the study's numbers) or the per-question
  accuracy gains of `engine.metrics.checkpoints.checkpoint_table` (`per_question`, with the
  items rescued and harmed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import polars as pl

from engine.datasets.spec import IMAGE_BUDGETS
from engine.metrics.benchmark_scores import full_scale

__all__ = ["NO_VIDEO", "STUDY_SCHEMA", "Checkpoint", "families", "frame_ceilings", "frames_label", "resolve_study",
           "score_budget", "score_deltas", "score_rows", "study_frame", "study_from_models", "study_from_spec",
           "study_records", "train_frames_view", "trap_verdict"]


@dataclass(frozen=True)
class Checkpoint:
    """One model of a checkpoint study (`engine.config.CheckpointSpec` as a plain value)."""

    model_id: str
    base: str | None = None
    train_frames: int | str | None = None
    size: str | None = None
    architecture: str | None = None
    label: str | None = None


STUDY_SCHEMA: dict[str, pl.DataType] = {
    "model_id": pl.String(), "order": pl.Int64(), "base_id": pl.String(), "train_frames": pl.String(),
    "train_frames_n": pl.Int64(), "size": pl.String(), "architecture": pl.String(), "label": pl.String(),
}


def study_from_models(models: Sequence[str]) -> list[Checkpoint]:
    """Model ids in order, the first the base of every other (no train frames known)."""
    models = list(models)
    if len(models) < 2 or len(set(models)) != len(models):
        raise ValueError(f"need two or more distinct models (the first is the base), got {models}")
    return [Checkpoint(models[0]), *(Checkpoint(m, base=models[0]) for m in models[1:])]


def study_from_spec(spec: Mapping[str, Any]) -> list[Checkpoint]:
    """The study a spec describes (the mapping a run's manifest stores): every model entry with a
    ``checkpoint`` table and every base one names, in the spec's order; architecture defaults to
    the entry's family."""
    entries = [m for m in spec.get("models") or [] if isinstance(m, dict)]
    named = {(m.get("checkpoint") or {}).get("base") for m in entries} - {None}
    out = []
    for m in entries:
        ck = m.get("checkpoint") or {}
        if not ck and m.get("id") not in named:
            continue
        out.append(Checkpoint(model_id=m["id"], base=ck.get("base"), train_frames=ck.get("train_frames"),
                              size=ck.get("size"), architecture=ck.get("architecture") or m.get("family"),
                              label=ck.get("label")))
    return out


def resolve_study(study: Sequence[Checkpoint] | Sequence[str]) -> list[Checkpoint]:
    """A checked study: ids (strings) become `study_from_models`; every base is in the study, and
    some checkpoint has a base."""
    if all(isinstance(c, str) for c in study):
        return study_from_models([str(c) for c in study])
    cks = [c for c in study if isinstance(c, Checkpoint)]
    ids = [c.model_id for c in cks]
    if len(set(ids)) != len(ids):
        raise ValueError(f"a model is listed twice in the study: {ids}")
    missing = sorted({c.base for c in cks if c.base is not None} - set(ids))
    if missing:
        raise ValueError(f"bases not in the study: {', '.join(missing)}")
    if not any(c.base is not None for c in cks):
        raise ValueError("no checkpoint names a base: give [models.checkpoint] base = ... in the spec, or --models")
    return cks


def families(study: Sequence[Checkpoint]) -> list[list[str]]:
    """Each base that some checkpoint names, followed by those checkpoints, in study order."""
    bases = [c.model_id for c in study if any(o.base == c.model_id for o in study)]
    return [[b, *(c.model_id for c in study if c.base == b)] for b in bases]


def study_frame(study: Sequence[Checkpoint]) -> pl.LazyFrame:
    """model_id, order (study position), base_id (null for a base), train_frames (as text: "16", "hybrid"),
    train_frames_n (null unless a count), size, architecture, label (default: the model id)."""
    recs = []
    for i, c in enumerate(study):
        tf = c.train_frames
        recs.append({"model_id": c.model_id, "order": i, "base_id": c.base,
                     "train_frames": None if tf is None else str(tf),
                     "train_frames_n": tf if isinstance(tf, int) and not isinstance(tf, bool) else None,
                     "size": c.size, "architecture": c.architecture, "label": c.label or c.model_id})
    return pl.LazyFrame(recs, schema=STUDY_SCHEMA)


def study_records(study: Sequence[Checkpoint]) -> list[dict[str, Any]]:
    """The study as JSON-ready records."""
    return [asdict(c) for c in study]


def _score_order() -> pl.Expr:
    """Where a dataset's score is read: the highest value of this per (checkpoint, dataset).

    A video dataset: its dearest budget (``rank``). An image dataset: its image budget (one frame: the
    image asked as one image; the raw `IMAGE_BUDGETS` one before a cached copy), else its dearest visual
    budget (an older sweep's video budgets, which sent the same image capped at their size), else text.
    """
    image = pl.col("kind") == "image"
    prefer = ((image & (pl.col("frames") > 0)).cast(pl.Int64) * 4 + (image & (pl.col("frames") == 1)).cast(pl.Int64)
              * 2 + (image & (pl.col("budget_id") == IMAGE_BUDGETS["raw"])).cast(pl.Int64))
    return prefer * 1_000_000 + pl.col("rank")


def score_budget(by: Sequence[str] = ("base_id", "model_id", "dataset")) -> pl.Expr:
    """True at the budget each dataset's score is read from, per `by` (`_score_order`: a video dataset's dearest
    budget, an image dataset's image budget), over rows with kind, frames, budget_id and rank."""
    order = _score_order()
    return order == order.max().over(list(by))


def score_rows(table: pl.LazyFrame, by: Sequence[str] = ("base_id", "model_id", "dataset")) -> pl.LazyFrame:
    """Rows of `table` at the budget each dataset's score is read from (`score_budget`)."""
    return table.filter(score_budget(by))


def _dearest(table: pl.LazyFrame, kind: str) -> pl.LazyFrame:
    """Per checkpoint and dataset of `kind`: the row at the budget its score is read from (`score_rows`)."""
    return score_rows(table.filter(pl.col("kind") == kind))


def train_frames_view(table: pl.LazyFrame, study: Sequence[Checkpoint]) -> pl.LazyFrame:
    """Video gain and image loss of every fine-tuned checkpoint, with its train frames (module docstring).

    Args:
        table: (model_id, base_id, dataset, kind, rank, gain) rows: `official_cells` (the headline) or
            `engine.metrics.checkpoints.checkpoint_table` output without a category split (per question;
            its accuracy, base accuracy, rescue and harm are then aggregated too).
        study: The study.

    Returns:
        architecture, size, train_frames, train_frames_n, model_id, label, base_id, n_video_datasets (datasets
        with a gain), video_frames (the most frames a video dataset's gain was read at: its dearest budget; a
        model whose base's chains end early, as LLaVA-1.5's at 4 frames, is read there), video_gain,
        n_image_datasets, image_gain, image_loss, trapped (video gained and image
        lost; null without one of the two); per question also video_accuracy, video_base_accuracy,
        video_rescue, video_harm (summed over the datasets) and their image counterparts; by architecture,
        size, train frames (fixed counts ascending, then hybrid, then others), order.
    """
    per_question = "rescue" in table.collect_schema()

    def side(kind: str) -> pl.LazyFrame:
        extra = [pl.col("accuracy").mean().alias(f"{kind}_accuracy"),
                 pl.col("base_accuracy").mean().alias(f"{kind}_base_accuracy"),
                 pl.col("rescue").sum().alias(f"{kind}_rescue"), pl.col("harm").sum().alias(f"{kind}_harm")]
        frames = [pl.col("frames").filter(pl.col("gain").is_not_null()).max().alias("video_frames")]
        return _dearest(table, kind).group_by("base_id", "model_id").agg(
            pl.col("gain").count().cast(pl.Int64).alias(f"n_{kind}_datasets"), pl.col("gain").mean().alias(
                f"{kind}_gain"), *(extra if per_question else []), *(frames if kind == "video" else []))

    loss = pl.when(pl.col("image_gain") == 0).then(pl.lit(0.0)).otherwise(-pl.col("image_gain"))
    tuned = study_frame(study).filter(pl.col("base_id").is_not_null())
    hybrid_last = pl.when(pl.col("train_frames_n").is_not_null()).then(pl.lit(0, pl.Int8)).when(
        pl.col("train_frames") == "hybrid").then(pl.lit(1, pl.Int8)).otherwise(pl.lit(2, pl.Int8))
    columns = (["n_video_datasets", "video_frames", "video_accuracy", "video_base_accuracy", "video_gain",
                "video_rescue", "video_harm", "n_image_datasets", "image_accuracy", "image_base_accuracy", "image_gain",
                "image_loss", "image_rescue", "image_harm"] if per_question else
               ["n_video_datasets", "video_frames", "video_gain", "n_image_datasets", "image_gain", "image_loss"])
    return (
        tuned.join(side("video"), on=["base_id", "model_id"], how="left")
        .join(side("image"), on=["base_id", "model_id"], how="left")
        .with_columns(pl.col("n_video_datasets", "n_image_datasets").fill_null(0), loss.alias("image_loss"),
                      ((pl.col("video_gain") > 0) & (pl.col("image_gain") < 0)).alias("trapped"))
        .sort([pl.col("architecture"), pl.col("size"), hybrid_last, pl.col("train_frames_n"), pl.col("order")],
              nulls_last=True)
        .select("architecture", "size", "train_frames", "train_frames_n", "model_id", "label", "base_id",
                *columns, "trapped")
    )


def score_deltas(scores: pl.LazyFrame, study: Sequence[Checkpoint]) -> pl.LazyFrame:
    """Each fine-tuned checkpoint's official scores beside its base's.

    Args:
        scores: `engine.metrics.benchmark_scores.benchmark_scores` output.
        study: The study.

    Returns:
        model_id, base_id, order, dataset, budget_id, metric, subset, headline, value, base_value, delta
        (value - base_value, in the score's own unit: MME in points, the others as fractions), scale (a
        headline's full scale: 2000 / 800 for the MME totals, 100 for Video-MME v2, else 1; null off the
        headline), delta_scaled (delta / scale), missing, base_missing (what a null MME total lacks); by
        order, dataset, budget, metric, subset.
    """
    keys = ["dataset", "budget_id", "metric", "subset"]
    tuned = study_frame(study).filter(pl.col("base_id").is_not_null()).select("model_id", "base_id", "order")
    base = scores.select(pl.col("model_id").alias("base_id"), *keys, pl.col("value").alias("base_value"),
                         pl.col("missing").alias("base_missing"))
    scale = pl.when(pl.col("headline")).then(
        pl.col("metric").replace_strict(full_scale(), default=1.0, return_dtype=pl.Float64))
    return (
        scores.join(tuned, on="model_id", how="inner")
        .join(base, on=["base_id", *keys], how="inner", nulls_equal=True)
        .with_columns((pl.col("value") - pl.col("base_value")).alias("delta"), scale.alias("scale"))
        .with_columns((pl.col("delta") / pl.col("scale")).alias("delta_scaled"))
        .select("model_id", "base_id", "order", *keys, "headline", "value", "base_value", "delta", "scale",
                "delta_scaled", "missing", "base_missing")
        .sort(["order", *keys], nulls_last=False)
    )


# --- how the study's tables label their rows (the report's and the terminal's) ---------------------------------

NO_VIDEO = "none (text only: no video)"
"""The trap verdict of a frames = 0 row: the video benchmarks asked without their video, so their "video gain" is
what the fine-tune changed in text-only answers, and video up / image down says nothing of video."""


def frames_label(frames: int | None) -> str:
    """A trap row's evaluated frame count as a table shows it: ``text only`` for 0 (no video was sent)."""
    return "text only" if frames == 0 else str(frames)


def trap_verdict(row: Mapping[str, Any]) -> str:
    """A trap row's verdict as a table shows it: ``yes`` (video gained, image lost), empty (not, or no image
    gain to weigh), `NO_VIDEO` at frames = 0 whatever its ``trapped`` (the value is kept in the document)."""
    if row.get("frames") == 0:
        return NO_VIDEO
    return "yes" if row.get("trapped") else ""


def frame_ceilings(rows: Iterable[Mapping[str, Any]], frames: str = "frames") -> dict[str, str]:
    """{model_id: note} for the checkpoints whose video benchmarks were read at fewer frames than the study's most
    (`frames`: a trap row's evaluated count, or a train-frames row's ``video_frames``): every checkpoint is read
    on its base's chains, and a base with a short context ends them early (LLaVA-1.5-7B: 4 frames), so its
    video gains are not at the others' frame counts."""
    most: dict[str, int] = {}
    for r in rows:
        if r.get(frames) is not None:
            most[r["model_id"]] = max(most.get(r["model_id"], 0), int(r[frames]))
    top = max(most.values(), default=0)
    return {m: f"video at {n} frames at most (its base's budgets end there; others up to {top})" if n else
            f"no video budget: text only (others up to {top} frames)" for m, n in most.items() if n < top}
