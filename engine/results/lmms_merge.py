"""One key, one answer: the rows of several imported logs merged, and checked against the directory.

Two logs that map to one key ``(model, dataset, item, budget)`` with the same answer are one row
(re-importing a log is a no-op); with different answers they are refused, naming both files, as
is a log that gives a key the directory already holds (ok) another answer. Refusals come before
anything is written.
"""

from __future__ import annotations

from pathlib import Path

from engine.results.directory import ResultsDir
from engine.results.schema import KEY_COLUMNS, ResultRow
from engine.runtime.secrets import redact

__all__ = ["ANSWER_COLUMNS", "Answer", "Held", "answer", "held_answers", "merge_rows", "new_rows"]

ANSWER_COLUMNS: tuple[str, ...] = ("status", "response", "pred", "correct", "score")
Answer = tuple[object, ...]
Key = tuple[str, str, str, str]


def answer(row: ResultRow) -> Answer:
    """What a row says about its key (`ANSWER_COLUMNS`), its texts redacted as a commit stores them."""
    return tuple(redact(v) if isinstance(v, str) else v for v in (getattr(row, c) for c in ANSWER_COLUMNS))


def _said(a: Answer) -> str:
    """An answer in a message: its pred and the start of its response (redacted, then cut)."""
    status, response, pred, *_ = a
    text = redact(str(response if response is not None else status))
    return f"pred {pred!r}, response {text[:60]!r}"


def _key(key: Key) -> str:
    return "(" + ", ".join(f"{c} {v!r}" for c, v in zip(KEY_COLUMNS, key, strict=True)) + ")"


def merge_rows(batches: list[tuple[Path, list[ResultRow]]]) -> tuple[list[tuple[ResultRow, Path]], int]:
    """The rows of every log, one per key, each with its file; and how many repeated a key with its answer.

    Raises:
        ValueError: Two logs give one key different answers (naming both files and the key).
    """
    seen: dict[Key, tuple[ResultRow, Path]] = {}
    duplicates = 0
    for path, rows in batches:
        for row in rows:
            first = seen.setdefault(row.key, (row, path))
            if first[0] is row:
                continue
            if answer(first[0]) != answer(row):
                raise ValueError(f"{first[1]} and {path} both give {_key(row.key)}, with different answers "
                                 f"({_said(answer(first[0]))} vs {_said(answer(row))}); import one of them, "
                                 "or tell them apart with --model-id, --dataset or --budget-id on separate imports")
            duplicates += 1
    return list(seen.values()), duplicates


Held = tuple[Answer, str | None]
"""A key's answer in the directory and how it was read (its ``scoring``: ``lmms-eval`` or ``lmms-eval:<rule>``)."""


def held_answers(out_dir: str | Path, sweep_id: str) -> dict[Key, Held]:
    """The answer the directory holds for each key of `sweep_id` (its ok row where it has one), with its scoring."""
    results = ResultsDir.open(out_dir, sweep_id=sweep_id)
    with results.reading():
        df = (results.rows()
              .select(*KEY_COLUMNS, *ANSWER_COLUMNS, "scoring").collect())
    n, m = len(KEY_COLUMNS), len(ANSWER_COLUMNS)
    return {r[:n]: (r[n:n + m], r[n + m]) for r in df.iter_rows()}  # type: ignore[misc]


def _reading(scoring: str | None) -> str:
    rule = (scoring or "lmms-eval").partition(":")[2]
    return f"--extraction {rule}" if rule else "lmms-eval's own parse"


def new_rows(rows: list[tuple[ResultRow, Path]], held: dict[Key, Held],
             out_dir: str | Path) -> list[tuple[ResultRow, Path]]:
    """The rows to write: keys the directory lacks, or holds only as an error.

    Raises:
        ValueError: A key the directory holds (ok) with another answer (naming the log and the directory); when
            the directory's answers were read by another rule (``--extraction``), saying so and how many answers
            the new reading would change.
    """
    fresh, changed = [], []
    for row, path in rows:
        have, scoring = held.get(row.key, (None, None))
        if have is None or (have[0] != "ok" and have != answer(row)):
            fresh.append((row, path))
        elif have != answer(row):
            changed.append((row, path, have, scoring))
    if not changed:
        return fresh
    row, path, have, scoring = changed[0]
    if scoring != row.scoring:
        raise ValueError(f"{out_dir} holds these logs' answers read by {_reading(scoring)}; reading them with "
                         f"{_reading(row.scoring)} would change {len(changed)} of {len(rows)} answers (e.g. "
                         f"{_key(row.key)}: {_said(have)} there vs {_said(answer(row))}); nothing was written. "
                         "Rows keep one reading per key: import into another --out to compare the two readings")
    raise ValueError(f"{path}: {out_dir} already holds {_key(row.key)} with another answer "
                     f"({_said(have)} there vs {_said(answer(row))}); import into another --out")
