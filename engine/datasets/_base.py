"""What every file-backed adapter shares: load all rows, report problems, yield, score one answer."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from engine.datasets.errors import Problem, Problems
from engine.items import Item
from engine.scoring import extract_letter_videomme, token_f1

__all__ = ["BaseAdapter", "ItemScore", "Occurrences", "default_score", "first_groups", "whole_groups"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ItemScore:
    """One response scored by the benchmark's rule."""

    pred: str | None
    """The extracted answer (a letter, yes/no, or the stripped text); None when nothing was found."""
    correct: bool | None
    """Right or wrong for mcq / yesno; None for open and dialog items."""
    score: float
    """1.0 / 0.0 for mcq / yesno; token-F1 (max over references) for open and dialog items."""
    detail: str | None = None
    """JSON of the benchmark's own per-document result that gave this score, when its official score aggregates
    those results (an lmms-eval task's `process_results` value); None for every other benchmark."""


def default_score(item: Item, response: str) -> ItemScore:
    """The rule of a benchmark without one of its own: Video-MME's letter extraction (mcq), the
    first word (yes/no), token-F1 against the references (open answers)."""
    if item.kind == "mcq":
        pred = extract_letter_videomme(response, "".join(item.letters)) or None
        correct = pred is not None and pred == item.answer
        return ItemScore(pred, correct, float(correct))
    if item.kind == "yesno":
        pred = response.strip().split()[0].strip(".,").lower() if response.strip() else None
        correct = pred is not None and pred == (item.answer or "").lower()
        return ItemScore(pred, correct, float(correct))
    return ItemScore(response.strip(), None, token_f1(response, list(item.references) or [item.answer or ""]))


class BaseAdapter:
    """Base of the benchmark adapters: subclasses set `name`, `version` and implement `_load`.

    `items()` reads every annotation row first, so all problems are reported at once
    (see `engine.datasets.errors` for the policy), then yields the items in file order.
    `extract` and `score` apply the benchmark's official answer rule to one response.
    """

    name: str
    version: str

    def __init__(self, spec: Any) -> None:
        self.spec = spec
        self.problems: list[Problem] = []
        """Rows skipped by the last `items()` call (``strict = false``)."""

    def _load(self, problems: Problems) -> list[Item]:
        raise NotImplementedError

    def _source(self) -> str:
        """The annotation path problems of the whole set are reported against."""
        for attr in ("annotations", "annotation_dir", "annotation_root"):
            if hasattr(self.spec, attr):
                return str(getattr(self.spec, attr))
        return self.name

    def load(self) -> list[Item]:
        """Every valid item; raise `DatasetError` listing all problems (strict, or any fatal one)."""
        problems = Problems(self.name)
        items = self._load(problems)
        counts = Counter(it.item_id for it in items)
        for item_id in sorted(k for k, n in counts.items() if n > 1):
            problems.add(self._source(), None, f"item id appears {counts[item_id]} times", item_id=item_id)
        items = [it for it in items if counts[it.item_id] == 1]
        self.problems = problems.finish(self.spec.strict)
        return self._limit(items, self.spec.limit) if self.spec.limit else items

    def _limit(self, items: list[Item], limit: int) -> list[Item]:
        """The items `limit` keeps: the first `limit` (adapters whose items are scored in groups keep groups whole)."""
        return items[:limit]

    def items(self) -> Iterator[Item]:
        """Yield the benchmark's items (media paths resolved under the declared roots)."""
        yield from self.load()

    def extract(self, response: str, item: Item | None = None) -> str:
        """The benchmark's official answer extraction; "" when no answer is found."""
        return response.strip()

    def score(self, item: Item, response: str) -> ItemScore:
        """Score one response to `item` with the benchmark's rule."""
        if item.kind in ("mcq", "yesno"):
            pred = self.extract(response, item)
            correct = bool(pred) and pred.lower() == (item.answer or "").lower()
            return ItemScore(pred or None, correct, float(correct))
        pred = self.extract(response, item)
        refs = list(item.references) or ([item.answer] if item.answer else [])
        return ItemScore(pred, None, token_f1(pred, refs))


class Occurrences:
    """Stable ids for rows sharing a key (several questions over one video): ``key#0``, ``key#1``, ..."""

    def __init__(self) -> None:
        self._seen: Counter[str] = Counter()

    def next(self, key: str) -> str:
        k = self._seen[key]
        self._seen[key] += 1
        return f"{key}#{k}"


def whole_groups(items: list[Item], limit: int) -> list[Item]:
    """The first `limit` items and every other item of a group (`Item.group_id`) they start: a group is scored
    whole (an MME image's two questions), so half of one is no input (at least `limit` items, or all)."""
    started = {it.group_id for it in items[:limit] if it.group_id is not None}
    return [it for i, it in enumerate(items) if i < limit or it.group_id in started]


def first_groups(items: list[Item], limit: int) -> list[Item]:
    """Every item of the first `limit` groups (`Item.group_id`, in order of first appearance; an item without a
    group is a group of its own)."""
    def key(it: Item) -> str:
        return it.group_id if it.group_id is not None else f"\0{it.item_id}"

    order: dict[str, int] = {}
    for it in items:
        order.setdefault(key(it), len(order))
    return [it for it in items if order[key(it)] < limit]
