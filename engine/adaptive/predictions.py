"""The hybrid-frame predictor's data: answer parsing, the predictions table, the frame-count manifest.

A predictor model reads an instruction and answers how many frames it needs. The
online run (`engine.adaptive.predictor`) reads each answer (an option letter, an option's text held by
structured outputs, else free text parsed with `parse_frame_count`, the fallback) and commits
one row per (predictor, dataset, item) as Parquet shards under ``OUT/predictions/``
(schema `PREDICTION_SCHEMA`, written with `write_predictions`): the results directory's
``predictions`` table (`engine.results.tables.PREDICTIONS`), whose shards are named, written,
checked, compacted and quarantined as result shards are. Offline, the
predictions are scored against a finished sweep by
`engine.metrics.predictor.evaluate_predictor` and exported as a per-sample
frame-count manifest for video fine-tuning data by `export_manifest`.

Parse statuses (`PARSE_KINDS`): ``choice`` (the generated answer is one of the options' texts, as
structured outputs hold it: no parsing), ``exact`` (a number that is an allowed budget),
``snapped`` (a number snapped to the nearest allowed budget, ties to the cheaper),
``letter`` (an option letter, options A.. presented in `allowed` order), ``word``
(a number written in words), ``text_only`` (zero frames: "0", "none", "no frames",
"text only"), and ``unparsed: <reason>`` (no usable answer; frames None).
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from engine.metrics.predictor import evaluate_predictor, latest_predictions, predictor_document
from engine.results.schema import PREDICTION_KEY, PREDICTION_SCHEMA
from engine.results.store import scan_table
from engine.results.tables import PREDICTIONS, shard_name, write_shard
from engine.runtime.output import write_json_lines

__all__ = [
    "PARSE_KINDS",
    "PREDICTION_KEY",
    "PREDICTION_SCHEMA",
    "evaluate_predictor",
    "export_manifest",
    "latest_predictions",
    "parse_frame_count",
    "predictor_document",
    "scan_predictions",
    "write_predictions",
]

log = logging.getLogger(__name__)

PARSE_KINDS: tuple[str, ...] = ("choice", "exact", "snapped", "letter", "word", "text_only", "unparsed")

# --- parsing -----------------------------------------------------------------------------------

_UNITS = {w: i for i, w in enumerate([
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"])}
_TENS = {w: 10 * (i + 2) for i, w in enumerate(
    ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"])}
_SCALES = {"hundred": 100, "thousand": 1000}
_WORD = "|".join(sorted([*_UNITS, *_TENS, *_SCALES], key=len, reverse=True))
_WORD_RUN = re.compile(rf"\b(?:a\s+(?=hundred|thousand))?(?:{_WORD})(?:(?:\s+and\s+|[\s-]+)(?:{_WORD}))*\b")
_NUM = r"(?<![\w.])\d+(?:\.\d+)?(?=frames?\b|[^\w.]|\.(?!\d)|$)"
_NUM_RE = re.compile(_NUM)
# what may follow a number that names a frame count: more numbers ("32 or 64"), then "frames"
_ATTACHED = re.compile(rf"(?:\s*(?:-|\u2013|to|or|and|/|,)\s*{_NUM})*\s*-?\s*(?:[a-z]+\s+){{0,2}}?frames?\b")
_TEXT_ONLY = re.compile(
    r"\b(?:none|nothing|no\s+(?:video\s+|visual\s+)?frames?|no\s+(?:video|visuals?|visual\s+input)|"
    r"text[\s-]*only|only\s+(?:the\s+)?text|without\s+(?:any\s+|the\s+)?(?:video|frames?))\b")
_LETTER_ALONE = re.compile(r"^[(\[]?\s*([A-Za-z])\s*[)\]]?\s*[.:]?$")
_LETTER_LEAD = re.compile(r"^[(\[]?([A-Z])(?:[)\]]|[.:](?!\d))")
_LETTER_PHRASE = re.compile(
    r"\b(?i:answer|option|choice)(?:\s+(?i:is))?\s*[:\-]?\s*[(\[]?([A-Z])(?=[)\].:,;]|\s*$)")


def _word_numbers(run: str) -> list[int]:
    """The numbers in a run of number words ("one hundred and twenty-eight" -> [128]; "one two" -> [1, 2])."""
    out: list[int] = []
    total = current = 0
    started = False
    for tok in re.findall(r"[a-z]+", run):
        if tok in ("a", "and"):
            continue
        if tok in _SCALES:
            if tok == "hundred":
                current = max(current, 1) * 100
            else:
                total, current = total + max(current, 1) * 1000, 0
        else:
            v = _UNITS.get(tok, _TENS.get(tok, 0))
            small = current % 100
            # a unit completes a bare tens ("thirty two"); anything else after a set value starts a new number
            joins = small == 0 or (small % 10 == 0 and small >= 20 and v < 10)
            if started and not joins:
                out.append(total + current)
                total = current = 0
            current += v
        started = True
    out.append(total + current)
    return out


def _words_to_digits(text: str) -> str:
    return _WORD_RUN.sub(lambda m: " or ".join(str(n) for n in _word_numbers(m[0])), text)


def _snap(value: float, allowed: Sequence[int]) -> int:
    """The allowed budget nearest `value` (ties: the cheaper); a positive request never snaps to text-only."""
    if value == 0:
        return 0 if 0 in allowed else min(allowed)
    visual = [a for a in allowed if a > 0] or list(allowed)
    return min(visual, key=lambda a: (abs(a - value), a))


def _letter(raw: str, allowed: Sequence[int]) -> tuple[int | None, str] | None:
    m = _LETTER_ALONE.match(raw) or _LETTER_LEAD.match(raw) or _LETTER_PHRASE.search(raw)
    if m is None:
        return None
    i = ord(m[1].upper()) - ord("A")
    if i >= len(allowed):
        return None, f"unparsed: letter {m[1].upper()} is not an option (A-{chr(ord('A') + len(allowed) - 1)})"
    return allowed[i], "letter"


def _numbers(text: str) -> list[float]:
    """The frame counts a text names: numbers followed by "frames" if any, else every number."""
    found = [(float(m[0]), bool(_ATTACHED.match(text, m.end()))) for m in _NUM_RE.finditer(text)]
    attached = [v for v, a in found if a]
    return attached or [v for v, _ in found]


def parse_frame_count(raw: str | None, allowed: Sequence[int]) -> tuple[int | None, str]:
    """Parse a predictor's free-text answer into one of the grid's frame budgets.

    In order: an option letter ("B", "(B)", "B. 32 frames", "Answer: B"; options A.. in
    `allowed` order; the letter wins over a number beside it), numbers in digits (numbers
    followed by "frames" win over other numbers: "the clip is 120 s, so 32 frames" -> 32),
    numbers in words ("thirty-two"), then text-only phrases ("none", "no frames", "text
    only"). A number is snapped to the nearest allowed budget (ties to the cheaper; a
    positive count snaps among the visual budgets only); zero maps to 0 when 0 is allowed,
    else to the cheapest budget ("snapped"). Several different counts ("32 or 64 frames")
    are ambiguous.

    Args:
        raw: The model's answer.
        allowed: The grid's frame budgets, in the order the options were presented.

    Returns:
        (frames, status): status is one of `PARSE_KINDS`, ``"unparsed: <reason>"`` with
        frames None when nothing usable was found.

    Raises:
        ValueError: `allowed` is empty or holds a negative count.
    """
    if not allowed or min(allowed) < 0:
        raise ValueError(f"allowed frame budgets must be non-empty and >= 0, got {list(allowed)}")
    text = (raw or "").strip()
    if not text:
        return None, "unparsed: empty answer"
    letter = _letter(text, allowed)
    if letter is not None:
        return letter
    lower = text.lower()
    kind, values = "digits", _numbers(lower)
    if not values:
        kind, values = "word", _numbers(_words_to_digits(lower))
    if not values:
        if _TEXT_ONLY.search(lower):
            kind, values = "phrase", [0.0]
        else:
            return None, "unparsed: no frame count found"
    snapped = {_snap(v, allowed) for v in values}
    if len(snapped) > 1:
        return None, "unparsed: ambiguous (" + ", ".join(f"{v:g}" for v in sorted(set(values))) + ")"
    frames = snapped.pop()
    if all(v == 0 for v in values):
        return frames, "text_only" if 0 in allowed else "snapped"
    if kind == "word":
        return frames, "word"
    return frames, "exact" if all(v == frames for v in values) else "snapped"


# --- the predictions table -------------------------------------------------------------------------


def _prediction_dir(out_dir: Path) -> Path:
    return out_dir if out_dir.name == "predictions" and not (out_dir / "predictions").is_dir() else (
        out_dir / "predictions")


def scan_predictions(out_dir: str | Path) -> pl.LazyFrame:
    """Lazily scan every committed prediction under ``out_dir/predictions/`` (all attempts), each shard's footer
    checked first (`engine.results.store.scan_table`).

    `out_dir` may also be the ``predictions`` folder itself. Deduplicate with
    `latest_predictions`.

    Raises:
        CorruptShardError: naming each shard that does not read (a FIFO is named without being opened).
    """
    return scan_table(_prediction_dir(Path(out_dir)).parent, PREDICTIONS)


def _conform(predictions: pl.LazyFrame) -> pl.LazyFrame:
    """Exactly the columns of `PREDICTION_SCHEMA`, cast to it (a missing column is null)."""
    names = set(predictions.collect_schema().names())
    return predictions.select([pl.col(c).cast(t) if c in names else pl.lit(None, dtype=t).alias(c)
                               for c, t in PREDICTION_SCHEMA.items()])


def write_predictions(out_dir: str | Path, predictions: pl.DataFrame) -> Path | None:
    """Commit predictions as one shard under ``out_dir/predictions/`` (`engine.results.tables.write_shard`).

    Args:
        out_dir: The run's output directory.
        predictions: Rows with the columns of `PREDICTION_SCHEMA` (cast to it; missing ones null).

    Returns:
        The shard's path, or None when there was nothing to write.
    """
    if predictions.is_empty():
        return None
    frame = _conform(predictions.lazy()).collect()
    return write_shard(PREDICTIONS.dir(out_dir), shard_name(uuid.uuid4().hex[:8], 1), frame)


# --- the manifest ----------------------------------------------------------------------------------

_VIDEO_COLUMNS = ("video", "video_path", "video_id")


def _one_predictor(preds: pl.DataFrame, predictor_id: str | None) -> pl.DataFrame:
    if predictor_id is not None:
        return preds.filter(pl.col("predictor_id") == predictor_id)
    ids = preds["predictor_id"].unique().sort().to_list()
    if len(ids) > 1:
        raise ValueError(f"predictions hold several predictors {ids}; choose one with predictor_id")
    return preds


def export_manifest(predictions: pl.LazyFrame | pl.DataFrame, items_or_results: pl.LazyFrame | pl.DataFrame | None,
                    path: str | Path, *, predictor_id: str | None = None,
                    fallback_frames: int | None = None) -> int:
    """Write the per-sample frame-count manifest: one JSON object per line, atomically.

    Each line is ``{"id": "<dataset>/<item_id>", "video": ..., "instruction": ..., "frames": N}``,
    sorted by dataset and item id. The video is the item's ``video`` (or ``video_path``)
    from `items_or_results` when it has that column, else its ``video_id`` (results rows
    carry only ids), else the prediction's own ``video_id``. With `items_or_results`,
    only its items are exported.

    Args:
        predictions: The predictions table (deduplicated here with `latest_predictions`).
        items_or_results: Items or result rows with dataset, item_id and a video column; None:
            every prediction.
        path: The JSONL file to write (temp file + rename, so readers never see half of it).
        predictor_id: The predictor to export (required when the table holds several).
        fallback_frames: Frames for unparsed answers; None leaves them out.

    Returns:
        The number of lines written.
    """
    preds = _one_predictor(latest_predictions(_conform(predictions.lazy())).collect(), predictor_id)
    frames = pl.col("predicted_frames")
    preds = preds.select("dataset", "item_id", "video_id", "instruction",
                         (frames if fallback_frames is None else frames.fill_null(fallback_frames)).alias("frames"))
    if items_or_results is not None:
        items = items_or_results.lazy()
        names = items.collect_schema().names()
        column = next((c for c in _VIDEO_COLUMNS if c in names), None)
        video = pl.lit(None, dtype=pl.String) if column is None else pl.col(column).cast(pl.String)
        items_df = (items.select("dataset", "item_id", video.alias("_video"))
                    .unique(subset=["dataset", "item_id"], keep="first").collect())
        preds = preds.join(items_df, on=["dataset", "item_id"], how="inner").with_columns(
            pl.coalesce("_video", "video_id").alias("video_id"))
    dropped = preds["frames"].null_count()
    out = preds.drop_nulls("frames").sort("dataset", "item_id")
    if dropped:
        log.info("manifest leaves out %d unparsed predictions (no fallback_frames)", dropped)
    return write_json_lines(path, ({"id": f"{r['dataset']}/{r['item_id']}", "video": r["video_id"],
                                    "instruction": r["instruction"], "frames": int(r["frames"])}
                                   for r in out.iter_rows(named=True)))
