"""Resume integrity: a rerun adds rows only to a sweep whose committed answers were made the way the spec now asks.

Before any engine starts, every job the policy would run (committed ones included) gets its answer
fingerprint (`engine.sweep.fingerprint`), and every committed row is compared with the run:

- a committed key the run plans: its row's fingerprint against the one its job gets now;
- any other committed row of a (model, dataset, budget) the run plans (an item no longer selected, or
  renamed by a dataset setting such as the synthetic ``seed``): its fingerprint against those the cell
  can get now (any budget the cell plans, either decoder);
- a committed row of a (model, dataset, budget) the run does not plan: the fields it shares with the run
  (`field_scope`): the prompt always, its model's fields when the run has that model, its dataset's when
  the run has that dataset.

A difference stops the run (`AnswerMismatchError`, exit 2), naming each (model, dataset, budget) and each
changed field, old -> new, from the fields the manifest recorded for the old fingerprint. The rows' own
fingerprints are the authority: the manifest's fields only name the change, and count only where they hash
to the fingerprint the rows carry (a hand-edited ``answer_fields`` cannot make a changed prompt resume).
New models, datasets and budgets, item selectors and moved data folders resume: they change no field a
committed row shares with the run.

Two differences are not refusals: a ``checkpoint`` recorded as ``unresolved:<path>`` (a hub id not cached
then) that is a known content now, and rows written before fingerprints existed. Those take the
fingerprint the manifest recorded for their (model, dataset, budget), else one derived from the spec the
manifest recorded (with today's checkpoint, template and adapter version: the old ones are unknown),
and when the manifest has neither, they are adopted as made by this spec, with a warning.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.config import BudgetPoint, SpecError, dataset_id, parse_spec
from engine.items import Job
from engine.results.committed import Key
from engine.runtime.secrets import redact
from engine.sweep.fingerprint import AnswerPrints, field_scope, fingerprint, item_decoder

__all__ = ["AnswerMismatchError", "Cell", "check_resume"]

log = logging.getLogger(__name__)

Cell = tuple[str, str, str]
"""(model_id, dataset, budget_id)."""

_SHOWN = 20


class AnswerMismatchError(RuntimeError):
    """Committed keys were answered another way than the spec now asks (exit 2): the message names them."""


@dataclass
class _Differs:
    keys: int = 0
    example: Job | None = None
    changes: list[str] = field(default_factory=list)


_UNSET = object()


def _show(value: Any) -> str:
    if value is _UNSET:
        return "(unset)"
    text = redact(repr(value))
    return text if len(text) <= 80 else text[:77] + "..."


def changed_fields(old: dict[str, Any] | None, new: dict[str, Any], old_fp: str | None = None) -> list[str]:
    """`name: old -> new` for each field that differs (empty: the same answers); None `old`: not recorded."""
    if old is None:
        return [f"fingerprint {(old_fp or '?')[:12]} -> (its fields are not recorded in the manifest)"]
    out = []
    for k in sorted(set(old) | set(new)):
        a, b = old.get(k, _UNSET), new.get(k, _UNSET)
        if a == b:
            continue
        if k == "checkpoint" and str(a).startswith("unresolved:") and str(b).startswith("sha256:"):
            continue  # a hub id fetched since: its content could not be known then
        out.append(f"{k}: {_show(a)} -> {_show(b)}")
    return out


def check_resume(out_dir: str | Path, jobs: Iterable[Job], committed: dict[Key, str | None],
                 prints: AnswerPrints, manifest: dict[str, Any]) -> dict[Cell, set[str]]:
    """Compare every committed row with the way the run would answer it now (see the module docstring).

    Returns:
        The current fingerprints of each (model, dataset, budget) of `jobs` (for the manifest).

    Raises:
        AnswerMismatchError: naming every (model, dataset, budget) with keys answered another way.
    """
    plan = _Plan()
    differs: dict[tuple[Cell, str | None, str], _Differs] = defaultdict(_Differs)
    for job in jobs:
        fp = plan.add(job, prints)
        old = committed.get(tuple(job.key), fp)  # type: ignore[arg-type]
        if old != fp:
            d = differs[(plan.cell(job), old, fp)]
            d.keys += 1
            d.example = d.example or job
    refused: dict[Cell, _Differs] = {}
    adopted: dict[Cell, int] = defaultdict(int)
    for (cell, old, fp), d in differs.items():
        if old is None:
            changes = _legacy_changes(cell, fp, d.example, prints, manifest, adopted, d.keys)
        else:
            changes = _changes(manifest, old, prints.fields[fp])
        _refuse(refused, cell, d.keys, changes)
    for (cell, old), n in _unplanned(committed, plan.keys).items():
        _refuse(refused, cell, n, plan.changes(cell, old, prints, manifest))
    if adopted:
        log.warning("%d committed key(s) were written before answer fingerprints and %s records no spec for them; "
                    "they are taken as answered the way this spec asks: %s", sum(adopted.values()),
                    Path(out_dir) / "manifest.json", ", ".join("/".join(c) for c in sorted(adopted)[:_SHOWN]))
    if refused:
        raise AnswerMismatchError(_refusal(out_dir, refused))
    return dict(plan.now)


class _Plan:
    """The planned jobs as the check reads them: each cell's fingerprints and budgets, and the planned keys."""

    def __init__(self) -> None:
        self.now: dict[Cell, set[str]] = defaultdict(set)
        self.budgets: dict[Cell, dict[str, BudgetPoint]] = defaultdict(dict)
        self.keys: set[Key] = set()
        self._shared: dict[tuple[str, str], dict[str, Any]] | None = None

    @staticmethod
    def cell(job: Job) -> Cell:
        return job.model_id, job.item.dataset, job.budget.budget_id

    def add(self, job: Job, prints: AnswerPrints) -> str:
        fp = prints.of(job)
        cell = self.cell(job)
        self.now[cell].add(fp)
        self.budgets[cell].setdefault(fp, job.budget)
        self.keys.add(tuple(job.key))  # type: ignore[arg-type]
        return fp

    def changes(self, cell: Cell, old: str, prints: AnswerPrints, manifest: dict[str, Any]) -> list[str]:
        """How a committed row of `cell` that the run does not plan was answered otherwise ([]: it was not)."""
        if cell in self.now:
            return self._cell_changes(cell, old, prints, manifest)
        recorded = _verified(manifest, old)
        if recorded is None:  # its fields are not known: only a cell the run plans compares fingerprints alone
            return []
        model, dataset, _ = cell
        shared = self.shared(prints)
        now = {**shared.get(("sweep", ""), {}), **shared.get(("model", model), {}),
               **shared.get(("dataset", dataset), {})}
        scopes = {s for s, name in (("sweep", ""), ("model", model), ("dataset", dataset)) if (s, name) in shared}
        then = {k: v for k, v in recorded.items() if field_scope(k) in scopes}
        return changed_fields(then, now, old)

    def _cell_changes(self, cell: Cell, old: str, prints: AnswerPrints, manifest: dict[str, Any]) -> list[str]:
        if old in self.now[cell]:
            return []
        model, dataset, _ = cell
        decoders = sorted({prints.spec.decode.decoder, "pyav"})
        candidates = [prints.fields_for(model, dataset, b, None if b.is_text_only else dec)
                      for b in self.budgets[cell].values() for dec in decoders]
        if any(fingerprint(f) == old for f in candidates):
            return []  # an item of the other media kind (another decoder), or of another budget of the cell
        return min((_changes(manifest, old, f) for f in candidates), key=len)

    def shared(self, prints: AnswerPrints) -> dict[tuple[str, str], dict[str, Any]]:
        """The run's fields by what they belong to: ("sweep", ""), ("model", id), ("dataset", id)."""
        if self._shared is None:
            self._shared = {}
            for (model, dataset, _), fps in self.now.items():
                for k, v in prints.fields[next(iter(fps))].items():
                    scope = field_scope(k)
                    if scope != "budget":
                        name = {"sweep": "", "model": model, "dataset": dataset}[scope]
                        self._shared.setdefault((scope, name), {})[k] = v
        return self._shared


def _unplanned(committed: dict[Key, str | None], planned: set[Key]) -> dict[tuple[Cell, str], int]:
    """Committed keys with a fingerprint that the run does not plan, counted per (cell, fingerprint)."""
    out: dict[tuple[Cell, str], int] = defaultdict(int)
    for key, fp in committed.items():
        if fp is not None and key not in planned:
            model, dataset, _, budget = key
            out[((model, dataset, budget), fp)] += 1
    return out


def _refuse(refused: dict[Cell, _Differs], cell: Cell, keys: int, changes: list[str]) -> None:
    if changes:
        mine = refused.setdefault(cell, _Differs())
        mine.keys += keys
        mine.changes += [c for c in changes if c not in mine.changes]


def _verified(manifest: dict[str, Any], fp: str) -> dict[str, Any] | None:
    """The fields the manifest records for `fp`, if they are the ones it was made from (they hash to it)."""
    fields = manifest.get("answer_fields", {}).get(fp)
    return fields if fields is not None and fingerprint(fields) == fp else None


def _changes(manifest: dict[str, Any], old: str, new: dict[str, Any]) -> list[str]:
    """What changed from the committed fingerprint `old` to `new`'s fields; never empty when the manifest's fields
    for `old` are not the ones it was made from (edited: the row's fingerprint is the authority)."""
    recorded = manifest.get("answer_fields", {}).get(old)
    if recorded is not None and fingerprint(recorded) != old:
        return [f"fingerprint {old[:12]} -> {fingerprint(new)[:12]} (the fields the manifest records for it are "
                "not the ones it was made from: edited since)"]
    return changed_fields(recorded, new, old)


def _legacy_changes(cell: Cell, fp: str, job: Job | None, prints: AnswerPrints, manifest: dict[str, Any],
                    adopted: dict[Cell, int], n: int) -> list[str]:
    """Rows without a fingerprint: against the one recorded for their cell, else one derived from the spec the
    manifest recorded; neither: adopted (counted in `adopted`)."""
    model, dataset, budget = cell
    cell_fps = manifest.get("answer_fingerprints", {}).get(model, {}).get(dataset, {}).get(budget, [])
    if fp in cell_fps:
        return []
    if len(cell_fps) == 1:
        return _changes(manifest, cell_fps[0], prints.fields[fp])
    derived = _derived_fields(manifest.get("spec"), cell, job, prints) if job is not None else None
    if derived is None:
        adopted[cell] += n
        return []
    return changed_fields(derived, prints.fields[fp])


def _derived_fields(spec_doc: Any, cell: Cell, job: Job, prints: AnswerPrints) -> dict[str, Any] | None:
    """The fields `job`'s cell had under the spec the manifest recorded (None when it cannot be told)."""
    if not isinstance(spec_doc, dict):
        return None
    try:
        old = parse_spec(spec_doc, "the manifest's spec")
    except SpecError:
        return None
    model, dataset, budget_id = cell
    budget = next((b for b in old.budgets if b.budget_id == budget_id), None)
    if budget is None or model not in {m.id for m in old.models} or \
            dataset not in {dataset_id(d) for d in old.dataset_specs()}:
        return None
    now = prints.fields[prints.of(job)]
    then = AnswerPrints(old, {dataset: now.get("dataset.version")},  # the adapter's version then is not known
                        checkpoints=prints.checkpoints, templates=prints.templates)
    return then.fields_for(model, dataset, budget, None if budget.is_text_only else item_decoder(old, job.item))


def _refusal(out_dir: str | Path, refused: dict[Cell, _Differs]) -> str:
    n = sum(d.keys for d in refused.values())
    lines = [f"{out_dir}: {n} committed key(s) were answered another way than this spec asks, and resuming would "
             "mix the two in one sweep; use another --out directory (or restore the settings):"]
    for (model, dataset, budget), d in sorted(refused.items())[:_SHOWN]:
        lines.append(f"  model {model}, dataset {dataset}, budget {budget} ({d.keys} key(s)): "
                     + "; ".join(d.changes))
    if len(refused) > _SHOWN:
        lines.append(f"  ... and {len(refused) - _SHOWN} more (model, dataset, budget)")
    return "\n".join(lines)
