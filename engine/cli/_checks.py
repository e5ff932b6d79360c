"""Checks of the analysis commands' options before any work: every id an option names must be one the
results directory's rows carry (models, datasets, budgets, chains), listing the known ones, instead of an
empty or silently partial table; a file to write must not be a folder."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from engine.cli._console import fail
from engine.metrics.options import PolarsEngine

if TYPE_CHECKING:
    from engine.metrics.summary import SummaryOptions

__all__ = ["KnownIds", "PolarsEngine", "check_output", "known_ids", "refuse", "summary_problems", "unknown"]



@dataclass(frozen=True)
class KnownIds:
    """The ids a results directory's rows carry."""

    models: frozenset[str]
    datasets: frozenset[str]
    budgets: dict[str, int]
    """Grid budget id -> its frame count (adaptive rows, `pred-*` and cascade decisions, are no budget)."""
    protocols: frozenset[str]
    """The chains: protocol ids of the visual budgets (`default` where a model and dataset has only text)."""


def known_ids(rows: Any, engine: PolarsEngine = "auto") -> KnownIds:
    """The ids of `rows` (one row per key), in one pass over five columns."""
    import polars as pl

    from engine.metrics.grid import chain_rows

    ids = (chain_rows(rows).select("model_id", "dataset", "budget_id", "frames", "protocol_id").unique()
           .collect(engine=engine))
    budgets = ids.select("budget_id", "frames").unique()
    return KnownIds(
        models=frozenset(ids["model_id"].cast(pl.String).drop_nulls()),
        datasets=frozenset(ids["dataset"].cast(pl.String).drop_nulls()),
        budgets={b: int(f) for b, f in budgets.iter_rows() if b is not None and f is not None},
        protocols=frozenset(ids["protocol_id"].drop_nulls()),
    )


def unknown(option: str, names: Iterable[str], known: Iterable[str], what: str) -> list[str]:
    """One problem per name in `names` that is not in `known`, each listing the known ones."""
    have = sorted(known)
    listed = ", ".join(have) if have else "none"
    return [f"{option}: {n!r} is no {what} of these results; known: {listed}" for n in names if n not in have]


def _stage_problems(stages: tuple[str, ...], budgets: dict[str, int]) -> list[str]:
    problems = unknown("--cascade-stages", stages, budgets, "budget")
    if problems:
        return problems
    frames = [budgets[s] for s in stages]
    if any(b <= a for a, b in itertools.pairwise(frames)):
        shown = ", ".join(f"{s} ({n} frames)" for s, n in zip(stages, frames, strict=True))
        return [f"--cascade-stages {','.join(stages)}: stages go from fewer frames to more, each once; got {shown}"]
    return []


def summary_problems(opts: SummaryOptions, known: KnownIds) -> list[str]:
    """Every id in the metrics options (`--protocol`, `--pair`, `--cascade-*`, `--compare`) that the rows lack."""
    problems = unknown("--protocol", opts.protocols or (), known.protocols, "chain (protocol)")
    for a, b in opts.pairs or ():
        problems += unknown(f"--pair {a + ':' + b!r}", (a, b), known.budgets, "budget")
    if opts.cascade_stages:
        problems += _stage_problems(opts.cascade_stages, known.budgets)
    if opts.cascade_match is not None:
        problems += unknown("--cascade-match", [opts.cascade_match], known.budgets, "budget")
    if opts.compare is not None:
        problems += unknown("--compare", opts.compare, known.models, "model")
        if opts.compare[0] == opts.compare[1]:
            problems.append(f"--compare {':'.join(opts.compare)!r}: name two different models")
    return problems


def refuse(out_dir: Path, problems: list[str]) -> None:
    """With problems: print them under one line naming OUT, and exit 2."""
    if len(problems) == 1:
        fail(f"{out_dir}: {problems[0]}")
    elif problems:
        fail("\n".join([f"{out_dir}: {len(problems)} problems with the options for these results",
                        *(f"  {p}" for p in problems)]))
    if problems:
        raise typer.Exit(2)


def check_output(option: str, path: Path | None) -> None:
    """Exit 2 naming `option` when `path` cannot be written as a file: it is a folder, or a part of its
    folder is a file (checked before the work, which would end in an IsADirectoryError traceback)."""
    if path is None:
        return
    why = None
    if path.is_dir():
        why = "is a folder; give a file name"
    else:
        probe = path.parent
        while not probe.exists() and probe.parent != probe:
            probe = probe.parent
        if probe.exists() and not probe.is_dir():
            why = f"{probe} is a file, not a folder"
        elif probe.exists() and not os.access(probe, os.W_OK | os.X_OK):
            why = f"{probe} is not writable"
    if why:
        fail(f"{option} {path}: {why}")
        raise typer.Exit(2)
