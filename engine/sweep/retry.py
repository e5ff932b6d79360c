"""What the pipeline retries within one run, each with its state in one place.

- A round's jobs whose frames were lost with their node (`FramesLostRetry`): the scheduler's round is a loop over
  it, decoding and asking again the jobs whose rows say `FramesLostError`, each on its next attempt, until none is
  lost, its attempts are spent or the run stops. The committed attempts the request step reads are never changed:
  a redone job's attempt lives here.
- A batch whose engine died or hung (`generate_with_retries`): the engine is waited for (or restarted) and the
  batch sent again, each job's context on its next attempt (`JobContext.retried`).

Both stop at `max_attempts` attempts per job (recorded as `attempt` on the row); then the last error is the row.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from engine.backends.base import Backend, EngineRequest, EngineResult
from engine.backends.coalesce import CoalescingBackend
from engine.backends.warm import WarmEngineStoppedError
from engine.frames.remote import FRAMES_LOST
from engine.items import Job
from engine.results.schema import ResultRow
from engine.sweep.rows import JobContext

__all__ = ["FramesLostRetry", "generate_with_retries"]

log = logging.getLogger(__name__)

Key = tuple[str, ...]


def _key(job_or_row: Job | ResultRow) -> Key:
    return tuple(job_or_row.key)  # type: ignore[arg-type]


@dataclass
class FramesLostRetry:
    """One round's jobs through the retries after lost frames: what is left to ask, on which attempt, and the rows
    kept so far.

    Attributes:
        pending: The jobs to ask (first the round's jobs, then those whose frames were lost).
        max_attempts: Attempts a job may take in all (`SweepSpec.max_attempts`).
        attempts: The attempt each redone job is on (absent: its first attempt in this run).
        rows: The final rows so far, in the order they were settled.
        redone: How many times the round was asked again.
    """

    pending: list[Job]
    max_attempts: int
    attempts: dict[Key, int] = field(default_factory=dict)
    rows: list[ResultRow] = field(default_factory=list)
    redone: int = 0

    def attempt(self, job: Job) -> int | None:
        """The attempt `job` is on when it is asked again (None: as the request step counts it)."""
        return self.attempts.get(_key(job))

    def settle(self, rows: Sequence[ResultRow], stopping: bool = False) -> list[Job]:
        """Keep the rows of this try; returns the jobs to ask again: those whose frames were lost and that have
        attempts left (none once the run stops). Their lost rows are dropped, their next attempt recorded."""
        lost = {} if stopping else {_key(r): r for r in rows
                                    if r.error_type == FRAMES_LOST and r.attempt < self.max_attempts}
        self.rows += [r for r in rows if _key(r) not in lost]
        self.pending = [j for j in self.pending if _key(j) in lost]
        for j in self.pending:
            self.attempts[_key(j)] = lost[_key(j)].attempt + 1
        if self.pending:
            self.redone += 1
        return self.pending


async def generate_with_retries(backend: Backend, send: CoalescingBackend, ctxs: list[JobContext], max_attempts: int,
                                stopping: Callable[[], bool],
                                model_id: str) -> tuple[list[JobContext], list[EngineResult] | BaseException]:
    """Send the batch through `send` (the coalescing front of `backend`); if the engine dies, wait for it to come back
    (`backend.recover`) and send it again, up to `max_attempts` attempts per job.

    Returns:
        The contexts as last sent (each on the attempt that ended it) and the engine's results, or the error that
        ended the retries (the caller's error rows).

    Raises:
        WarmEngineStoppedError: `engines down` took the warm engine away (the run ends).
    """
    for n in range(max_attempts):
        requests: list[EngineRequest] = [c.request for c in ctxs]  # type: ignore[misc]
        try:
            return ctxs, await send.generate(requests)
        except WarmEngineStoppedError:
            raise  # `engines down` took the warm engine away: the run ends, committing what it has
        except Exception as err:  # noqa: BLE001 - engine death: recover and retry, then errors as data
            log.error("engine for %s failed (attempt %d of %d): %s: %s", model_id, n + 1, max_attempts,
                      type(err).__name__, err)
            if n + 1 >= max_attempts or stopping():
                return ctxs, err
            ctxs = [c.retried() for c in ctxs]
            try:
                await backend.recover()
            except Exception as rerr:  # noqa: BLE001
                log.error("engine for %s could not be recovered: %s", model_id, rerr)
                return ctxs, rerr
    raise AssertionError("unreachable")
