"""The pipeline's request step: a round's jobs as job contexts and engine requests.

Each job's budget becomes a `MediaView` of its video: pixels (a view of a video decoded here, or fetched
here for a backend that needs them, e.g. an HTTP server, whose frames are encoded in this process) or a
reference to frames still in the object store (`FrameRef`, for an engine in the Ray cluster: frames then
go from decode actor to engine without entering this process). The model family packs it, video first; a model
with `prompt = "checkpoint_template"` gets the prompt its checkpoint's chat template writes for the same messages
(`engine.backends.chat_template`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from engine.backends.base import EngineRequest
from engine.backends.chat_template import CheckpointTemplate, checkpoint_template, default_system
from engine.backends.families import get_family
from engine.config import ModelSpec, SweepSpec
from engine.datasets.registry import JobPrompt
from engine.frames.decode import DecodeError
from engine.frames.plan import FramePlan
from engine.frames.resize import size_for
from engine.frames.view import MediaView, media_fingerprint, media_uuid
from engine.items import Item, Job
from engine.results.schema import ResultRow
from engine.sweep.decoding import Held, Video
from engine.sweep.fingerprint import AnswerPrints, item_decoder
from engine.sweep.rows import JobContext, error_row

__all__ = ["RequestBuilder"]


class RequestBuilder:
    """Job contexts and engine requests for one sweep.

    Attributes:
        attempts: Attempts already recorded per job key (a job's next attempt is one more).
        prints: Answer fingerprints of the sweep's jobs (None: none recorded).
        media_namespace: Prefix of the media uuids (see `engine.frames.view.media_uuid`); None: shared names.
        prompts: Per dataset, its adapter's prompt for one job (`engine.datasets.registry.JobPrompt`: Video-MME's
            subtitles at the frames sent); a dataset without one asks each item's own prompt.
    """

    def __init__(self, spec: SweepSpec) -> None:
        self.spec = spec
        self.models: dict[str, ModelSpec] = {m.id: m for m in spec.models}
        self.attempts: dict[tuple[str, str, str, str], int] = {}
        self.prints: AnswerPrints | None = None
        self.media_namespace: str | None = None
        self.prompts: dict[str, JobPrompt] = {}
        self._templates: dict[str, CheckpointTemplate] = {}

    def pipeline(self, job: Job) -> str:
        return job.budget.pipeline or self.spec.decode.pipeline

    def attempt(self, job: Job) -> int:
        """The job's next attempt after those committed."""
        return self.attempts.get(tuple(job.key), 0) + 1  # type: ignore[arg-type]

    def context(self, job: Job, decoded: Video | None, plan: FramePlan | None,
                attempt: int | None = None) -> JobContext:
        """What is recorded for `job` whatever its outcome (`plan` None: it failed before planning), on `attempt`
        (None: the next after those committed)."""
        indices = plan.indices if plan is not None else np.empty(0, dtype=np.int64)
        video = decoded.info if decoded is not None and indices.size else None
        width, height = size_for(video.width, video.height, job.budget) if video is not None else (None, None)
        return JobContext(
            job=job, model_family=self.models[job.model_id].family, indices=indices,
            attempt=attempt if attempt is not None else self.attempt(job),
            width=width, height=height, decoder=item_decoder(self.spec, job.item),
            decode_s=decoded.decode_s if video is not None and decoded is not None else None,
            pipeline="raw" if job.budget.is_text_only else self.pipeline(job),
            repeated=plan.repeated if plan is not None else None,
            video_frames=video.n_frames if video is not None else None,
            video_frames_declared=video.declared_frames if video is not None else None,
            answer_fingerprint=self.prints.of(job) if self.prints is not None else None)

    def media(self, ctx: JobContext, decoded: Video | None, by_ref: bool) -> MediaView | None:
        """The job's frames: by reference when `by_ref` and they are in the object store, else pixels. Made once
        per video, budget, frames and size (kept in the video's memo), whatever the question or model."""
        if decoded is None or not ctx.indices.size:
            return None
        item = ctx.job.item
        key = ("media", ctx.job.budget.budget_id, ctx.indices.tobytes(), ctx.width, ctx.height, by_ref,
               self.media_namespace, item.media_key, item.clip, item.media_kind, str(item.video_path))
        if key not in decoded.memo:
            decoded.memo[key] = self._media(ctx, decoded, by_ref)
        return decoded.memo[key]  # type: ignore[return-value]

    def _media(self, ctx: JobContext, decoded: Video, by_ref: bool) -> MediaView:
        size = (int(ctx.width), int(ctx.height))  # type: ignore[arg-type]
        frames, jpeg = decoded.budget(ctx.indices, size, by_ref=by_ref)
        item = ctx.job.item
        content = media_fingerprint(item.video_path, decoded.decoder, decoded.pipeline)  # the video: every budget's
        uuid = media_uuid(item.media_key, ctx.job.budget.budget_id, image=item.media_kind == "image", clip=item.clip,
                          namespace=self.media_namespace, content=content,
                          frames=media_fingerprint(None, ctx.indices, size))
        return MediaView(frames, ctx.indices, decoded.info.fps, decoded.info.n_frames, uuid, decoded.decoder,
                         jpeg_frames=jpeg)

    def build(self, model_id: str, ctxs: list[JobContext], held: Held,
              by_ref: bool) -> tuple[list[JobContext], list[ResultRow]]:
        """Each context with its request (`JobContext.sent`): the contexts ready to send, and the error rows of
        jobs whose frames do not exist (a permanent fault of the media)."""
        family = get_family(self.models[model_id].family)
        p = self.spec.prompt
        ready: list[JobContext] = []
        failed: list[ResultRow] = []
        for i, ctx in enumerate(ctxs):
            try:
                media = self.media(ctx, held.get(ctx.pipeline), by_ref)
            except DecodeError as err:  # a frame this job needs does not exist or did not decode
                failed.append(error_row(self.spec, ctx, type(err).__name__, str(err), kind="permanent"))
                continue
            asked = self.asked(ctx, media)
            request = family.build(f"{model_id}/{ctx.job.item.item_id}/{ctx.job.budget.budget_id}/{i}",
                                   asked, media, p.scoring, p.system_prompt, p.max_new_tokens)
            ready.append(ctx.sent(self.written(model_id, request, asked.system_prompt is None)))
        return ready, failed

    def written(self, model_id: str, request: EngineRequest, item_has_no_system: bool) -> EngineRequest:
        """`request` with the prompt its model asks in: the family's, or (`prompt = "checkpoint_template"`) the
        one its checkpoint's chat template writes for the request's messages; where neither the spec nor the item
        sets a system message (`item_has_no_system`), the template writes its own default, not the family's."""
        model = self.models[model_id]
        if model.prompt != "checkpoint_template":
            return request
        if model_id not in self._templates:  # found once per model: a hub id's folder is looked up in its cache
            self._templates[model_id] = checkpoint_template(model.path)
        defaulted = self.spec.prompt.system_prompt is None and item_has_no_system
        return self._templates[model_id].apply(request, default_system(model.family) if defaulted else "")

    def asked(self, ctx: JobContext, media: MediaView | None) -> Item:
        """The job's item as it is asked: with the prompt its adapter builds for the frames sent (`prompts`;
        a text-only job sends none), else as loaded. Both backends' requests (the prompt string and the chat
        messages) come from it."""
        item = ctx.job.item
        job_prompt = self.prompts.get(item.dataset)
        text = job_prompt(item, ctx.indices, media.video_fps if media is not None else None) if job_prompt else None
        return item if text is None else dataclasses.replace(item, prompt=text)
