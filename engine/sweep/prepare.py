"""A run's start, between taking the results directory's lock and starting any engine.

Load the items, read what is committed (one pass), refuse a resume whose committed answers were made
another way (`engine.sweep.resume`), plan the pending jobs and record the plan in the manifest
(`engine.sweep.record`). Nothing here starts Ray or an engine: a run with nothing pending ends
without either.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path

from engine.config import SweepSpec, dataset_id
from engine.datasets import load_items
from engine.datasets.registry import JobPrompt
from engine.items import Item, Job
from engine.results.committed import Key, read_committed
from engine.results.directory import ResultsDir
from engine.results.store import ResultStore
from engine.sweep.fingerprint import AnswerPrints
from engine.sweep.policy import GridPolicy, JobPolicy
from engine.sweep.record import manifest_doc
from engine.sweep.resume import check_resume
from engine.sweep.rows import Scorer

__all__ = ["Prepared", "prepare"]

log = logging.getLogger(__name__)


@dataclass
class Prepared:
    """What a run knows once its plan is recorded."""

    items: list[Item]
    jobs: dict[str, list[Job]]
    """Pending jobs grouped by video."""
    prints: AnswerPrints
    scorers: dict[str, Scorer] = field(default_factory=dict)
    prompts: dict[str, JobPrompt] = field(default_factory=dict)
    """Per dataset, its adapter's prompt for one job (adapters whose prompt depends on the frames sent)."""
    attempts: dict[Key, int] = field(default_factory=dict)
    committed: int = 0
    foreign: list[Path] = field(default_factory=list)
    results: ResultsDir | None = None
    """The results directory as the run opened it (its one open: the run's ending reads it relisted)."""

    @property
    def pending(self) -> int:
        return sum(len(v) for v in self.jobs.values())


async def _load(spec: SweepSpec) -> tuple[dict[str, list[Item]], dict[str, str | None], dict[str, Scorer],
                                         dict[str, JobPrompt]]:
    per_dataset: dict[str, list[Item]] = {}
    versions: dict[str, str | None] = {}
    scorers: dict[str, Scorer] = {}
    prompts: dict[str, JobPrompt] = {}
    for ds in spec.dataset_specs():
        adapter, ds_items = await asyncio.to_thread(load_items, ds)
        per_dataset[dataset_id(ds)] = ds_items
        versions[dataset_id(ds)] = getattr(adapter, "version", None)
        scorers.update({it.dataset: adapter.score for it in ds_items[:1]})
        if (job_prompt := getattr(adapter, "job_prompt", None)) is not None:
            prompts[dataset_id(ds)] = job_prompt
    return per_dataset, versions, scorers, prompts


async def prepare(spec: SweepSpec, policy: JobPolicy, store: ResultStore) -> Prepared:
    """Items, the resume check, the pending jobs, and the manifest written (the store's lock is held).

    Raises:
        ForeignSweepError: the directory holds another sweep.
        AnswerMismatchError: committed keys were answered another way than `spec` asks.
        ManifestError, CorruptShardError: an unreadable manifest or shard, named.
    """
    results = ResultsDir.open(store.out_dir, sweep_id=spec.sweep_id)  # the one reader: each footer checked once
    manifest = results.manifest
    store.check_sweep(spec.sweep_id, manifest)
    per_dataset, versions, scorers, prompts = await _load(spec)
    items = [it for ds_items in per_dataset.values() for it in ds_items]
    committed = await asyncio.to_thread(read_committed, results)
    if committed.foreign:
        log.warning("%d shard(s) in %s hold rows of another sweep; they are ignored (not done): %s",
                    len(committed.foreign), store.results_dir, ", ".join(p.name for p in committed.foreign[:5]))
    prints = AnswerPrints(spec, versions)
    everything = policy.plan(spec, items, set())
    cells = await asyncio.to_thread(check_resume, store.out_dir, (j for v in everything.values() for j in v),
                                    committed.fingerprints, prints, manifest)
    ready = Prepared(items, policy.plan(spec, items, committed.done), prints, scorers, prompts, committed.attempts,
                     len(committed.done), committed.foreign, results)
    expected = {ds: {m: dict(per) for m, per in policy.expected(spec, ds_items).items()}
                for ds, ds_items in per_dataset.items()}
    store.write_manifest(manifest_doc(
        manifest, spec, policy=type(policy).__name__, grid=isinstance(policy, GridPolicy), datasets=list(per_dataset),
        expected=expected, cells=cells, fields=prints.fields, pending=ready.pending, committed=ready.committed))
    return ready
