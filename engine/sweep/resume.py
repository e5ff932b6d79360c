"""Resume integrity: a rerun adds rows only to keys answered the way the spec now asks.

Before any engine starts, every job the policy would run (committed ones included) gets its answer
fingerprint (`engine.sweep.fingerprint`), and each committed key's row is compared with it. A key
answered another way stops the run (`AnswerMismatchError`, exit 2), naming each (model, dataset,
budget) and each changed field, old -> new, from the fields the manifest recorded for the old
fingerprint. New models, datasets and budgets have no committed keys, so they resume.

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

from engine.config import SpecError, dataset_id, parse_spec
from engine.items import Job
from engine.runtime.secrets import redact
from engine.sweep.fingerprint import AnswerPrints, item_decoder

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


def check_resume(out_dir: str | Path, jobs: Iterable[Job], committed: dict[tuple[str, str, str, str], str | None],
                 prints: AnswerPrints, manifest: dict[str, Any]) -> dict[Cell, set[str]]:
    """Compare every committed key among `jobs` with the fingerprint it would get now.

    Returns:
        The current fingerprints of each (model, dataset, budget) of `jobs` (for the manifest).

    Raises:
        AnswerMismatchError: naming every (model, dataset, budget) with keys answered another way.
    """
    now: dict[Cell, set[str]] = defaultdict(set)
    differs: dict[tuple[Cell, str | None, str], _Differs] = defaultdict(_Differs)
    for job in jobs:
        fp = prints.of(job)
        cell = (job.model_id, job.item.dataset, job.budget.budget_id)
        now[cell].add(fp)
        old = committed.get(tuple(job.key), fp)  # type: ignore[arg-type]
        if old != fp:
            d = differs[(cell, old, fp)]
            d.keys += 1
            d.example = d.example or job
    recorded = manifest.get("answer_fields", {})
    refused: dict[Cell, _Differs] = {}
    adopted: dict[Cell, int] = defaultdict(int)
    for (cell, old, fp), d in differs.items():
        if old is None:
            d.changes = _legacy_changes(cell, fp, d.example, prints, manifest, adopted, d.keys)
        else:
            d.changes = changed_fields(recorded.get(old), prints.fields[fp], old)
        if d.changes:
            mine = refused.setdefault(cell, _Differs())
            mine.keys += d.keys
            mine.changes += [c for c in d.changes if c not in mine.changes]
    if adopted:
        log.warning("%d committed key(s) were written before answer fingerprints and %s records no spec for them; "
                    "they are taken as answered the way this spec asks: %s", sum(adopted.values()),
                    Path(out_dir) / "manifest.json", ", ".join("/".join(c) for c in sorted(adopted)[:_SHOWN]))
    if refused:
        raise AnswerMismatchError(_refusal(out_dir, refused))
    return dict(now)


def _legacy_changes(cell: Cell, fp: str, job: Job | None, prints: AnswerPrints, manifest: dict[str, Any],
                    adopted: dict[Cell, int], n: int) -> list[str]:
    """Rows without a fingerprint: against the one recorded for their cell, else one derived from the spec the
    manifest recorded; neither: adopted (counted in `adopted`)."""
    model, dataset, budget = cell
    cell_fps = manifest.get("answer_fingerprints", {}).get(model, {}).get(dataset, {}).get(budget, [])
    if fp in cell_fps:
        return []
    fields = manifest.get("answer_fields", {})
    if len(cell_fps) == 1:
        return changed_fields(fields.get(cell_fps[0]), prints.fields[fp], cell_fps[0])
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
