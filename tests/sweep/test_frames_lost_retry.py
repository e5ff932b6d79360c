"""The retry after lost frames is a loop whose state is one object (`engine.sweep.retry.FramesLostRetry`): the jobs
whose rows say `FramesLostError` are decoded and asked again on their next attempt, until none is lost, the attempts
are spent or the run stops; the committed attempts the request step counts from are never changed.

Frames are lost when the node holding them dies (tests/e2e/test_two_nodes.py kills one for real); here the engine
is a stand-in that reports the loss on the first ask of one budget, the fault a live node cannot be made to show on
demand. Everything else (the items, the decode, the request step, the scoring) is the real pipeline, in this
process."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest
from helpers.metric_rows import row
from helpers.specs import small_spec_dict
from helpers.sure_results import SureEngine

from engine.backends.base import EngineRequest, EngineResult
from engine.config import BudgetPoint, parse_spec
from engine.datasets import load_items
from engine.frames.remote import FRAMES_LOST
from engine.items import Item, Job
from engine.sweep import Sweep
from engine.sweep.policy import GridPolicy
from engine.sweep.retry import FramesLostRetry


class LosingEngine(SureEngine):
    """Answers "A", except that the first ask of each job of budget `lose` reports its frames lost."""

    def __init__(self, lose: str) -> None:
        self.lose = lose
        self.asked: list[str] = []

    async def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        out = []
        for r in requests:
            job, budget, _ = r.request_id.rsplit("/", 2)
            first = f"{job}/{budget}" not in self.asked
            self.asked.append(f"{job}/{budget}")
            if budget == self.lose and first:
                out.append(EngineResult(r.request_id, error_type=FRAMES_LOST, error="the node holding them died"))
            else:
                out += await super().generate([r])
        return out


def _one_video(tmp_path: Path, **over: object) -> tuple[Sweep, list[Job], LosingEngine]:
    d = small_spec_dict(tmp_path / "out", **over)
    d["dataset"]["n_videos"] = 1
    spec = parse_spec(d)
    _, items = load_items(spec.dataset_specs()[0])
    (jobs,) = GridPolicy().plan(spec, items, set()).values()
    engine = LosingEngine("f4")
    return Sweep(spec, backends={"tiny": engine}), jobs, engine


def test_jobs_whose_frames_were_lost_are_decoded_and_asked_again_on_their_next_attempt(tmp_path: Path) -> None:
    sweep, jobs, engine = _one_video(tmp_path)
    rows = asyncio.run(sweep.answer(jobs))
    assert len(rows) == len(jobs) == 12 and {r.key for r in rows} == {tuple(j.key) for j in jobs}
    assert all(r.status == "ok" for r in rows)
    assert [r.attempt for r in rows if r.budget_id == "f4"] == [2, 2, 2]
    assert {r.attempt for r in rows if r.budget_id != "f4"} == {1}
    assert [r.budget_id for r in rows[-3:]] == ["f4"] * 3, "the redone jobs' rows follow the round's others"
    assert sweep.decoding.calls == 2, "one pass for the round, one for the lost frames"
    assert sum(a.endswith("/f4") for a in engine.asked) == 6
    assert sweep.requests.attempts == {}, "the committed attempts the request step counts from are unchanged"


def test_a_job_out_of_attempts_keeps_its_lost_row(tmp_path: Path) -> None:
    sweep, jobs, _ = _one_video(tmp_path, max_attempts=1)
    rows = asyncio.run(sweep.answer(jobs))
    lost = [r for r in rows if r.budget_id == "f4"]
    assert len(rows) == 12 and [(r.status, r.error_type, r.attempt) for r in lost] == [("error", FRAMES_LOST, 1)] * 3
    assert sweep.decoding.calls == 1


def _job(item_id: str) -> Job:
    item = Item(dataset="d", dataset_version="1", item_id=item_id, video_id="v", video_path=None, question="Q?",
                answer="A", kind="mcq")
    return Job("m", item, BudgetPoint(frames=4))


def _lost(item_id: str, attempt: int) -> object:
    return row("m", "d", item_id, "f4", 4, "e", error_type=FRAMES_LOST, attempt=attempt)


def test_the_loops_state_settles_each_try() -> None:
    """Kept rows accumulate in order, lost jobs with attempts left are pending on their next attempt, and the others
    keep their lost row."""
    a, b, c = _job("a"), _job("b"), _job("c")
    retry = FramesLostRetry([a, b, c], max_attempts=3)
    assert retry.attempt(a) is None
    ok_a = row("m", "d", "a", "f4", 4, "1")
    assert retry.settle([ok_a, _lost("b", 1), _lost("c", 2)]) == [b, c]
    assert (retry.rows, retry.attempt(b), retry.attempt(c), retry.redone) == ([ok_a], 2, 3, 1)
    last_c = _lost("c", 3)  # out of attempts: its row is kept
    ok_b = row("m", "d", "b", "f4", 4, "1", attempt=2)
    assert retry.settle([ok_b, last_c]) == [] and retry.pending == []
    assert retry.rows == [ok_a, ok_b, last_c] and retry.redone == 1


@pytest.mark.parametrize("stopping", [True, False])
def test_a_stopping_run_asks_nothing_again(stopping: bool) -> None:
    retry = FramesLostRetry([_job("a")], max_attempts=3)
    lost = _lost("a", 1)
    again = retry.settle([lost], stopping=stopping)
    if stopping:
        assert again == [] and retry.rows == [lost]
    else:
        assert [j.item.item_id for j in again] == ["a"] and retry.rows == [] and retry.attempt(again[0]) == 2
