"""The score step: a job's context, and an engine's result (or a failure) as its result row.

`JobContext` is what was sent for one job, immutable: the request step builds it once
(`engine.sweep.requests.RequestBuilder.context`), sending it gives a new one with the request (`sent`), and a retry
after an engine died a new one with the next attempt (`retried`). `Scoring` is the one place a reply is scored:
the spec's rule (`prompt.scoring`, `prompt.extraction`) with each dataset's official rule plugged in (its adapter's
`score`, `engine.datasets.DatasetAdapter`), `default_score` for a dataset without one."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from engine.backends.base import EngineRequest, EngineResult
from engine.backends.prompts import prompt_hash
from engine.config import SweepSpec
from engine.datasets._base import ItemScore, default_score
from engine.frames.base import is_media_fault
from engine.frames.decode import decoder_version
from engine.items import Item, Job
from engine.results.schema import ResultRow
from engine.runtime.secrets import redact
from engine.scoring import AbsurdLogprob, checked_logprob, extract_letter, score_at_answer, score_letters

__all__ = ["ErrorKind", "JobContext", "Scorer", "Scoring", "error_kind", "error_row", "scored_row"]

ErrorKind = Literal["permanent", "transient"]
"""An error row's `error_kind`: permanent (the media or the item is at fault; a rerun fails the same way until they
are fixed) or transient (the engine, the server, a timeout, the machine; a rerun retries it)."""


@dataclass(frozen=True, kw_only=True, eq=False)  # compared by identity: it holds arrays
class JobContext:
    """What was sent for one job (recorded on its row whatever the outcome); immutable, built by keyword."""

    job: Job
    model_family: str
    indices: np.ndarray
    """The frames sent (empty: none, or the job failed before planning)."""
    attempt: int
    width: int | None = None
    height: int | None = None
    decoder: str | None = None
    decode_s: float | None = None
    pipeline: str = "raw"
    request: EngineRequest | None = None
    """Set by the request step (`sent`); None for a job that failed before it."""
    repeated: bool | None = None
    video_frames: int | None = None
    video_frames_declared: int | None = None
    answer_fingerprint: str | None = None
    """How the answer is made (`engine.sweep.fingerprint`)."""

    def sent(self, request: EngineRequest) -> JobContext:
        """This job with the request the request step built for it."""
        return replace(self, request=request)

    def retried(self) -> JobContext:
        """This job on its next attempt (its engine died and came back)."""
        return replace(self, attempt=self.attempt + 1)


def row_media_kind(media_kind: str) -> str:
    """An item's media as a row records it: image, video (a file or a folder of frames) or none."""
    return "video" if media_kind == "frames" else media_kind


def _base(spec: SweepSpec, ctx: JobContext) -> ResultRow:
    job, item, b = ctx.job, ctx.job.item, ctx.job.budget
    n = int(ctx.indices.size)
    return ResultRow(
        sweep_id=spec.sweep_id,
        model_id=job.model_id,
        model_family=ctx.model_family,
        dataset=item.dataset,
        dataset_version=item.dataset_version,
        item_id=item.item_id,
        video_id=item.video_id,
        task_kind=item.kind,
        task_type=item.task_type,
        category=item.category,
        duration=item.duration,
        budget_id=b.budget_id,
        frames=b.frames,
        frames_sent=n,
        max_pixels=b.max_pixels,
        short_side=b.short_side,
        min_pixels=b.min_pixels,
        exact_pixels=b.exact_pixels,
        policy=b.policy,
        seed=b.seed,
        frame_indices=[int(i) for i in ctx.indices],
        width=ctx.width if n else None,
        height=ctx.height if n else None,
        pixels_total=n * (ctx.width or 0) * (ctx.height or 0) if n else 0,
        pipeline=ctx.pipeline,
        decoder=ctx.decoder if n else None,
        decoder_version=decoder_version(ctx.decoder) if n and ctx.decoder else None,
        scoring=spec.prompt.scoring if spec.prompt.extraction == "official" else
        f"{spec.prompt.scoring}:{spec.prompt.extraction}",
        media_uuid=ctx.request.media_uuid if ctx.request else None,
        prompt_hash=prompt_hash(ctx.request.prompt, ctx.request.media_uuid) if ctx.request else None,
        answer=item.answer,
        decode_s=ctx.decode_s,
        attempt=ctx.attempt,
        frames_repeated=ctx.repeated if n else None,
        video_frames=ctx.video_frames,
        video_frames_declared=ctx.video_frames_declared,
        media_kind=row_media_kind(item.media_kind),
        group_id=item.group_id,
        group_size=item.extra.get("group_size"),
        group_type=item.extra.get("group_type"),
        group_structure=item.extra.get("group_structure"),
        answer_fingerprint=ctx.answer_fingerprint,
    )


def error_kind(err: BaseException) -> ErrorKind:
    """What a failure before the engine was asked says about a rerun: the media's own fault (missing, undecodable,
    too large: `engine.frames.base.is_media_fault`) or a frame plan the video cannot satisfy (ValueError) is
    permanent; anything else (an I/O error, memory, a dead worker) transient."""
    return "permanent" if is_media_fault(err) or isinstance(err, ValueError) else "transient"


def error_row(spec: SweepSpec, ctx: JobContext, error_type: str, message: str, worker: str | None = None, *,
              kind: ErrorKind = "transient") -> ResultRow:
    """A job that failed: kept as data, retried by a rerun (a permanent one fails again until its media are fixed)."""
    row = _base(spec, ctx)
    row.status, row.error_type, row.error, row.worker = "error", error_type, redact(message)[:2000], worker
    row.error_kind = kind
    return row


Scorer = Callable[[Item, str], ItemScore]
"""An adapter's `score(item, response) -> ItemScore(pred, correct, score)` (the benchmark's official rule)."""


class Scoring:
    """The score step of one sweep: every reply is scored here (see the module docstring).

    Args:
        spec: The sweep (its `prompt.scoring` and `prompt.extraction` rules).
        rules: Per dataset, its adapter's official rule (`DatasetAdapter.score`); any other dataset is scored by
            `default_score`.
    """

    def __init__(self, spec: SweepSpec, rules: Mapping[str, Scorer] | None = None) -> None:
        self.spec = spec
        self.rules: dict[str, Scorer] = dict(rules or {})

    def rule(self, dataset: str) -> Scorer:
        """The official rule of `dataset`'s items."""
        return self.rules.get(dataset, default_score)

    def row(self, ctx: JobContext, res: EngineResult) -> ResultRow:
        """The row of one engine result: scored, or an error row (`scored_row`)."""
        return scored_row(self.spec, ctx, res, self.rule(ctx.job.item.dataset))

    def failed(self, ctx: JobContext, err: BaseException) -> ResultRow:
        """The row of a job whose engine could not answer (a transient error row: a rerun retries it)."""
        return error_row(self.spec, ctx, type(err).__name__, str(err))


def _judge(spec: SweepSpec, item: Item, text: str, scorer: Scorer) -> ItemScore:
    """The adapter's official rule, or for MCQ items the spec's extraction rule (`prompt.extraction`)."""
    rule = spec.prompt.extraction
    if rule == "official" or item.kind != "mcq":
        return scorer(item, text)
    pred = extract_letter(text, "".join(item.letters), rule) or None
    correct = pred is not None and pred == item.answer
    return ItemScore(pred, correct, float(correct))


def scored_row(spec: SweepSpec, ctx: JobContext, res: EngineResult, scorer: Scorer) -> ResultRow:
    """Score an engine result against the item's answer.

    MCQ in `letter` mode: prediction = the most probable option letter (the extraction rule's
    reading of the text is kept as `pred_extracted`). Otherwise the dataset adapter's official
    rule (`scorer`, see `engine.datasets.DatasetAdapter.score`), or for MCQ items the spec's
    `prompt.extraction` rule, reads the generated text; an MCQ item's confidence is then the
    renormalised probability of the *extracted* letter at the answer position (the token spelling
    it where the rule read it; `engine.scoring.score_at_answer`), null when no letter was extracted.

    A reply that cannot be scored fails its own row only, never the run: a log-probability that is no
    log-probability (`AbsurdLogprob`: NaN, +inf, above 0, not a number) or any other value the row cannot
    hold becomes an error row naming it.
    """
    if not res.ok:
        return error_row(spec, ctx, res.error_type or "EngineError", res.error or "", res.worker)
    item = ctx.job.item
    letter_mode = ctx.request is not None and ctx.request.mode == "letter"
    if item.kind == "mcq" and letter_mode and not res.letter_logprobs:
        # without the letters' distribution there is no prediction: an error row (retried by a rerun), never a
        # silently wrong `ok` row
        return error_row(spec, ctx, "NoLetterLogprobs", "the engine returned no log-probability for any option "
                         f"letter ({', '.join(item.letters)}) at the first answer token", res.worker)
    try:
        return _scored(spec, ctx, res, scorer, letter_mode)
    except AbsurdLogprob as err:
        return error_row(spec, ctx, "AbsurdLogprob", f"the engine's reply cannot be scored: {err}", res.worker)
    except (ArithmeticError, ValueError, TypeError) as err:  # e.g. a count the row cannot hold
        return error_row(spec, ctx, type(err).__name__, f"the engine's reply cannot be scored: {err}", res.worker)


def _count(value: object, what: str) -> int | None:
    """A token count as a row holds it (None: not reported); ValueError for anything but a whole number >= 0 that
    fits the column (Int32)."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31):
        return value  # type: ignore[return-value]
    raise ValueError(f"its {what} token count {repr(value)[:40]} is not a whole number in [0, 2**31)")


def _scored(spec: SweepSpec, ctx: JobContext, res: EngineResult, scorer: Scorer, letter_mode: bool) -> ResultRow:
    """The ok row of a reply (`scored_row`); raises when the reply holds a value that cannot be scored."""
    item = ctx.job.item
    row = _base(spec, ctx)
    if not isinstance(res.text, str):
        raise TypeError(f"its text is a {type(res.text).__name__}, not a string")
    row.response = redact(res.text)
    row.prompt_tokens, row.output_tokens = _count(res.prompt_tokens, "prompt"), _count(res.output_tokens, "output")
    row.engine_s, row.worker, row.engine_version = res.engine_s, res.worker, res.engine_version
    judged = _judge(spec, item, res.text, scorer)
    if item.kind == "mcq" and letter_mode:
        ls = score_letters(item.letters, res.letter_logprobs)
        row.option_probs, row.confidence, row.letters_returned = ls.probs, ls.confidence, ls.returned
        row.pred_extracted = judged.pred or None
        row.pred = ls.pred
        row.correct = row.pred is not None and row.pred == item.answer
        row.score = float(row.correct)
        # the benchmark's per-document result follows the row's prediction: its rule on the chosen letter
        row.score_detail = scorer(item, ls.pred).detail if judged.detail is not None and ls.pred else None
        return row
    row.pred, row.correct, row.score = judged.pred or None, judged.correct, float(judged.score)
    row.score_detail = judged.detail
    if item.kind == "mcq":
        row.pred_extracted = row.pred
        at = score_at_answer(list(item.letters), row.pred, res.token_letters, text=res.text,
                             read=lambda t: _judge(spec, item, t, scorer).pred or None)
        if at is not None:
            row.option_probs, row.confidence, row.letters_returned = at.probs, at.confidence, at.returned
    elif res.mean_logprob is not None:
        row.confidence = math.exp(checked_logprob(res.mean_logprob, "the mean log-probability of the answer"))
    return row
